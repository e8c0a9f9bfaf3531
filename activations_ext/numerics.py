"""SELU's constants, float64 references, and the ulp error of every op, measured over SELU's whole range."""

from collections.abc import Callable

import torch

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def selu_reference(x: torch.Tensor) -> torch.Tensor:
    """SELU in float64, with ``expm1`` on the negative branch."""
    x = x.double()
    return torch.where(x > 0, SELU_SCALE * x, SELU_SCALE * SELU_ALPHA * torch.expm1(x))


def ulp_error(
    actual: torch.Tensor, expected64: torch.Tensor, dtype: torch.dtype, scale: torch.Tensor | None = None
) -> torch.Tensor:
    """|actual - expected| in units of ``dtype``'s spacing at the expected value (subnormal spacing below it),
    or at ``scale`` where that is larger: the size of the terms a result cancels from."""
    expected = expected64.to(dtype).double().abs()
    if scale is not None:
        expected = torch.maximum(expected, scale.to(dtype).double().abs())
    finfo = torch.finfo(dtype)
    binade = torch.exp2(torch.floor(torch.log2(expected.clamp_min(finfo.tiny))))
    return (actual.double() - expected64).abs() / (binade * finfo.eps)


def whole_range_inputs() -> torch.Tensor:
    """float32 inputs over SELU's whole range: both branches, the tiny negatives where ``expm1`` matters
    (1e-12 to 1e-3), saturation below -88, and subnormals."""
    return torch.cat(
        [
            torch.linspace(-120, 90, 200_001, dtype=torch.float64),
            -torch.logspace(-12, -3, 20_001, dtype=torch.float64),
            torch.logspace(-12, -3, 1_001, dtype=torch.float64),
            -torch.logspace(-44, -38, 101, dtype=torch.float64),
        ]
    ).float()


# The bounds every table entry meets, in ulps: float32/float64 SELU within 2 (expm1's error), the 16-bit
# types within one rounding of the float32 result, ReLU exact.
ULP_BOUNDS = {
    dtype: {
        "selu": 1.0 if dtype.itemsize == 2 else 2.0,
        "selu_backward": 1.0 if dtype.itemsize == 2 else 2.0,
        "relu": 0.0,
        "relu_backward": 0.0,
    }
    for dtype in DTYPES
}


def ulp_table_violations(table: dict[torch.dtype, dict[str, float]]) -> list[str]:
    """The entries of a ``max_ulp_errors`` table above ``ULP_BOUNDS``, as readable lines (none when it passes)."""
    return [
        f"{op} {dtype}: {error:.3f} ulp (bound {ULP_BOUNDS[dtype][op]})"
        for dtype, errors in table.items()
        for op, error in errors.items()
        if not error <= ULP_BOUNDS[dtype][op]
    ]


def eager_forward(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(selu(x), relu(x)) by the act ops."""
    return torch.ops.act.selu(x), torch.ops.act.relu(x)


def eager_backward(grad: torch.Tensor, selu: torch.Tensor, relu: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(selu_backward(grad, selu), relu_backward(grad, relu)) by the act ops."""
    return torch.ops.act.selu_backward(grad, selu), torch.ops.act.relu_backward(grad, relu)


def max_ulp_errors(
    device: torch.device,
    forward: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]] = eager_forward,
    backward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] = eager_backward,
) -> dict[torch.dtype, dict[str, float]]:
    """Per dtype, each op's largest error in ulps of that dtype against float64 math on the same inputs.

    The inputs are ``whole_range_inputs`` rounded to the dtype; the backward ops take gradients in
    [0.5, 1.5) and the forward results (rounded, as autograd saves them). ``selu_backward`` is measured
    in ulps of ``grad * alpha * scale``: near saturation it cancels the result against that constant,
    as torch's own ``elu_backward`` does, and no rounding of its operands can do better. ``forward`` and
    ``backward`` compute the ops (e.g. compiled versions of ``eager_forward`` and ``eager_backward``).
    """
    table = {}
    for dtype in DTYPES:
        x = whole_range_inputs().to(dtype).unique().to(device)
        grad = torch.rand(x.shape, generator=torch.Generator().manual_seed(0)).add(0.5).to(dtype).to(device)
        selu, relu = forward(x)
        selu_backward, relu_backward = backward(grad, selu, relu)
        g, s, r = grad.double().cpu(), selu.double().cpu(), relu.double().cpu()
        cases = {
            "selu": (selu, selu_reference(x.cpu()), None),
            "selu_backward": (
                selu_backward,
                torch.where(s > 0, g * SELU_SCALE, g * (s + SELU_SCALE * SELU_ALPHA)),
                g * SELU_SCALE * SELU_ALPHA,
            ),
            "relu": (relu, x.double().cpu().clamp_min(0), None),
            "relu_backward": (relu_backward, torch.where(r > 0, g, 0.0), None),
        }
        table[dtype] = {
            op: ulp_error(ours.cpu(), ref, dtype, scale).max().item() for op, (ours, ref, scale) in cases.items()
        }
    return table
