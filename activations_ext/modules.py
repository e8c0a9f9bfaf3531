"""``nn.Module`` drop-ins for ``torch.nn.SELU`` and ``torch.nn.ReLU``, and for ``torch.nn.SELU`` followed by
``torch.nn.AlphaDropout``."""

from collections.abc import Callable

import torch
from torch import nn

from activations_ext.functional import relu, selu, selu_alpha_dropout


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


class SELU(_Activation):
    """Applies :func:`activations_ext.selu` elementwise, like ``torch.nn.SELU``.

    Args:
        inplace: overwrite the input with the result.
    """

    function = staticmethod(selu)


class ReLU(_Activation):
    """Applies :func:`activations_ext.relu` elementwise, like ``torch.nn.ReLU``.

    Args:
        inplace: overwrite the input with the result.
    """

    function = staticmethod(relu)


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
