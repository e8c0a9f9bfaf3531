"""The act ops as the Python side knows them, each once.

The C++ side lists the elementwise activations in ``ACT_ACTIVATIONS`` (kernels/activations.h), from which every
one gets its schemas (``name``, ``name_``, ``name.out``, ``name_backward``), kernels, autograd and
functionalization, and those with gated forms in ``ACT_GATED`` (``name_and_mul`` and ``name_mul``, each with out=
and backward). Here each has one ``Activation`` record, and each gated form a ``Gated`` one, from which the fake
kernels (``_fake``), the DTensor rules (``_sharding``), the ulp table (``numerics``), the benchmark rows (``bench``)
and the tests' references follow. ``tests/test_opcheck.py`` holds the two lists to each other: every registered op
must be checked.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch

# The storage types every op takes; 16-bit types compute in float32.
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# Relative error of one rounding of a result in each dtype, plus a little for float32's expm1.
ONE_ROUNDING_RTOL = {torch.float64: 1e-14, torch.float32: 3e-7, torch.float16: 1e-3, torch.bfloat16: 8e-3}

# torch.selu's constants.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def selu_reference(x: torch.Tensor) -> torch.Tensor:
    """SELU in float64, with ``expm1`` on the negative branch."""
    x = x.double()
    return torch.where(x > 0, SELU_SCALE * x, SELU_SCALE * SELU_ALPHA * torch.expm1(x))


def selu_backward_reference(grad: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    """d selu / dx times ``grad`` in float64, from the forward's result (NaN takes the positive branch, as
    torch's elu_backward tests ``result <= 0``)."""
    g, r = grad.double(), result.double()
    return torch.where(r <= 0, g * (r + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE)


def selu_input_backward_reference(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """d selu / dx times ``grad`` in float64, from the input (NaN takes the positive branch, as in torch)."""
    g, x = grad.double(), x.double()
    return torch.where(x <= 0, g * (SELU_SCALE * SELU_ALPHA) * torch.exp(x), g * SELU_SCALE)


def relu_reference(x: torch.Tensor) -> torch.Tensor:
    """ReLU in float64 (NaN passes through)."""
    return x.double().clamp_min(0)


def relu_backward_reference(grad: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    """threshold_backward's rule in float64: the gradient dropped where the result is <= 0 (kept where it is NaN)."""
    g, r = grad.double(), result.double()
    return torch.where(r <= 0, 0.0, g)


def silu_reference(x: torch.Tensor) -> torch.Tensor:
    """SiLU in float64: ``x / (1 + exp(-x))``."""
    x = x.double()
    return x / (1 + torch.exp(-x))


def silu_backward_reference(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """d silu / dx times ``grad`` in float64: ``sigmoid(x) (1 + x (1 - sigmoid(x)))``, with ``1 - sigmoid(x)`` as
    ``sigmoid(-x)``, which does not cancel."""
    g, x = grad.double(), x.double()
    return g * (torch.sigmoid(x) * (1 + x * torch.sigmoid(-x)))  # g last: a subnormal g * sigmoid would round


def silu_backward_scale(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The size of the terms silu's gradient adds, ``grad * sigmoid(x) * (1 + |x (1 - sigmoid(x))|)``."""
    g, x = grad.double(), x.double()
    return g * torch.sigmoid(x) * (1 + (x * torch.sigmoid(-x)).abs())


def squared_relu_reference(x: torch.Tensor) -> torch.Tensor:
    """Squared ReLU in float64, ``relu(x)^2`` (NaN passes through)."""
    r = x.double().clamp_min(0)
    return r * r


def squared_relu_backward_reference(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """d relu(x)^2 / dx times ``grad`` in float64, ``2 relu(x) grad``: 0 where x <= 0 whatever grad is (as torch's
    composition through threshold_backward), NaN where x is."""
    g, x = grad.double(), x.double()
    return torch.where(x <= 0, 0.0, x * g * 2)


def _squared_relu_torch_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``grad * 2 relu(x)`` in torch's ops, laid out as ATen lays out an op on (grad_output, x) (where ``grad`` is
    finite, the values torch's autograd gives ``relu(x).square()``, which drops any grad where x <= 0)."""
    return grad * torch.where(x <= 0, 0.0, 2 * x)


# GELU's constants: sqrt(1/2) to twice double's precision, and torch's tanh-form constants as doubles.
SQRT_HALF = 0.70710678118654757
SQRT_HALF_LO = -4.8336466567264567e-17
GELU_TANH_SCALE = 2 * 0.7978845608028654  # 2 sqrt(2 / pi)
GELU_TANH_CUBIC = 0.044715
QUICK_GELU_SLOPE = 1.702  # quick GELU's v = 1.702 x, the constant as a double


def _two_product(a: torch.Tensor, b: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """``a * b`` in float64 as ``p + e`` exactly (Dekker's product), for ``|a|, |b| < 1e150`` (beyond: e = 0)."""

    def split(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scaled = v * 134217729.0  # 2^27 + 1
        hi = scaled - (scaled - v)
        return hi, v - hi

    b = torch.as_tensor(b, dtype=torch.float64)
    p = a * b
    (a1, a2), (b1, b2) = split(a), split(b)
    e = ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2
    return p, torch.where((a.abs() < 1e150) & (b.abs() < 1e150), e, 0.0)


def _two_sum(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a + b`` in float64 as ``s + e`` exactly (Knuth's TwoSum); e = 0 where s is not finite."""
    s = a + b
    b_part = s - a
    e = (a - (s - b_part)) + (b - b_part)
    return s, torch.where(s.isfinite(), e, 0.0)


def _gelu_terms(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Phi(x) and phi(x) in float64 for float64 ``x``: ``erfc(-x / sqrt 2) / 2`` with the argument carried to twice
    double's precision, and ``exp(-x^2 / 2) / sqrt(2 pi)`` with x^2's rounding error folded in."""
    square, square_lo = _two_product(x, x)
    exp_half_square = torch.exp(-0.5 * square) * (1 - 0.5 * square_lo)
    z, z_lo = _two_product(-x, SQRT_HALF)
    z_lo = z_lo + torch.where(x.abs() < 1e300, -x * SQRT_HALF_LO, 0.0)
    cdf = 0.5 * (torch.special.erfc(z) - z_lo * (2 / torch.pi**0.5) * exp_half_square)
    return cdf, exp_half_square / (2 * torch.pi) ** 0.5


# Where float64 GELU's results are subnormal (x below -37.5; gelu_tanh below -21), they are products with a subnormal
# factor (Phi(x), exp(-|v|)), whose rounding their cofactor scales: there the bounds are in ulps of that factor's
# range times the cofactor. To float32 and the 16-bit types these terms round to 0, and change nothing.
_SMALLEST_NORMAL64 = 2.0**-1022


def gelu_scale(x: torch.Tensor) -> torch.Tensor:
    """``|x|`` times float64's smallest normal: float64 GELU's subnormal results are ``x`` times a subnormal."""
    return x.double().abs() * _SMALLEST_NORMAL64


def gelu_reference(x: torch.Tensor) -> torch.Tensor:
    """GELU in float64, ``x Phi(x)`` from erfc (no ``1 + erf`` cancellation)."""
    x = x.double()
    return x * _gelu_terms(x)[0]


def gelu_backward_reference(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """d gelu / dx times ``grad`` in float64: ``Phi(x) + x phi(x)``."""
    g, x = grad.double(), x.double()
    cdf, pdf = _gelu_terms(x)
    return g * (cdf + x * pdf)


def gelu_backward_scale(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The size of the terms gelu's gradient adds, ``grad (Phi(x) + |x phi(x)|)``."""
    g, x = grad.double(), x.double()
    cdf, pdf = _gelu_terms(x)
    return g * (cdf + (x * pdf).abs()) + g.abs() * (1 + x.abs()) * _SMALLEST_NORMAL64


def _sigmoids(v: torch.Tensor, v_lo: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``sigmoid(v + v_lo)`` and ``1 - sigmoid(v + v_lo)`` in float64, from ``exp(-|v|)`` corrected to first order."""
    t = torch.exp(-v.abs()) * (1 - torch.where(v < 0, -v_lo, v_lo))
    small, large = t / (1 + t), 1 / (1 + t)
    return torch.where(v < 0, small, large), torch.where(v < 0, large, small)


def _gelu_tanh_sigmoids(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``sigmoid(v)`` and ``1 - sigmoid(v)`` in float64 for float64 ``x``, v = 2 sqrt(2 / pi) (x + 0.044715 x^3)
    carried to twice double's precision."""
    square, square_lo = _two_product(x, x)
    cube, cube_lo = _two_product(square, x)
    cube_lo = cube_lo + square_lo * x
    cubic, cubic_lo = _two_product(cube, GELU_TANH_CUBIC)
    inner, inner_lo = _two_sum(x, cubic)
    v, v_lo = _two_product(inner, GELU_TANH_SCALE)
    v_lo = v_lo + GELU_TANH_SCALE * (inner_lo + cubic_lo + GELU_TANH_CUBIC * cube_lo)
    return _sigmoids(v, torch.where(x.abs() < 1e100, v_lo, 0.0))


def _gelu_tanh_slope(x: torch.Tensor) -> torch.Tensor:
    return GELU_TANH_SCALE * (1 + 3 * GELU_TANH_CUBIC * x * x)


def _quick_gelu_sigmoids(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``sigmoid(v)`` and ``1 - sigmoid(v)`` in float64 for float64 ``x``, v = 1.702 x to twice double's precision."""
    return _sigmoids(*_two_product(x, QUICK_GELU_SLOPE))


def _quick_gelu_slope(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, QUICK_GELU_SLOPE)


# An activation x sigmoid(v(x)) in float64: its sigmoids of v and v' = dv/dx.
Sigmoids = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def _x_sigmoid_references(name: str, sigmoids: Sigmoids, slope: Callable[[torch.Tensor], torch.Tensor]) -> tuple:
    """The float64 reference of ``x sigmoid(v)``, of its gradient ``sigmoid(v) (1 + x v' (1 - sigmoid(v)))`` times
    grad, and the size of the terms that gradient adds, ``grad sigmoid(v) (1 + |x v' (1 - sigmoid(v))|)``."""

    def reference(x: torch.Tensor) -> torch.Tensor:
        x = x.double()
        return x * sigmoids(x)[0]

    def backward_reference(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        g, x = grad.double(), x.double()
        sigmoid, complement = sigmoids(x)
        return g * (sigmoid * (1 + x * slope(x) * complement))  # g last, as silu's

    def backward_scale(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        g, x = grad.double(), x.double()
        sigmoid, complement = sigmoids(x)
        slope_term = (x * slope(x)).abs()
        return g * sigmoid * (1 + slope_term * complement) + g.abs() * (1 + slope_term) * _SMALLEST_NORMAL64

    functions = (reference, backward_reference, backward_scale)
    for function, suffix, doc in zip(
        functions,
        ("reference", "backward_reference", "backward_scale"),
        (f"{name} in float64, ``x sigmoid(v)``.", f"d {name} / dx times ``grad`` in float64.", "Its gradient's terms."),
        strict=True,
    ):
        function.__name__ = function.__qualname__ = f"{name}_{suffix}"
        function.__doc__ = doc
    return functions


# GELU with torch's approximate="tanh" (``x (1 + tanh(v / 2)) / 2`` is ``x sigmoid(v)``) and quick GELU.
gelu_tanh_reference, gelu_tanh_backward_reference, gelu_tanh_backward_scale = _x_sigmoid_references(
    "gelu_tanh", _gelu_tanh_sigmoids, _gelu_tanh_slope
)
quick_gelu_reference, quick_gelu_backward_reference, quick_gelu_backward_scale = _x_sigmoid_references(
    "quick_gelu", _quick_gelu_sigmoids, _quick_gelu_slope
)


def _in_float_for_16_bit(composition: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``composition`` on float copies of 16-bit tensor arguments, its result rounded back once, as torch's own
    activations compute the 16-bit types (in bfloat16 quick GELU's three roundings cost its gradient up to 93% of its
    value); other arguments pass as they are."""

    def narrow(a: object) -> bool:
        return isinstance(a, torch.Tensor) and a.dtype.itemsize == 2

    @functools.wraps(composition)
    def in_float(*args: torch.Tensor) -> torch.Tensor:
        if not any(map(narrow, args)):
            return composition(*args)
        dtype = next(a.dtype for a in args if narrow(a))
        return composition(*(a.float() if narrow(a) else a for a in args)).to(dtype)

    return in_float


@_in_float_for_16_bit
def _quick_gelu_torch(x: torch.Tensor) -> torch.Tensor:
    """torch's composition, ``x * torch.sigmoid(1.702 * x)`` (CLIP's QuickGELU); torch.mul names a bad argument as
    torch.nn.functional's activations do."""
    return x * torch.sigmoid(torch.mul(x, QUICK_GELU_SLOPE))


@_in_float_for_16_bit
def _quick_gelu_torch_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The gradient torch's autograd gives that composition, in its ops and order: ``grad sigmoid(v) + (grad x) (1 -
    sigmoid(v)) sigmoid(v) 1.702``."""
    sigmoid = torch.sigmoid(QUICK_GELU_SLOPE * x)
    return grad * sigmoid + torch.ops.aten.sigmoid_backward(grad * x, sigmoid) * QUICK_GELU_SLOPE


def _bound_for(bound: tuple[float, float, float], dtype: torch.dtype) -> float:
    """The entry of a (16-bit types, float32, float64) ulp bound for ``dtype``."""
    return bound[{2: 0, 4: 1, 8: 2}[dtype.itemsize]]


def _overload(name: str) -> torch._ops.OpOverload:
    """``torch.ops.act`` overload of a schema's name: "selu.out" -> act.selu.out, "selu_" -> act.selu_.default."""
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.act, packet), overload or "default")


@dataclass(frozen=True)
class Ops:
    """An activation's four ops, named as its schemas in kernels/activations.h name them (read from the build)."""

    names: tuple[str, str, str, str]  # forward, in-place, out=, backward: "selu", "selu_", "selu.out", "selu_backward"
    forward: torch._ops.OpOverload
    inplace: torch._ops.OpOverload
    out: torch._ops.OpOverload
    backward: torch._ops.OpOverload


def _built_ops() -> dict[str, Ops]:
    """Each activation the build registers, with its ops (``_C.activations()``), looked up once at import: code that
    torch.compile traces reads them as constants."""
    from activations_ext import _C

    return {name: Ops(names, *(_overload(n) for n in names)) for name, names in _C.activations()}


_OPS = _built_ops()


@dataclass(frozen=True)
class Gradient:
    """One form of an activation's backward op, ``name_backward(grad_output, saved, is_result=...)``.

    Attributes:
        is_result: whether ``saved`` is the forward's result (else its input).
        reference: the gradient in float64, from ``(grad_output, saved)``.
        torch_op: ATen's kernel for the same, from ``(grad_output, saved)``.
        ulp_bound: the largest error the kernels may make, (16-bit types, float32, float64), in ulps of the
            result or of ``scale`` where that is larger.
        scale: the size of the terms the gradient cancels, from ``(grad_output, saved)`` (None: its result).
    """

    is_result: bool
    reference: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    torch_op: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    ulp_bound: tuple[float, float, float]
    scale: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None

    def bound(self, dtype: torch.dtype) -> float:
        """The ulp bound for results in ``dtype``."""
        return _bound_for(self.ulp_bound, dtype)


@dataclass(frozen=True)
class Activation:
    """One elementwise activation: its float64 math and torch's own implementation of it.

    Attributes:
        name: the op's name in ``torch.ops.act`` (and ``ACT_ACTIVATIONS``), and of its functional drop-in.
        module_name: the name of its ``nn.Module`` drop-in.
        summary: what it computes, in a line: the first line of its functional form's and module's docstrings.
        reference: the forward in float64.
        torch_forward: torch's op, as the benchmark's and the main job's comparison.
        torch_inplace: torch's in-place op.
        torch_out: ``(x, out)``: torch's kernel for the forward writing ``out``, the benchmark's comparison for
            ``name.out`` (so both write the same buffer: where a buffer lies moves a mid-size time by a few %).
        ulp_bound: the largest error the forward may make, in ulps of the 16-bit types, float32 and float64
            (``numerics.max_ulp_errors`` measures it).
        gradients: the forms of ``name_backward``, from the result and from the input; an activation whose
            result does not determine its gradient has only the second.
        backward_layout_from_grad: the backward's output is laid out as ATen's TensorIterator lays out an op
            on (grad_output, saved), as elu_backward does; else on (saved, grad_output), as threshold_backward.
        drop_in: its functional form and module are made from this record with torch.nn's ``input`` and
            ``inplace`` (and replace torch.nn's of the same names where torch has them); else an option of another
            drop-in selects it (GELU's ``approximate``), written by hand.
        scale: the size of the terms the forward's result is made of, from ``x``, where a bound is in ulps of that
            rather than of the result (None: its result).
    """

    name: str
    module_name: str
    summary: str
    reference: Callable[[torch.Tensor], torch.Tensor]
    torch_forward: Callable[[torch.Tensor], torch.Tensor]
    torch_inplace: Callable[[torch.Tensor], torch.Tensor]
    torch_out: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    ulp_bound: tuple[float, float, float]  # (16-bit types, float32, float64)
    gradients: tuple[Gradient, ...]
    backward_layout_from_grad: bool
    drop_in: bool = True
    scale: Callable[[torch.Tensor], torch.Tensor] | None = None

    @property
    def ops(self) -> Ops:
        """Its ops in ``torch.ops.act``: forward, in-place, out= and backward."""
        return _OPS[self.name]

    def bound(self, dtype: torch.dtype) -> float:
        """The forward's ulp bound for results in ``dtype``."""
        return _bound_for(self.ulp_bound, dtype)

    def gradient_name(self, gradient: Gradient) -> str:
        """The name tables and tests give a gradient form: ``selu_backward`` from the result, ``selu_backward(x)``
        from the input."""
        return self.ops.names[3] + ("" if gradient.is_result else "(x)")

    def gradient(self, is_result: bool) -> Gradient | None:
        """Its gradient form from the result (or the input), if it has one."""
        return next((g for g in self.gradients if g.is_result == is_result), None)


ACTIVATIONS = {
    a.name: a
    for a in (
        Activation(
            "selu",
            "SELU",
            "SELU, ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with torch's alpha and scale.",
            selu_reference,
            torch.selu,
            torch.selu_,
            lambda x, out: torch.ops.aten.elu.out(x, SELU_ALPHA, SELU_SCALE, 1.0, out=out),
            # float32/float64: expm1's error; 16-bit: one rounding of the float32 result.
            ulp_bound=(1.0, 2.0, 2.0),
            gradients=(
                # Near saturation selu_backward cancels the result against alpha * scale, as elu_backward does.
                Gradient(
                    True,
                    selu_backward_reference,
                    lambda g, r: torch.ops.aten.elu_backward(g, SELU_ALPHA, SELU_SCALE, 1.0, True, r),
                    ulp_bound=(1.0, 2.0, 2.0),
                    scale=lambda g, r: g.double() * SELU_SCALE * SELU_ALPHA,
                ),
                # float32/float64: exp's error (CUDA's expf: 2 ulps) and the roundings of two products, each
                # counting up to double where the result sits low in its binade (H100, float32: 3.24 ulps; torch's
                # no less).
                Gradient(
                    False,
                    selu_input_backward_reference,
                    lambda g, x: torch.ops.aten.elu_backward(g, SELU_ALPHA, SELU_SCALE, 1.0, False, x),
                    ulp_bound=(1.0, 4.0, 4.0),
                ),
            ),
            backward_layout_from_grad=True,
        ),
        Activation(
            "relu",
            "ReLU",
            "ReLU, ``max(0, x)``, passing NaN through as ``torch.relu`` does.",
            relu_reference,
            torch.relu,
            torch.relu_,
            lambda x, out: torch.clamp_min(x, 0, out=out),
            ulp_bound=(0.0, 0.0, 0.0),
            gradients=tuple(
                Gradient(
                    is_result,
                    relu_backward_reference,
                    lambda g, s: torch.ops.aten.threshold_backward(g, s, 0),
                    ulp_bound=(0.0, 0.0, 0.0),
                )
                for is_result in (True, False)
            ),
            backward_layout_from_grad=False,
        ),
        Activation(
            "silu",
            "SiLU",
            "SiLU (swish), ``x * sigmoid(x)``.",
            silu_reference,
            torch.nn.functional.silu,
            torch.ops.aten.silu_,
            lambda x, out: torch.ops.aten.silu.out(x, out=out),
            # float32 computed in double: one rounding. float64: torch's formula and bits, 1.66 ulps from the exact
            # value (a 120-bit reference, 6000 inputs), measured against a float64 reference off by as much again.
            ulp_bound=(1.0, 1.0, 4.0),
            gradients=(
                # The gradient has a root near x = -1.28, where 1 + x (1 - sigmoid(x)) cancels: in ulps of its terms.
                # float64: 3.35 ulps from the exact value (40-digit reference; torch's 17.9, whose 1 - sigmoid(x)
                # cancels for large x), and the float64 reference's own error.
                Gradient(
                    False,
                    silu_backward_reference,
                    lambda g, x: torch.ops.aten.silu_backward(g, x),
                    ulp_bound=(1.0, 1.0, 4.0),
                    scale=silu_backward_scale,
                ),
            ),
            backward_layout_from_grad=True,
        ),
        Activation(
            "gelu",
            "GELU",
            'GELU, ``x Phi(x)`` with Phi the standard normal CDF (``torch.nn.functional.gelu``, approximate="none").',
            gelu_reference,
            torch.nn.functional.gelu,
            torch.ops.aten.gelu_,
            lambda x, out: torch.ops.aten.gelu.out(x, out=out),
            # One rounding of float32 (from double) and 16-bit results (from float). float64: the inline erfc's
            # error with the products' (up to 4.7 ulps against 40 digits: docs/design/gelu.md) and the reference's.
            ulp_bound=(1.0, 1.0, 8.0),
            gradients=(
                # Phi(x) + x phi(x) cancels near its root x = -0.75: in ulps of its terms.
                Gradient(
                    False,
                    gelu_backward_reference,
                    lambda g, x: torch.ops.aten.gelu_backward(g, x),
                    ulp_bound=(1.0, 1.0, 8.0),
                    scale=gelu_backward_scale,
                ),
            ),
            backward_layout_from_grad=True,
            drop_in=False,
            scale=gelu_scale,
        ),
        Activation(
            "gelu_tanh",
            "GELUTanh",
            "GELU's tanh approximation, ``x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2`` "
            '(``torch.nn.functional.gelu``, approximate="tanh").',
            gelu_tanh_reference,
            lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
            lambda x: torch.ops.aten.gelu_(x, approximate="tanh"),
            lambda x, out: torch.ops.aten.gelu.out(x, approximate="tanh", out=out),
            # Computed in double: one rounding of float32 and 16-bit results. float64: exp's error and the
            # division's and products', and the float64 reference's own.
            ulp_bound=(1.0, 1.0, 4.0),
            gradients=(
                # float64: the two divisions besides (6 ulps measured on the CPU).
                Gradient(
                    False,
                    gelu_tanh_backward_reference,
                    lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
                    ulp_bound=(1.0, 1.0, 8.0),
                    scale=gelu_tanh_backward_scale,
                ),
            ),
            backward_layout_from_grad=True,
            drop_in=False,
            scale=gelu_scale,
        ),
        Activation(
            "squared_relu",
            "SquaredReLU",
            "Squared ReLU, ``max(0, x)^2`` (Primer; Nemotron-4's MLPs), passing NaN through.",
            squared_relu_reference,
            lambda x: torch.relu(x).square(),
            lambda x: x.copy_(torch.relu(x).square()),  # relu_ then square_ would overwrite what relu_ saves
            lambda x, out: torch.square(torch.relu(x), out=out),
            # x^2 exact in the math type (float for the 16-bit types, double for float32): one rounding.
            ulp_bound=(1.0, 1.0, 1.0),
            gradients=(
                Gradient(
                    False,
                    squared_relu_backward_reference,
                    _squared_relu_torch_backward,
                    ulp_bound=(1.0, 1.0, 1.0),
                ),
            ),
            backward_layout_from_grad=True,
        ),
        Activation(
            "quick_gelu",
            "QuickGELU",
            "Quick GELU, ``x sigmoid(1.702 x)`` (CLIP's GELU approximation).",
            quick_gelu_reference,
            _quick_gelu_torch,
            # On a copy, as torch's own silu_ keeps one: x * sigmoid(v)'s gradient needs x.
            lambda x: x.copy_(_quick_gelu_torch(x.clone())),
            lambda x, out: out.copy_(_quick_gelu_torch(x)),
            # As gelu_tanh's: one rounding of float32 and 16-bit results; float64 exp's error, the division's and
            # products', and the float64 reference's own.
            ulp_bound=(1.0, 1.0, 4.0),
            gradients=(
                Gradient(
                    False,
                    quick_gelu_backward_reference,
                    _quick_gelu_torch_backward,
                    ulp_bound=(1.0, 1.0, 8.0),
                    scale=quick_gelu_backward_scale,
                ),
            ),
            backward_layout_from_grad=True,
            scale=gelu_scale,
        ),
    )
}


@dataclass(frozen=True)
class GatedOps:
    """A gated activation's six ops, named as its ``gated`` schemas in kernels/activations.h name them (read from the
    build): on the merged ``[..., 2d]`` layout and on two tensors, each with its out= form and backward."""

    names: tuple[str, str, str, str, str, str]  # "silu_and_mul", "silu_and_mul.out", ..., "silu_mul_backward"
    merged: torch._ops.OpOverload
    merged_out: torch._ops.OpOverload
    merged_backward: torch._ops.OpOverload
    pair: torch._ops.OpOverload
    pair_out: torch._ops.OpOverload
    pair_backward: torch._ops.OpOverload


def _built_gated_ops() -> dict[str, GatedOps]:
    """The gated ops of each activation that has them (``_C.gated()``), by the activation's name."""
    from activations_ext import _C

    return {name: GatedOps(names, *(_overload(n) for n in names)) for name, names in _C.gated()}


_GATED_OPS = _built_gated_ops()


@dataclass(frozen=True)
class Gated:
    """A gated activation (a GLU variant), ``act(gate) * up``: on the merged ``[..., 2d]`` layout of a fused gate/up
    projection (gate the first half of the last dimension, up the second) and on two tensors.

    Attributes:
        activation: the catalog activation it gates, whose float64 math and torch op give its references.
        variant: the GLU variant's name in the literature ("SwiGLU").
        ulp_bound: the largest error the forward may make, (16-bit types, float32, float64), in ulps of the result
            (or of ``activation.scale(gate) * |up|`` where that is larger).
        gradient_ulp_bound: the same for both gradients, the gate's in ulps of its terms where they cancel (the
            activation's gradient ``scale`` at ``grad * up``).
    """

    activation: Activation
    variant: str
    ulp_bound: tuple[float, float, float]
    gradient_ulp_bound: tuple[float, float, float]

    @property
    def ops(self) -> GatedOps:
        """Its six ops in ``torch.ops.act``."""
        return _GATED_OPS[self.activation.name]

    @property
    def name(self) -> str:
        """The merged op's name, ``silu_and_mul``: the key of ``GATED``."""
        return self.ops.names[0]

    @property
    def pair_name(self) -> str:
        """The two-tensor op's name, ``silu_mul``."""
        return self.ops.names[3]

    def bound(self, dtype: torch.dtype) -> float:
        """The forward's ulp bound for results in ``dtype``."""
        return _bound_for(self.ulp_bound, dtype)

    def gradient_bound(self, dtype: torch.dtype) -> float:
        """The gradients' ulp bound for results in ``dtype``."""
        return _bound_for(self.gradient_ulp_bound, dtype)

    def reference(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        """``act(gate) * up`` in float64."""
        return self.activation.reference(gate) * up.double()

    def scale(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor | None:
        """The size of the terms the forward's result is made of, where its bound is in ulps of that."""
        return self.activation.scale(gate) * up.double().abs() if self.activation.scale else None

    def gradient_references(
        self, grad: torch.Tensor, gate: torch.Tensor, up: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The gradients of gate and up in float64: ``grad * up * act'(gate)`` and ``grad * act(gate)``."""
        form = self.activation.gradient(is_result=False)
        return form.reference(grad.double() * up.double(), gate), grad.double() * self.activation.reference(gate)

    def gradient_scales(
        self, grad: torch.Tensor, gate: torch.Tensor, up: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The size of the terms each gradient is made of, where its bound is in ulps of that."""
        form = self.activation.gradient(is_result=False)
        gate_scale = form.scale(grad.double() * up.double(), gate) if form.scale else None
        up_scale = grad.double().abs() * self.activation.scale(gate) if self.activation.scale else None
        return gate_scale, up_scale

    def torch_composition(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        """torch's own ``act(gate) * up``, the benchmark's and the tests' comparison."""
        return self.activation.torch_forward(gate) * up


# The gated activations, by their merged op's name. Forward and gradients are rounded once from the activation's math
# (in double for float32 and GELU), so float32 and 16-bit results stay within the activation's bound; float64 adds
# the product's rounding to the activation's bound.
GATED = {
    g.name: g
    for g in (
        Gated(ACTIVATIONS["relu"], "ReGLU", ulp_bound=(1.0, 1.0, 1.0), gradient_ulp_bound=(1.0, 1.0, 1.0)),
        Gated(ACTIVATIONS["silu"], "SwiGLU", ulp_bound=(1.0, 1.0, 5.0), gradient_ulp_bound=(1.0, 1.0, 5.0)),
        Gated(ACTIVATIONS["gelu"], "GeGLU", ulp_bound=(1.0, 1.0, 9.0), gradient_ulp_bound=(1.0, 1.0, 9.0)),
        Gated(ACTIVATIONS["gelu_tanh"], "GeGLU (tanh)", ulp_bound=(1.0, 1.0, 5.0), gradient_ulp_bound=(1.0, 1.0, 9.0)),
        # The 16-bit types' products of three factors round in float before their own rounding.
        Gated(
            ACTIVATIONS["squared_relu"], "squared ReGLU", ulp_bound=(1.0, 1.0, 2.0), gradient_ulp_bound=(1.0, 1.0, 2.0)
        ),
        Gated(ACTIVATIONS["quick_gelu"], "quick GeGLU", ulp_bound=(1.0, 1.0, 5.0), gradient_ulp_bound=(1.0, 1.0, 9.0)),
    )
}


# selu_alpha_dropout: SELU, then torch.nn.functional.alpha_dropout in train mode, in one op.
# Its ulp bounds, (16-bit types, float32 and float64), against the float64 math for the same mask: the 16-bit
# types within one rounding. The others: the forward within SELU's 2 ulps and the roundings of a * s and of the
# bias added (in ulps of the larger of the result and a * s, the terms it may cancel); the backward within exp's 2
# ulps and the roundings of its three products; and both within the roundings of the constants folded in float
# (a, the biases, alpha * scale). Each term counts up to double in ulps of a result in a lower binade than its
# operands. The bounds are those terms' typical size with a margin, not their worst case (which is looser): over
# 2^23 random float32 inputs at p = 0.1 on the H100 the largest errors were 3.36 ulps (forward, near x = -0.08,
# where s and a * s lie either side of 1/8) and 4.08 (backward), above the bounds of 3 and 4 this file had
# before, which left out the doubling.
SELU_ALPHA_DROPOUT_ULP_BOUNDS = {"forward": (1.0, 5.0), "backward": (1.0, 7.0)}


def alpha_dropout_dropped_value(p: float, dtype: torch.dtype) -> torch.Tensor:
    """The value every dropped element takes in ``dtype``: b_drop as the kernels fold it, (mask - 1) * (alpha' a)
    + alpha' a p in the compute type (float32 for the 16-bit types, where torch rounds each step to the dtype),
    then rounded; at p = 1, v * 0 (-0.0 here, for v < 0)."""
    if p == 1:
        return torch.tensor(-0.0, dtype=dtype)
    a, b_keep, _ = alpha_dropout_constants(p)
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    alpha_a = torch.tensor(SELU_ALPHA * SELU_SCALE * a, dtype=compute)
    return (-alpha_a + torch.tensor(b_keep, dtype=compute)).to(dtype)


def alpha_dropout_kept(result: torch.Tensor, p: float) -> torch.Tensor:
    """The mask recovered from a train-mode result: dropped elements all take ``alpha_dropout_dropped_value``."""
    return result != alpha_dropout_dropped_value(p, result.dtype).to(result.device)


def alpha_dropout_constants(p: float) -> tuple[float, float, float]:
    """(a, b_keep, b_drop) in float64: alpha dropout maps a kept value v to a * v + b_keep and a dropped one to
    b_drop, with torch.nn.functional.alpha_dropout's constants (alpha' = alpha * scale, SELU's saturation)."""
    alpha = SELU_ALPHA * SELU_SCALE
    a = 1 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    return a, alpha * a * p, alpha * a * (p - 1)


def selu_alpha_dropout_reference(x: torch.Tensor, kept: torch.Tensor, p: float) -> torch.Tensor:
    """The forward in float64, for the mask ``kept``."""
    a, b_keep, b_drop = alpha_dropout_constants(p)
    return torch.where(kept, a * selu_reference(x) + b_keep, b_drop)


def selu_alpha_dropout_backward_reference(
    grad: torch.Tensor, x: torch.Tensor, kept: torch.Tensor, p: float
) -> torch.Tensor:
    """The gradient with respect to x in float64, for the mask ``kept``."""
    a, _, _ = alpha_dropout_constants(p)
    x = x.double()
    slope = torch.where(x > 0, SELU_SCALE, SELU_SCALE * SELU_ALPHA * torch.exp(x))
    return torch.where(kept, grad.double() * a * slope, 0.0)
