"""Functional API: drop-ins for ``torch.nn.functional.selu`` and ``torch.nn.functional.relu``."""

import torch


def selu(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """SELU, ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with torch's alpha and scale.

    Args:
        x: a float32, float64, float16 or bfloat16 tensor on the CPU or a CUDA device, any shape and layout.
        inplace: overwrite ``x`` with the result and return it.

    Returns:
        A new tensor laid out like ``x``, or ``x`` itself when ``inplace``.
    """
    return torch.ops.act.selu_.default(x) if inplace else torch.ops.act.selu.default(x)


def relu(x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """ReLU, ``max(0, x)``, passing NaN through as ``torch.relu`` does.

    Args:
        x: a float32, float64, float16 or bfloat16 tensor on the CPU or a CUDA device, any shape and layout.
        inplace: overwrite ``x`` with the result and return it.

    Returns:
        A new tensor laid out like ``x``, or ``x`` itself when ``inplace``.
    """
    return torch.ops.act.relu_.default(x) if inplace else torch.ops.act.relu.default(x)
