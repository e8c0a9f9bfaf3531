"""``nn.Module`` drop-ins: one for each activation's ``torch.nn`` counterpart, made from the catalog, ``GELU``, and
one for ``torch.nn.SELU`` followed by ``torch.nn.AlphaDropout``."""

from collections.abc import Callable

import torch
from torch import nn

from activations_ext import functional
from activations_ext.catalog import ACTIVATIONS, Activation
from activations_ext.functional import selu_alpha_dropout


class _Activation(nn.Module):
    """An elementwise activation with torch.nn's ``inplace`` option and repr."""

    function: Callable[[torch.Tensor, bool], torch.Tensor]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns the activation of ``x`` (``x`` itself, overwritten, when ``inplace``)."""
        return type(self).function(x, self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, as torch.nn's activations print it."""
        return "inplace=True" if self.inplace else ""


def _module(activation: Activation) -> type[_Activation]:
    """The ``nn.Module`` drop-in of a catalog activation, named as torch.nn names its own."""
    doc = f"""{activation.summary}

    Applies :func:`activations_ext.{activation.name}` elementwise, like ``torch.nn.{activation.module_name}``.

    Args:
        inplace: overwrite the input with the result.
    """
    namespace = {"function": staticmethod(getattr(functional, activation.name)), "__doc__": doc}
    return type(activation.module_name, (_Activation,), {"__module__": __name__, **namespace})


# One module per activation of the catalog: activations_ext.SELU, activations_ext.ReLU, ...
for _activation in ACTIVATIONS.values():
    if _activation.drop_in:
        globals()[_activation.module_name] = _module(_activation)


class GELU(nn.Module):
    """GELU, or with ``approximate="tanh"`` its tanh approximation: a drop-in for ``torch.nn.GELU``.

    Applies :func:`activations_ext.gelu` elementwise.

    Args:
        approximate: ``"none"`` or ``"tanh"``.
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns the GELU of ``x``."""
        return functional.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        """``approximate='tanh'`` as torch.nn.GELU prints it."""
        return f"approximate={self.approximate!r}"


class SELUAlphaDropout(nn.Module):
    """SELU then AlphaDropout, fused: a drop-in for ``nn.Sequential(nn.SELU(), nn.AlphaDropout(p))``.

    In training mode :func:`activations_ext.selu_alpha_dropout` (one pass, no stored mask); in eval mode SELU.

    Args:
        p: the probability of dropping an element, in [0, 1]. The default is a self-normalizing network's usual
            0.05 (Klambauer et al. use 0.05 to 0.1), not ``nn.AlphaDropout``'s 0.5.
    """

    def __init__(self, p: float = 0.05) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """SELU of ``x``, with alpha dropout in training mode."""
        return selu_alpha_dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        """``p=...``, as torch.nn's dropout modules print it."""
        return f"p={self.p}"
