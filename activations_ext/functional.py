"""Functional API: a drop-in for each activation's ``torch.nn.functional`` counterpart, with its signature
(``input``, ``inplace``), made from the catalog; ``gelu`` (``input``, ``approximate``); and
``selu_alpha_dropout``."""

from collections.abc import Callable

import torch

from activations_ext.catalog import ACTIVATIONS


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
