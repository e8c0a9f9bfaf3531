"""``nn.Module`` drop-ins for ``torch.nn.SELU`` and ``torch.nn.ReLU``."""

import torch
from torch import nn

from activations_ext.functional import relu, selu


class SELU(nn.Module):
    """Applies :func:`activations_ext.selu` elementwise, like ``torch.nn.SELU``.

    Args:
        inplace: overwrite the input with the result.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns ``selu(x)``."""
        return selu(x, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, as ``torch.nn.SELU`` prints it."""
        return "inplace=True" if self.inplace else ""


class ReLU(nn.Module):
    """Applies :func:`activations_ext.relu` elementwise, like ``torch.nn.ReLU``.

    Args:
        inplace: overwrite the input with the result.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns ``relu(x)``."""
        return relu(x, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set, as ``torch.nn.ReLU`` prints it."""
        return "inplace=True" if self.inplace else ""
