"""The act ops written in aten ops, for Inductor to fuse: the kernels' own formulation per device and dtype.

Each function computes what the C++/CUDA kernel for its op computes on a tensor of that device and dtype (same
branches, same constants rounded the same way, same order of operations), so the code Inductor generates from
it rounds as the kernel does. Where no aten formulation can promise that, the function returns
``NotImplemented`` and the op stays a call to its kernel. ``activations_ext._inductor`` registers them.
"""

import math
from collections.abc import Callable, Sequence

import torch

from activations_ext.catalog import (
    GATED,
    GELU_TANH_CUBIC,
    GELU_TANH_SCALE,
    QUICK_GELU_SLOPE,
    SELU_ALPHA,
    SELU_SCALE,
    SQRT_HALF,
)


def _to_float32(value: float) -> float:
    """``value`` rounded to float32 (as a Python float), as a C++ ``float`` constant holds it."""
    return torch.tensor(value, dtype=torch.float32).item()


# alpha * scale folded in each compute type, as the kernels fold it.
_NEG_COEF = {
    torch.float32: _to_float32(_to_float32(SELU_ALPHA) * _to_float32(SELU_SCALE)),
    torch.float64: SELU_ALPHA * SELU_SCALE,
}
# Below this magnitude expm1(x) rounds to x in float32 (x^2 / 2 is under a quarter ulp of x).
_FLOAT32_EXPM1_IS_X = 2.0**-25


def _kernels_of(x: torch.Tensor) -> str:
    """The device whose kernels a formulation repeats: x's ("cpu" or "cuda"; tests take CUDA's on the CPU)."""
    return x.device.type


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The kernels' acc_t for the arithmetic ops: double for double, float otherwise."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _expm1_from_exp2(x: torch.Tensor) -> torch.Tensor:
    """The CUDA kernel's expm1 for 16-bit results (x <= 0, float32): a short series near 0, else
    ``exp2(x * log2(e)) - 1`` with ``log2(e)`` rounded to float and the hardware's approximate exp2 (the kernel
    flushes its subnormal results to zero, which changes nothing: there the result is -1 either way)."""
    series = x * (1.0 + x * (0.5 + x * (_to_float32(1 / 6) + x * _to_float32(1 / 24))))
    return torch.where(x > -0.03125, series, torch.exp2(x * _to_float32(1.4426950408889634)) - 1.0)


def _expm1_libdevice_float32(x: torch.Tensor) -> torch.Tensor:
    """expm1 for float32 on CUDA. Inductor's generated code calls libdevice with subnormals flushed to
    zero, which would turn a subnormal x into 0 where the kernel's expm1f returns x; below 2^-25 in
    magnitude expm1 rounds to x anyway, so those never reach libdevice."""
    return torch.where(x > -_FLOAT32_EXPM1_IS_X, x, torch.expm1(x))


def _split(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x's high and low 12 bits (float32), for Dekker's exact products (``split_float``)."""
    scaled = x * 4097.0
    hi = scaled - (scaled - x)
    return hi, x - hi


def _expm1_times_float_arithmetic(coef: float, x: torch.Tensor) -> torch.Tensor:
    """The CPU kernel's ``coef * expm1(x)`` for float x <= 0 (``expm1_nonpositive_times`` in
    kernels/activations.h), step for step in float32: x = k ln2 + r, expm1 as head + tail with the leading sums'
    rounding errors kept, then Dekker's product with ``coef`` (float64, taken as two float32s), rounded once at
    the end."""
    round_shift = float.fromhex("0x1.8p23")
    x = torch.where(x > 0, 0.0, torch.where(x < -64.0, -64.0, x))
    k = (x * float.fromhex("0x1.715476p+0") + round_shift) - round_shift
    r_hi = x - k * float.fromhex("0x1.62e4p-1")
    k_ln2_lo = k * float.fromhex("0x1.7f7d1cp-20")
    r = r_hi - k_ln2_lo
    r_lo = (r_hi - r) - k_ln2_lo
    r1, r2 = _split(r)
    square = r * r
    square_lo = ((r1 * r1 - square) + 2.0 * r1 * r2) + r2 * r2
    cube_coef = torch.full_like(r, _to_float32(1 / 40320))
    for n in (5040, 720, 120, 24, 6):  # Horner: 1/3! + r * (1/4! + ... + r * (1/8!))
        cube_coef = _to_float32(1 / n) + r * cube_coef
    rest = r_lo + (0.5 * square_lo + square * r * cube_coef)
    two_k = ((k.to(torch.int32) + 127) << 23).view(torch.float32)
    c = two_k - 1.0
    c_lo = (-1.0 - c) + two_k
    linear, quadratic = two_k * r, two_k * (0.5 * square)
    head1 = c + linear
    error1 = (c - head1) + linear
    head = head1 + quadratic
    error2 = (head1 - head) + quadratic
    tail = ((error1 + error2) + c_lo) + two_k * rest
    coef_hi = _to_float32(coef)
    coef_lo = _to_float32(coef - coef_hi)
    coef1, coef2 = (v.item() for v in _split(torch.tensor(coef_hi, dtype=torch.float32)))
    head_hi, head_lo = _split(head)
    product = coef_hi * head
    product_lo = ((coef1 * head_hi - product) + coef1 * head_lo + coef2 * head_hi) + coef2 * head_lo
    result = product + (product_lo + (coef_hi * tail + coef_lo * head))
    return torch.where(x > -(2.0**-90), coef_hi * x, result)


# exp_nonpositive_series's constants per arithmetic (ExpArithmetic in kernels/activations.h): its range, log2(e), ln2 in
# two parts, the Taylor series' degree, and 2^k's bits.
_EXP_ARITHMETIC = {
    torch.float32: (-104.0, "0x1.715476p+0", "0x1.62e4p-1", "0x1.7f7d1cp-20", 7, 127, 23),
    torch.float64: (-746.0, "0x1.71547652b82fep0", "0x1.62e42fee00000p-1", "0x1.a39ef35793c76p-33", 8, 1023, 52),
}
# kExpSeriesFor16Bit (there highest first): the series' c_2..c_5 in float for results rounded to a 16-bit type.
_EXP_SERIES_FOR_16_BIT = tuple(map(float.fromhex, ("0x1.fffdfcp-2", "0x1.5557aep-3", "0x1.5729f4p-5", "0x1.106290p-7")))


def _exp_arithmetic(x: torch.Tensor, for_16_bit: bool = False) -> torch.Tensor:
    """The CPU kernels' exp for x <= 0 in x's arithmetic, float or double (``exp_nonpositive_series``), step for step:
    x = k ln2 + r, 1 + (r + r^2 (...)) by the Taylor series (for 16-bit results the fitted one), times 2^k as
    2^(k + 64) 2^-64."""
    lowest, *hex_constants, degree, bias, mantissa = _EXP_ARITHMETIC[x.dtype]
    log2e, ln2_hi, ln2_lo = map(float.fromhex, hex_constants)
    bits = torch.int32 if x.dtype == torch.float32 else torch.int64
    round_shift = 1.5 * 2.0 ** (mantissa)
    x = torch.where(x > 0, 0.0, torch.where(x < lowest, lowest, x))
    shifted = x * log2e + round_shift
    k = shifted - round_shift
    r = (x - k * ln2_hi) - k * ln2_lo
    if for_16_bit:
        coefficients = list(_EXP_SERIES_FOR_16_BIT)
    else:
        coefficients = [1 / math.factorial(n) for n in range(2, degree + 1)]
        if x.dtype == torch.float32:
            coefficients = [_to_float32(c) for c in coefficients]
    u = _horner(coefficients[::-1], r)  # c_2 + r * (c_3 + ... + r * c_n)
    p = 1.0 + (r + r * r * u)
    round_bits = torch.tensor(round_shift, dtype=x.dtype).view(bits).item()
    scale = ((shifted.view(bits) - round_bits + (bias + 64)) << mantissa).view(x.dtype)
    return p * scale * 2.0**-64


# The coefficients of erfc_in_float and normal_cdf_for_float32 (kernels/activations.h), highest power of t first:
# float's P (erfc = t exp(P(t) - z^2)), double's Q (erfc = t exp(-z^2) Q(t)), which the kernel halves for Phi.
_ERFC_FLOAT_P = (0.22879079, -0.70919234, 0.47449490, 0.25444227, 1.01801378, -1.26654178)
_ERFC_DOUBLE_Q = (
    0.055873871038741224,
    -0.333895682925951,
    0.7475678189253344,
    -0.8461284739589974,
    0.7799818581579242,
    -0.2885068987696715,
    0.270299054328413,
    0.10898316183355025,
    0.16789912261481743,
    0.16864244356362051,
    0.1692837248845803,
)


def _horner(coefficients: Sequence[float], t: torch.Tensor) -> torch.Tensor:
    """The polynomial of ``coefficients`` (highest power first) at t, one product and one sum a step."""
    poly = torch.full_like(t, coefficients[0])
    for c in coefficients[1:]:
        poly = poly * t + c
    return poly


def _normal_cdf_arithmetic(x: torch.Tensor, dtype: torch.dtype, exp_half_square: torch.Tensor | None) -> torch.Tensor:
    """Phi(x) = erfc(-x / sqrt 2) / 2 in x's arithmetic for storage ``dtype``, as the kernels compute it, step for
    step on the CPU (on CUDA with a division and libdevice's exp where the kernels refine a reciprocal and read a
    table, within the bounds): in float (``erfc_in_float``) t = 1 / (1 + |z| / 2) and t exp(P(t) - z^2) / 2 with
    the kernels' exp on x's device (``_gelu_exp``), 1 - erfc(-z) / 2 for z < 0; in double (``normal_cdf_for_float32``)
    t = 1 / (1 + 0.3 |x| / sqrt 2) and t exp(-x^2 / 2) Q(t) / 2 with the caller's ``exp_half_square``, 1 - Phi(-x) for
    x > 0."""
    if x.dtype == torch.float64:
        t = 1.0 / (1.0 + (0.3 * SQRT_HALF) * x.abs())
        half_tail = t * exp_half_square * _horner([0.5 * c for c in _ERFC_DOUBLE_Q], t)
        return torch.where(x <= 0, half_tail, 1.0 - half_tail)
    z = -x * SQRT_HALF
    a = z.abs()
    t = 1.0 / (1.0 + 0.5 * a)
    tail = t * _gelu_exp(_horner([_to_float32(c) for c in _ERFC_FLOAT_P], t) - a * a, dtype)
    return 0.5 * torch.where(z >= 0, tail, 2.0 - tail)


def _selu_negative(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """SELU's negative branch, alpha * scale * expm1(x), of the compute-type ``x`` (only x <= 0 is used) as the
    kernel for storage ``dtype`` on ``x``'s device computes it, or None where no aten formulation rounds the same
    way."""
    coef = _NEG_COEF[x.dtype]
    if _kernels_of(x) == "cuda":
        if dtype.itemsize == 2:
            return _expm1_from_exp2(x) * coef
        return (_expm1_libdevice_float32(x) if dtype == torch.float32 else torch.expm1(x)) * coef
    if _kernels_of(x) == "cpu" and dtype != torch.float64:
        return _expm1_times_float_arithmetic(SELU_ALPHA * SELU_SCALE, x)
    return None  # float64 on the CPU calls libm's expm1, which generated code does not


def _exp_nonpositive(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """exp of ``x`` (float or double; only x <= 0 is used) as the kernel for storage ``dtype`` computes it
    (``exp_nonpositive`` in kernels/activations.h), or None where no aten formulation rounds the same way."""
    if _kernels_of(x) == "cuda":
        if dtype.itemsize == 2:
            # The kernel's __expf is the hardware exp2 of x log2(e), subnormal results kept; generated code's exp2
            # flushes them, so below 2^-126 it takes exp2(t + 64) * 2^-64 (exact scalings).
            t = x * _to_float32(1.4426950408889634)
            return torch.where(t < -126.0, torch.exp2(t + 64.0) * 2.0**-64, torch.exp2(t))
        return torch.exp(x)  # libdevice's exp against CUDA's: within the ulp bounds, not always the same bits
    if _kernels_of(x) == "cpu" and x.dtype == torch.float32:
        return _exp_arithmetic(x, for_16_bit=dtype.itemsize == 2)
    return None  # double on the CPU calls Sleef's exp, which generated code calls only in its vector loops


def selu(x: torch.Tensor) -> torch.Tensor:
    """``act::selu``: ``scale * x`` for x > 0, ``alpha * scale * expm1(x)`` otherwise, in the compute type."""
    acc = _compute_dtype(x.dtype)
    xa = x.to(acc)
    negative = _selu_negative(xa, x.dtype)
    if negative is None:
        return NotImplemented
    return torch.where(xa <= 0, negative, xa * SELU_SCALE).to(x.dtype)


def selu_backward(grad_output: torch.Tensor, self_or_result: torch.Tensor, *, is_result: bool = True) -> torch.Tensor:
    """``act::selu_backward``: ``grad * scale``, or where the saved tensor is <= 0 ``grad * (result + alpha *
    scale)`` from the result, ``grad * alpha * scale * exp(x)`` from the input (NaN takes ``scale``, as in
    torch's elu_backward)."""
    acc = _compute_dtype(self_or_result.dtype)
    g, s = grad_output.to(acc), self_or_result.to(acc)
    if is_result:
        return (g * torch.where(s <= 0, s + _NEG_COEF[acc], SELU_SCALE)).to(self_or_result.dtype)
    exp = _exp_nonpositive(s, self_or_result.dtype)
    if exp is None:
        return NotImplemented
    return torch.where(s <= 0, g * _NEG_COEF[acc] * exp, g * SELU_SCALE).to(self_or_result.dtype)


# Each activation's value and gradient in its kernels' math type, unrounded (``Math`` in kernels/activations.h), as
# ``(x, dtype) -> tensor`` and ``(grad, x, dtype) -> tensor`` of the storage ``dtype``'s kernel (None where no aten
# formulation rounds as it does): the activations round them to the dtype, the gated forms take their products
# first.


def _relu_value(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """ReLU: NaN passes; -0.0 stays -0.0 on the CPU and becomes +0.0 on CUDA, each as torch.relu does there."""
    zero = x <= 0 if _kernels_of(x) == "cuda" else x < 0
    return torch.where(zero, 0.0, x)


def _relu_gradient(grad: torch.Tensor, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The gradient dropped wherever x (or the result) is <= 0, kept where it is NaN."""
    return torch.where(x <= 0, 0.0, grad)


def relu(x: torch.Tensor) -> torch.Tensor:
    """``act::relu`` on the stored values."""
    return _relu_value(x, x.dtype)


def relu_backward(grad_output: torch.Tensor, self_or_result: torch.Tensor, *, is_result: bool = True) -> torch.Tensor:
    """``act::relu_backward``: the gradient is dropped wherever the input, or the result, is <= 0."""
    return _relu_gradient(grad_output, self_or_result, self_or_result.dtype)


def _wide_math_dtype(dtype: torch.dtype) -> torch.dtype:
    """The kernels' arithmetic for SiLU and squared ReLU: float for the 16-bit types, double otherwise."""
    return torch.float32 if dtype.itemsize == 2 else torch.float64


def _squared_relu_value(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Squared ReLU in the kernels' arithmetic, where x^2 is exact; NaN passes."""
    xm = x.to(_wide_math_dtype(dtype))
    return torch.where(xm <= 0, 0.0, xm * xm)


def _squared_relu_gradient(grad: torch.Tensor, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``2 x grad`` in the kernels' arithmetic (x grad first), 0 wherever x <= 0 (whatever grad is), NaN where x is."""
    math = _wide_math_dtype(dtype)
    xm = x.to(math)
    return torch.where(xm <= 0, 0.0, xm * grad.to(math) * 2)


def _terms_from(negative: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``sigmoid_terms_from`` (kernels/activations.h): 1 + t and the numerators of sigmoid(v) and 1 - sigmoid(v) over
    it, from t = exp(-|v|) and v's sign."""
    return 1 + t, torch.where(negative, t, 1.0), torch.where(negative, 1.0, t)


def _sigmoid_terms(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """``sigmoid_terms`` for storage ``dtype``: ``_terms_from`` with t = exp(-|x|) by ``_exp_nonpositive``; None where
    that is."""
    t = _exp_nonpositive(torch.where(x < 0, x, -x), dtype)
    return None if t is None else _terms_from(x < 0, t)


def _silu_value(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """SiLU in the kernel's arithmetic: in double torch's ``x / (1 + exp(-x))`` (on CUDA: libdevice's exp against
    CUDA's, within the ulp bounds; on the CPU the kernel's exp is Sleef's), in float (16-bit types) ``x`` times
    sigmoid's terms."""
    xm = x.to(_wide_math_dtype(dtype))
    if xm.dtype == torch.float64:
        return None if _kernels_of(x) == "cpu" else xm / (1 + torch.exp(-xm))
    denominator, sigmoid_numerator, _ = _sigmoid_terms(xm, dtype)
    return xm * sigmoid_numerator / denominator


def _silu_gradient(grad: torch.Tensor, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """``grad * sigmoid(x) * (1 + x * (1 - sigmoid(x)))`` from sigmoid's terms over one division, ``s (D + x c) /
    D^2``, in the kernel's arithmetic (double on the CPU calls Sleef's exp). The float64 kernel divides twice: on
    CUDA this is held to its bounds."""
    xm = x.to(_wide_math_dtype(dtype))
    terms = _sigmoid_terms(xm, dtype)
    if terms is None:
        return None
    denominator, sigmoid_numerator, complement_numerator = terms
    slope = sigmoid_numerator * (denominator + xm * complement_numerator) / (denominator * denominator)
    return grad.to(xm.dtype) * slope


def _rounded(value: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
    """A math-type ``value`` rounded as the kernels round it: to the compute type, then ``dtype`` (NotImplemented for
    None: the op stays a call to its kernel)."""
    return NotImplemented if value is None else value.to(_compute_dtype(dtype)).to(dtype)


def silu(x: torch.Tensor) -> torch.Tensor:
    """``act::silu`` in the kernel's arithmetic (on the CPU in double a call)."""
    return _rounded(_silu_value(x, x.dtype), x.dtype)


def silu_backward(grad_output: torch.Tensor, self_or_result: torch.Tensor, *, is_result: bool = False) -> torch.Tensor:
    """``act::silu_backward`` from the input in the kernel's arithmetic (from the result the kernel refuses, and so
    stays a call; so does double on the CPU)."""
    dtype = self_or_result.dtype
    if is_result:
        return NotImplemented
    return _rounded(_silu_gradient(grad_output.to(_compute_dtype(dtype)), self_or_result, dtype), dtype)


def _gelu_decomposes(x: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether a GELU decomposition applies to storage ``dtype`` (not float64, whose kernels carry the arguments to
    twice double's precision). On CUDA generated code repeats the kernels' arithmetic (double; float for the 16-bit
    types), within the ulp bounds where it calls libdevice's exp against CUDA's; on the CPU erf-GELU repeats the
    kernels' erfc and exp step for step, while gelu_tanh's float32 kernel takes Sleef's exp there, which generated
    code does not call."""
    if dtype == torch.float64:
        return False
    return _kernels_of(x) == "cuda" or (_kernels_of(x) == "cpu" and dtype.itemsize == 2)


def _erf_gelu_decomposes(x: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether erf-GELU's decomposition applies: as any GELU's, and on the CPU in float32 too."""
    return _gelu_decomposes(x, dtype) or (_kernels_of(x) == "cpu" and dtype == torch.float32)


def _gelu_math(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` in the GELU kernels' arithmetic for storage ``dtype``: float for the 16-bit types, double otherwise."""
    return x.to(torch.float32 if dtype.itemsize == 2 else torch.float64)


def _gelu_exp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """exp of ``x`` <= 0 as the GELU kernels take it: on the CPU ``exp_nonpositive_series`` in x's arithmetic; on CUDA
    in float (the 16-bit types) the kernels' float exp (``exp_nonpositive``), in double libdevice's against the
    kernels' table form (``exp_by_table``), within the ulp bounds."""
    if _kernels_of(x) == "cpu":
        return _exp_arithmetic(x, for_16_bit=dtype.itemsize == 2)
    return torch.exp(x) if x.dtype == torch.float64 else _exp_nonpositive(x, dtype)


def _gelu_value(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """GELU, ``x erfc(-x / sqrt 2) / 2`` (CUDA and CPU, float32 and 16-bit; else None)."""
    if not _erf_gelu_decomposes(x, dtype):
        return None
    xm = _gelu_math(x, dtype)
    exp_half_square = _gelu_exp(-0.5 * (xm * xm), dtype) if xm.dtype == torch.float64 else None
    return xm * _normal_cdf_arithmetic(xm, dtype, exp_half_square)


def _gelu_gradient(grad: torch.Tensor, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """``grad (Phi(x) + x phi(x))`` (CUDA and CPU, float32 and 16-bit; else None)."""
    if not _erf_gelu_decomposes(x, dtype):
        return None
    xm = _gelu_math(x, dtype)
    exp_half_square = _gelu_exp(-0.5 * (xm * xm), dtype)
    cdf = _normal_cdf_arithmetic(xm, dtype, exp_half_square)
    return grad.to(xm.dtype) * (cdf + xm * exp_half_square * (1 / math.sqrt(2 * math.pi)))


def _x_sigmoid_math(
    name: str,
    argument: Callable[[torch.Tensor], torch.Tensor],
    argument_slope: Callable[[torch.Tensor], torch.Tensor],
    float_range: float,
) -> tuple[Callable[..., torch.Tensor | None], Callable[..., torch.Tensor | None]]:
    """The value and gradient of ``x sigmoid(v)``, v = ``argument(x)`` with dv/dx = ``argument_slope(x)`` (XSigmoidMath
    in kernels/activations.h; CUDA, float32 and 16-bit, else None): the value ``x s / D`` and the gradient over one
    division, ``s (D + x v' c) / D^2``, from sigmoid's terms of v, t = exp(-|v|). In float the slope's arithmetic
    takes finite x beyond +-``float_range`` there (sigmoid's terms take x as it is: exp(-|v|) is 0 beyond)."""

    def terms(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        v = argument(x)
        return _terms_from(v < 0, _gelu_exp(-v.abs(), dtype))

    def value(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
        if not _gelu_decomposes(x, dtype):
            return None
        xm = _gelu_math(x, dtype)
        denominator, sigmoid_numerator, _ = terms(xm, dtype)
        return xm * sigmoid_numerator / denominator

    def gradient(grad: torch.Tensor, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
        if not _gelu_decomposes(x, dtype):
            return None
        x_in = _gelu_math(x, dtype)
        denominator, sigmoid_numerator, complement_numerator = terms(x_in, dtype)
        xm = x_in
        if xm.dtype != torch.float64:
            beyond = torch.where(xm < 0, -float_range, float_range)
            xm = torch.where((xm.abs() <= float_range) | ~xm.isfinite(), xm, beyond)
        slope = argument_slope(xm)
        gradient = sigmoid_numerator * (denominator + xm * slope * complement_numerator) / (denominator * denominator)
        return grad.to(xm.dtype) * gradient

    value.__name__ = value.__qualname__ = f"_{name}_value"
    gradient.__name__ = gradient.__qualname__ = f"_{name}_gradient"
    return value, gradient


def _gelu_tanh_slope(x: torch.Tensor) -> torch.Tensor:
    """v' = 2 sqrt(2 / pi) (1 + 3 * 0.044715 x^2), 3 * 0.044715 in the math type as the kernel folds it (in float:
    float(3 * float(0.044715)))."""
    cubic3 = 3 * GELU_TANH_CUBIC if x.dtype == torch.float64 else _to_float32(3 * _to_float32(GELU_TANH_CUBIC))
    return GELU_TANH_SCALE * (1 + cubic3 * (x * x))


# gelu_tanh: v = 2 sqrt(2 / pi) (x + 0.044715 x^3) (bfloat16's x^3 overflows float past 20); quick GELU: v = 1.702 x.
_gelu_tanh_value, _gelu_tanh_gradient = _x_sigmoid_math(
    "gelu_tanh", lambda x: GELU_TANH_SCALE * (x + GELU_TANH_CUBIC * (x * x * x)), _gelu_tanh_slope, 20.0
)
_quick_gelu_value, _quick_gelu_gradient = _x_sigmoid_math(
    "quick_gelu", lambda x: QUICK_GELU_SLOPE * x, lambda x: QUICK_GELU_SLOPE, 100.0
)


# An activation's value and gradient in its math type, from (x, storage dtype) and (grad, x, storage dtype): None
# where no decomposition applies.
Value = Callable[[torch.Tensor, torch.Tensor], torch.Tensor | None]
Gradient = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor | None]


def _from_input(
    name: str, value: Value, gradient: Gradient
) -> tuple[Callable[[torch.Tensor], torch.Tensor], Callable[..., torch.Tensor]]:
    """``act::<name>`` and ``act::<name>_backward`` (from the input) for an activation whose gradient needs its input,
    each its math-type ``value`` or ``gradient`` rounded once; where that is None, and for the gradient from the
    result, which the kernel refuses, NotImplemented (a call)."""

    def forward(x: torch.Tensor) -> torch.Tensor:
        return _rounded(value(x, x.dtype), x.dtype)

    def backward(grad_output: torch.Tensor, self_or_result: torch.Tensor, *, is_result: bool = False) -> torch.Tensor:
        if is_result:
            return NotImplemented
        return _rounded(gradient(grad_output, self_or_result, self_or_result.dtype), self_or_result.dtype)

    for function, op in ((forward, name), (backward, f"{name}_backward")):
        function.__name__ = function.__qualname__ = op
        function.__doc__ = f"``act::{op}`` in the kernels' arithmetic, rounded once where it applies (else a call)."
    return forward, backward


# GELU's and quick GELU's (CUDA, float32 and 16-bit; else a call) and squared ReLU's.
gelu, gelu_backward = _from_input("gelu", _gelu_value, _gelu_gradient)
gelu_tanh, gelu_tanh_backward = _from_input("gelu_tanh", _gelu_tanh_value, _gelu_tanh_gradient)
squared_relu, squared_relu_backward = _from_input("squared_relu", _squared_relu_value, _squared_relu_gradient)
quick_gelu, quick_gelu_backward = _from_input("quick_gelu", _quick_gelu_value, _quick_gelu_gradient)


# The gated forms, act(gate) * up: the activation's value times up and its gradient at grad * up in its math type,
# each rounded once, as the kernels' GatedForward and GatedBackward.
def _gated_pair(value: Value) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def pair(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        acc = _compute_dtype(gate.dtype)
        v = value(gate.to(acc), gate.dtype)
        return NotImplemented if v is None else _rounded(v * up.to(v.dtype), gate.dtype)

    return pair


def _gated_pair_backward(value: Value, gradient: Gradient) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    def pair_backward(grad_output: torch.Tensor, gate: torch.Tensor, up: torch.Tensor) -> tuple:
        dtype, acc = gate.dtype, _compute_dtype(gate.dtype)
        v = value(gate.to(acc), dtype)
        if v is None:
            return NotImplemented
        g = grad_output.to(acc).to(v.dtype)
        d_gate = gradient(g * up.to(acc).to(v.dtype), gate.to(acc), dtype)
        return NotImplemented if d_gate is None else (_rounded(d_gate, dtype), _rounded(g * v, dtype))

    return pair_backward


def _halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:]


def _gated_decompositions(gated_ops: object, value: Value, gradient: Gradient) -> dict:
    """A gated activation's decompositions: its two-tensor forms, and its merged ones over the halves of x."""
    pair, pair_backward = _gated_pair(value), _gated_pair_backward(value, gradient)

    def merged(x: torch.Tensor) -> torch.Tensor:
        return pair(*_halves(x))

    def merged_backward(grad_output: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        # Over x viewed as [..., 2, d], each half's gradient where its row is, by a where, not a cat: Inductor stores
        # a cat's inputs first once their arithmetic passes its size threshold (SiLU's and GELU's do), a second
        # kernel; a where of one shape stays one.
        halves = x.unflatten(-1, (2, x.shape[-1] // 2))
        gate, up = halves[..., :1, :].expand(halves.shape), halves[..., 1:, :].expand(halves.shape)
        grads = pair_backward(grad_output.unsqueeze(-2).expand(halves.shape), gate, up)
        if grads is NotImplemented:
            return NotImplemented
        is_gate_row = torch.arange(2, device=x.device).unsqueeze(-1) == 0
        merged_grads = torch.where(is_gate_row, *grads).flatten(-2)
        # Laid out as the kernel lays it out, as x where x is dense (empty_like).
        return torch.ops.aten.copy.default(torch.empty_like(x), merged_grads)

    return {
        gated_ops.merged: merged,
        gated_ops.merged_backward: merged_backward,
        gated_ops.pair: pair,
        gated_ops.pair_backward: pair_backward,
    }


_GATED_MATH = {
    "relu": (_relu_value, _relu_gradient),
    "silu": (_silu_value, _silu_gradient),
    "gelu": (_gelu_value, _gelu_gradient),
    "gelu_tanh": (_gelu_tanh_value, _gelu_tanh_gradient),
    "squared_relu": (_squared_relu_value, _squared_relu_gradient),
    "quick_gelu": (_quick_gelu_value, _quick_gelu_gradient),
}


# What each act op decomposes to; the in-place and out= forms reach Inductor as these (C++ functionalization).
DECOMPOSITIONS = {
    torch.ops.act.selu.default: selu,
    torch.ops.act.selu_backward.default: selu_backward,
    torch.ops.act.relu.default: relu,
    torch.ops.act.relu_backward.default: relu_backward,
    torch.ops.act.silu.default: silu,
    torch.ops.act.silu_backward.default: silu_backward,
    torch.ops.act.gelu.default: gelu,
    torch.ops.act.gelu_backward.default: gelu_backward,
    torch.ops.act.gelu_tanh.default: gelu_tanh,
    torch.ops.act.gelu_tanh_backward.default: gelu_tanh_backward,
    torch.ops.act.squared_relu.default: squared_relu,
    torch.ops.act.squared_relu_backward.default: squared_relu_backward,
    torch.ops.act.quick_gelu.default: quick_gelu,
    torch.ops.act.quick_gelu_backward.default: quick_gelu_backward,
}
for _gated in GATED.values():
    DECOMPOSITIONS.update(_gated_decompositions(_gated.ops, *_GATED_MATH[_gated.activation.name]))
