import collections
import functools
import glob
import math
import os
import subprocess
import sys
from collections.abc import Callable
from typing import NamedTuple

import pytest
import torch

# The tests use the installed build. `python -m pytest` in the checkout puts the checkout first on sys.path;
# unless it was installed editable, its package there has no compiled module, so look past it.
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not glob.glob(os.path.join(_CHECKOUT, "activations_ext", "_C*")):
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _CHECKOUT]
# The benchmarks, which the package does not install, for the tests of them.
sys.path.append(os.path.join(_CHECKOUT, "benchmarks"))

import activations_ext  # noqa: E402, F401  (registers the ops)
from activations_ext.catalog import ACTIVATIONS, ONE_ROUNDING_RTOL  # noqa: E402
from activations_ext.numerics import DTYPES, SELU_ALPHA, SELU_SCALE  # noqa: E402, F401  (DTYPES: for the tests)
from activations_ext.numerics import selu_reference as selu_ref  # noqa: E402, F401  (for the tests)


def python_outside_checkout(
    args: list[str], cwd: os.PathLike, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``python args`` run from ``cwd``, a directory outside the checkout: from inside, the checkout's package comes
    first on sys.path and has no compiled module unless it was installed editable. Text output captured."""
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU visible")

DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]

# Per activation: (forward op, in-place op, float64 reference).
FORWARD = {
    name: (getattr(torch.ops.act, name), getattr(torch.ops.act, f"{name}_"), a.reference)
    for name, a in ACTIVATIONS.items()
}


class GradientForm(NamedTuple):
    """A form of an activation's backward op: ``op(grad, saved)``, its float64 reference, the saved tensor for an
    input x (its result, or x itself), and ATen's kernel for the same form."""

    op: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    reference: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    saved_of: Callable[[torch.Tensor], torch.Tensor]
    torch_op: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


# Per gradient form, by its table name: "selu_backward" (from the result), "selu_backward(x)" (from the input).
BACKWARD = {
    a.gradient_name(g): GradientForm(
        functools.partial(a.ops.backward, is_result=g.is_result),
        g.reference,
        a.ops.forward if g.is_result else (lambda x: x),
        g.torch_op,
    )
    for a in ACTIVATIONS.values()
    for g in a.gradients
}


def assert_matches(
    actual: torch.Tensor, expected64: torch.Tensor, dtype: torch.dtype, abs_scale: torch.Tensor | None = None
) -> None:
    """`actual` (in `dtype`) equals the float64 reference to within one rounding of `dtype`.

    `abs_scale` widens the bound by a few float32 ulps of each element's scale, for results
    computed from an already-rounded input (the backward ops see the rounded forward result).
    """
    assert actual.dtype == dtype
    actual, expected64 = actual.double(), expected64.double()
    bound = ONE_ROUNDING_RTOL[dtype] * expected64.abs() + torch.finfo(dtype).tiny
    if abs_scale is not None:
        bound = bound + 4 * torch.finfo(torch.float32).eps * abs_scale.double().abs()
    error = (actual - expected64).abs()
    bad = ~(error <= bound) & ~(actual.isnan() & expected64.isnan())
    if bad.any():
        # The worst element is the one furthest past its own bound (a NaN error counts as infinitely far).
        excess = torch.where(bad, (error / bound).nan_to_num(nan=math.inf), -1.0).flatten()
        i = int(excess.argmax())
        raise AssertionError(
            f"{int(bad.sum())} of {actual.numel()} elements off; worst at flat index {i}: "
            f"{actual.flatten()[i].item()!r} vs {expected64.flatten()[i].item()!r} "
            f"(error {error.flatten()[i].item():.3g}, bound {bound.flatten()[i].item():.3g})"
        )


def random_data(shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int = 0) -> torch.Tensor:
    """Normal data over both branches, scaled to reach SELU's saturation; never exactly zero."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 4
    x = torch.where(x == 0, 0.5, x)
    return x.to(dtype=dtype, device=device)


def make_layout(layout: str, dtype: torch.dtype, device: str) -> torch.Tensor:
    """A tensor of the named memory layout, with random data."""
    if layout == "contiguous":
        return random_data((37, 129), dtype, device)
    if layout == "scalar":
        return random_data((), dtype, device)
    if layout == "empty":
        return random_data((0, 5), dtype, device)
    if layout == "transposed":
        return random_data((129, 37), dtype, device).t()
    if layout == "strided":
        return random_data((37, 259), dtype, device)[:, 1::2]
    if layout == "offset":  # starts off any 16-byte boundary; long enough for the vector body
        return random_data((10007,), dtype, device)[3:]
    if layout == "channels_last":
        return random_data((3, 5, 7, 11), dtype, device).to(memory_format=torch.channels_last)
    if layout == "expanded":
        return random_data((1, 129), dtype, device).expand(37, 129)
    if layout == "row_values":  # stride 0 along each row, a value of its own per row (.sum(-1)'s gradient)
        return random_data((37, 1), dtype, device).expand(37, 129)
    # Rows of contiguous elements with a row stride (the CUDA launcher's packed rows): each row at one
    # 16-byte phase in every dtype; the second half of a chunk, and a narrow that leaves a head and a tail.
    if layout == "chunk":
        return random_data((37, 2 * 136), dtype, device).chunk(2, dim=-1)[1]
    if layout == "narrow":
        return random_data((37, 320), dtype, device).narrow(1, 3, 197)
    if layout == "chunk_unaligned":  # rows at different phases: element by element
        return random_data((37, 2 * 131), dtype, device).chunk(2, dim=-1)[1]
    if layout == "odd_strides":
        return random_data((40, 45), dtype, device)[::3, ::5]
    if layout == "permuted":  # four dimensions, none mergeable
        return random_data((3, 4, 5, 6), dtype, device)[:, :, :, 1:].permute(2, 0, 3, 1)
    if layout == "channels_last_slice":
        return random_data((3, 5, 7, 11), dtype, device).to(memory_format=torch.channels_last)[:, 1:, :, 2:]
    raise ValueError(layout)


STRIDED_LAYOUTS = ["strided", "chunk", "narrow", "chunk_unaligned", "odd_strides", "permuted", "channels_last_slice"]
LAYOUTS = ["contiguous", "scalar", "empty", "transposed", "offset", "channels_last", "expanded", "row_values"]
LAYOUTS += STRIDED_LAYOUTS


def inside_guarded_storage(x: torch.Tensor, guard: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """A random buffer, and a view into it with `x`'s values, sizes and strides that leaves `guard` or more
    elements of the buffer either side of it and elsewhere between its elements (as `x`'s strides do).
    The view keeps `x`'s storage offset modulo 16 elements, so its 16-byte alignment (which picks the CUDA
    launcher's path) stays the same."""
    span = 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride(), strict=True) if n > 0)
    start = guard + x.storage_offset() % 16
    buffer = random_data((span + start + guard,), x.dtype, str(x.device), seed=99)
    view = buffer.as_strided(x.shape, x.stride(), start)
    view.copy_(x)
    return buffer, view


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


def odd_sizes() -> list[int]:
    """Sizes around the vector width and block tile, to hit every head/body/tail split."""
    return sorted({1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 1023, 1024, 1025, 4099, 8192 + 5, int(math.pow(2, 17)) + 3})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per reason tests were skipped (on a machine without a GPU, most share one)."""
    reasons = collections.Counter(
        report.longrepr[2].removeprefix("Skipped: ")
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple)
    )
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"SKIPPED {count}: {reason}")
