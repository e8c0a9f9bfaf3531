"""LeCun-normal initialization, the weight initialization of self-normalizing networks.

Klambauer et al. 2017 ("Self-Normalizing Neural Networks") show that a stack of Linear layers followed by
SELU keeps its activations near mean 0 and variance 1 at any depth, provided each weight is drawn with mean 0
and variance ``1 / fan_in``: that makes mean 0, variance 1 the stable fixed point of each layer's mapping.
torch has no initializer for it by that name, and ``torch.nn.init.calculate_gain("selu")`` is 3/4, so
``kaiming_normal_(w, nonlinearity="selu")`` draws with variance ``(3/4)**2 / fan_in``: torch trades the
normalization for gradient flow there (its docs say so; pytorch/pytorch issue 54055), and in a deep SELU stack
the activations shrink layer by layer. ``lecun_normal_`` is ``kaiming_normal_`` with gain 1
(``nonlinearity="linear"``), the self-normalizing choice.
"""

import math
import warnings

import torch

__all__ = ["lecun_normal_"]

_MODES = ("fan_in", "fan_out")


def lecun_normal_(tensor: torch.Tensor, mode: str = "fan_in", generator: torch.Generator | None = None) -> torch.Tensor:
    """Fills ``tensor`` in place from N(0, 1 / fan), as ``torch.nn.init`` functions do.

    The fans are those of ``torch.nn.init._calculate_fan_in_and_fan_out``: for a weight of shape
    ``(out, in, *kernel)`` (Linear, ConvNd), ``fan_in = in * prod(kernel)`` and ``fan_out = out * prod(kernel)``.

    Args:
        tensor: a Linear or ConvNd weight (at least 2 dimensions); a parameter that requires grad is fine.
        mode: ``"fan_in"`` (the self-normalizing choice, which keeps the forward pass's variance) or
            ``"fan_out"`` (which keeps the backward pass's variance instead); case-insensitive, as in torch.
        generator: the generator to draw from; torch's default one for the tensor's device when None.

    Returns:
        ``tensor`` itself. A tensor with no elements comes back unchanged, with a warning, as in torch.

    Raises:
        ValueError: ``mode`` is neither ``"fan_in"`` nor ``"fan_out"``, or ``tensor`` has fewer than 2 dimensions.
    """
    if mode.lower() not in _MODES:
        raise ValueError(f"Mode {mode} not supported, please use one of {', '.join(_MODES)}")
    if tensor.dim() < 2:
        raise ValueError(
            f"lecun_normal_ needs a tensor of at least 2 dimensions (a Linear or ConvNd weight) to compute its "
            f"fans, but got shape {tuple(tensor.shape)}; initialize biases with zeros_ instead"
        )
    if tensor.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(tensor)
    fan = fan_in if mode.lower() == "fan_in" else fan_out
    with torch.no_grad():
        return tensor.normal_(0.0, 1.0 / math.sqrt(fan), generator=generator)
