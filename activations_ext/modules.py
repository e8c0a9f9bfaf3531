"""``nn.Module`` drop-ins for ``torch.nn.SELU`` and ``torch.nn.ReLU``."""

from collections.abc import Callable

import torch
from torch import nn

from activations_ext.functional import relu, selu


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
