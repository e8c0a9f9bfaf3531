"""The ulp error of every activation (``catalog.ACTIVATIONS``), measured over SELU's whole range."""

from collections.abc import Callable

import torch

from activations_ext.catalog import (  # noqa: F401  (SELU_* and selu_reference: their home for other modules)
    ACTIVATIONS,
    DTYPES,
    SELU_ALPHA,
    SELU_SCALE,
    selu_reference,
)


def ulp_error(
    actual: torch.Tensor, expected64: torch.Tensor, dtype: torch.dtype, scale: torch.Tensor | None = None
) -> torch.Tensor:
    """|actual - expected| in units of ``dtype``'s spacing at the expected value (subnormal spacing below it),
    or at ``scale`` where that is larger: the size of the terms a result cancels from."""
    expected = expected64.to(dtype).double().abs()
    if scale is not None:
        expected = torch.maximum(expected, scale.to(dtype).double().abs())
    finfo = torch.finfo(dtype)
    # The binade from the exponent's bits: CUDA's log2 is not exact at powers of two (log2(8) < 3 there), which
    # took a correctly rounded 8.0 for an error of twice its size.
    _, exponent = torch.frexp(expected.clamp_min(finfo.tiny))
    binade = torch.where(expected.isinf(), expected, torch.ldexp(torch.ones_like(expected), exponent - 1))
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


# The bounds every table entry meets, in ulps, per dtype and op: each activation and each form of its backward
# ("name_backward" from the result, "name_backward(x)" from the input).
ULP_BOUNDS = {
    dtype: {
        entry: bound
        for a in ACTIVATIONS.values()
        for entry, bound in (
            (a.name, a.bound(dtype)),
            *((a.gradient_name(g), g.bound(dtype)) for g in a.gradients),
        )
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


def eager_forward(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Every activation of ``x`` by the act ops, in ``ACTIVATIONS``' order."""
    return tuple(a.ops.forward(x) for a in ACTIVATIONS.values())


def eager_gradients(grad: torch.Tensor, x: torch.Tensor, *results: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Every activation's backward op in each of its forms, at ``grad`` and the input ``x`` or its forward result
    (``results``, in ``ACTIVATIONS``' order); in ``ACTIVATIONS``' order, each activation's forms in its order."""
    return tuple(
        a.ops.backward(grad, result if g.is_result else x, is_result=g.is_result)
        for a, result in zip(ACTIVATIONS.values(), results, strict=True)
        for g in a.gradients
    )


def max_ulp_errors(
    device: torch.device,
    forward: Callable[[torch.Tensor], tuple[torch.Tensor, ...]] = eager_forward,
    gradients: Callable[..., tuple[torch.Tensor, ...]] = eager_gradients,
) -> dict[torch.dtype, dict[str, float]]:
    """Per dtype, each op's largest error in ulps of that dtype against float64 math on the same inputs.

    The inputs are ``whole_range_inputs`` rounded to the dtype; the backward ops take gradients in
    [0.5, 1.5) and the input or the forward results (rounded, as autograd saves them). A gradient with a
    ``scale`` (``selu_backward`` from the result) is measured in ulps of that scale: there it cancels terms of
    that size (the result against alpha * scale, as torch's own ``elu_backward`` does), and no rounding of its
    operands can do better. ``forward`` and ``gradients`` compute the ops (e.g. compiled versions of
    ``eager_forward`` and ``eager_gradients``).
    """
    table = {}
    for dtype in DTYPES:
        x = whole_range_inputs().to(dtype).unique().to(device)
        grad = torch.rand(x.shape, generator=torch.Generator().manual_seed(0)).add(0.5).to(dtype).to(device)
        results = forward(x)
        computed = iter(gradients(grad, x, *results))
        g, xc = grad.cpu(), x.cpu()
        errors = {}
        for a, result in zip(ACTIVATIONS.values(), results, strict=True):
            scale = a.scale(xc) if a.scale else None
            errors[a.name] = ulp_error(result.cpu(), a.reference(xc), dtype, scale).max().item()
            for form in a.gradients:
                saved = result.cpu() if form.is_result else xc
                scale = form.scale(g, saved) if form.scale else None
                expected = form.reference(g, saved)
                errors[a.gradient_name(form)] = ulp_error(next(computed).cpu(), expected, dtype, scale).max().item()
        table[dtype] = errors
    return table
