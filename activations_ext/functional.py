"""Functional API: a drop-in for each activation's ``torch.nn.functional`` counterpart (or one with its conventions,
where torch has none), with its signature (``input``, ``inplace``), made from the catalog; ``gelu`` (``input``,
``approximate``); the gated forms (``silu_and_mul(x)`` and ``silu_mul(gate, up)``, ``gelu_and_mul`` and ``gelu_mul``
with ``approximate``, ...); and ``selu_alpha_dropout``."""

from collections.abc import Callable

import torch

from activations_ext.catalog import ACTIVATIONS, GATED, Gated


def _check_input(name: str, input: object) -> None:  # noqa: A002  (torch.nn.functional's name)
    # The dispatcher would say "no tensor arguments" for None and "failed to match any schema" for a list;
    # say what torch.nn.functional says instead.
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _elementwise(name: str, summary: str) -> Callable[[torch.Tensor, bool], torch.Tensor]:
    """The functional form of the activation ``torch.ops.act.<name>``, with torch.nn.functional's signature."""
    forward, inplace_forward = ACTIVATIONS[name].ops.forward, ACTIVATIONS[name].ops.inplace

    def activation(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:  # noqa: A002
        _check_input(name, input)
        return inplace_forward(input) if inplace else forward(input)

    activation.__name__ = activation.__qualname__ = name
    activation.__doc__ = f"""{summary}

    Args:
        input: a float32, float64, float16 or bfloat16 tensor on the CPU or a CUDA device, any shape and layout.
        inplace: overwrite ``input`` with the result and return it.

    Returns:
        A new tensor laid out like ``input``, or ``input`` itself when ``inplace``.

    Raises:
        TypeError: ``input`` is not a tensor, or not of a supported dtype.
    """
    return activation


# One functional drop-in per activation of the catalog: activations_ext.selu, activations_ext.relu, ...
for _name, _activation in ACTIVATIONS.items():
    if _activation.drop_in:
        globals()[_name] = _elementwise(_name, _activation.summary)


def gelu(input: torch.Tensor, approximate: str = "none") -> torch.Tensor:  # noqa: A002
    """GELU, ``x Phi(x)`` with Phi the standard normal CDF, or with ``approximate="tanh"`` its tanh approximation
    ``x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2``: ``torch.nn.functional.gelu``'s signature.

    Both are computed without the cancellation of torch's ``1 + erf`` and ``1 + tanh`` for negative x (from erfc
    and from a sigmoid).

    Args:
        input: a float32, float64, float16 or bfloat16 tensor on the CPU or a CUDA device, any shape and layout.
        approximate: ``"none"`` (``torch.ops.act.gelu``) or ``"tanh"`` (``torch.ops.act.gelu_tanh``).

    Returns:
        A new tensor laid out like ``input``.

    Raises:
        TypeError: ``input`` is not a tensor, or not of a supported dtype.
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.
    """
    _check_input("gelu", input)
    return torch.ops.act.gelu(input, approximate=approximate)


_MERGED_DOC = """{summary}

    Args:
        input: ``[..., 2d]``, gate in ``input[..., :d]`` and up in ``input[..., d:]`` (the output of a fused gate/up
            projection), float32, float64, float16 or bfloat16 on the CPU or a CUDA device, any strides.{extra}
        out: where to write the ``[..., d]`` result (of input's dtype and device), or None for a new tensor.

    Returns:
        ``act(input[..., :d]) * input[..., d:]``, computed in one pass and rounded once.

    Raises:
        TypeError: ``input`` is not a tensor, or not of a supported dtype.
        RuntimeError: ``input``'s last dimension is odd, or ``out`` does not match the result.{raises}
    """

_PAIR_DOC = """{summary}

    Args:
        gate: the activation's input, float32, float64, float16 or bfloat16 on the CPU or a CUDA device, any shape
            and strides.
        up: the other factor, of gate's shape, dtype and device.{extra}
        out: where to write the result (of gate's shape, dtype and device), or None for a new tensor.

    Returns:
        ``act(gate) * up``, computed in one pass and rounded once; under autograd both gradients come from one
        kernel.

    Raises:
        TypeError: ``gate`` or ``up`` is not a tensor, or not of a supported dtype.
        RuntimeError: ``gate`` and ``up`` (or ``out``) differ in shape, dtype or device.{raises}
    """


def _gated_summary(gated: Gated) -> str:
    return f"{gated.variant}'s gating, ``{gated.activation.name}(gate) * up``: {gated.activation.summary}"


def _merged(gated: Gated) -> Callable[..., torch.Tensor]:
    """The functional form of ``torch.ops.act.<name>_and_mul``."""
    ops, name = gated.ops, gated.name

    def merged(input: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:  # noqa: A002
        _check_input(name, input)
        return ops.merged(input) if out is None else ops.merged_out(input, out=out)

    merged.__name__ = merged.__qualname__ = name
    merged.__doc__ = _MERGED_DOC.format(summary=_gated_summary(gated), extra="", raises="")
    return merged


def _pair(gated: Gated) -> Callable[..., torch.Tensor]:
    """The functional form of ``torch.ops.act.<name>_mul``."""
    ops, name = gated.ops, gated.pair_name

    def pair(gate: torch.Tensor, up: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
        _check_input(name, gate)
        return ops.pair(gate, up) if out is None else ops.pair_out(gate, up, out=out)

    pair.__name__ = pair.__qualname__ = name
    pair.__doc__ = _PAIR_DOC.format(summary=_gated_summary(gated), extra="", raises="")
    return pair


# The gated forms of each drop-in activation: activations_ext.silu_and_mul, activations_ext.silu_mul, ...
for _gated in GATED.values():
    if _gated.activation.drop_in:
        globals()[_gated.name] = _merged(_gated)
        globals()[_gated.pair_name] = _pair(_gated)

# GELU's gated forms by torch's ``approximate``: those of act.gelu and of act.gelu_tanh.
_GELU_GATED = {"none": GATED["gelu_and_mul"], "tanh": GATED["gelu_tanh_and_mul"]}
_GELU_MERGED = {approximate: _merged(gated) for approximate, gated in _GELU_GATED.items()}
_GELU_PAIR = {approximate: _pair(gated) for approximate, gated in _GELU_GATED.items()}


def _by_approximate(forms: dict[str, Callable[..., torch.Tensor]], op: str, approximate: str) -> Callable:
    if approximate not in forms:
        raise ValueError(f'act.{op}: expected approximate "none" or "tanh", but got "{approximate}"')
    return forms[approximate]


_GELU_ARG = """
        approximate: ``"none"`` (GELU) or ``"tanh"`` (its tanh approximation), as ``torch.nn.functional.gelu``."""
_GELU_RAISES = """
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``."""


def gelu_and_mul(
    input: torch.Tensor,  # noqa: A002
    approximate: str = "none",
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    return _by_approximate(_GELU_MERGED, "gelu_and_mul", approximate)(input, out=out)


def gelu_mul(
    gate: torch.Tensor, up: torch.Tensor, approximate: str = "none", *, out: torch.Tensor | None = None
) -> torch.Tensor:
    return _by_approximate(_GELU_PAIR, "gelu_mul", approximate)(gate, up, out=out)


_GELU_SUMMARY = "GeGLU's gating, ``gelu(gate, approximate) * up``: GELU from erfc or from a sigmoid (no cancellation)."
gelu_and_mul.__doc__ = _MERGED_DOC.format(summary=_GELU_SUMMARY, extra=_GELU_ARG, raises=_GELU_RAISES)
gelu_mul.__doc__ = _PAIR_DOC.format(summary=_GELU_SUMMARY, extra=_GELU_ARG, raises=_GELU_RAISES)


def selu_alpha_dropout(
    input: torch.Tensor,  # noqa: A002
    p: float = 0.5,
    training: bool = False,
    *,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``alpha_dropout(selu(input), p, training)`` in one pass: the activation and dropout of a self-normalizing
    network, with ``torch.nn.functional.alpha_dropout``'s signature and constants.

    In training, each element is kept with probability ``1 - p`` (a Philox stream of the generator's seed and
    offset on CUDA, as torch's own dropout draws it; a fresh key from the CPU generator on the CPU) and kept
    values are scaled and shifted so that mean 0 and variance 1 stay so. The backward replays the mask from
    the saved (seed, offset) instead of storing it. Out of training, or at ``p = 0``, it is ``selu``.

    Args:
        input: a float32, float64, float16 or bfloat16 tensor on the CPU or a CUDA device, any shape and layout.
        p: the probability of dropping an element, in [0, 1].
        training: apply dropout (else SELU alone).
        generator: the generator to draw from; the device's default one when None.

    Returns:
        A new tensor laid out like ``input``.

    Raises:
        TypeError: ``input`` is not a tensor, or not of a supported dtype.
        ValueError: ``p`` is outside [0, 1].
    """
    _check_input("selu_alpha_dropout", input)
    return torch.ops.act.selu_alpha_dropout(input, p, training, generator=generator)
