"""Fast, exact SELU and ReLU as PyTorch operators (``torch.ops.act.*``).

Importing the package loads the compiled extension, whose C++ registers the ops, their
CPU/CUDA kernels and their autograd; this package adds the fake (meta) kernels that
``torch.compile`` needs and the Python API below.
"""

import torch  # noqa: F401  (loads libtorch, which the extension links against, first)

from activations_ext import _C, _fake  # noqa: F401  (imported for their registrations)
from activations_ext.functional import relu, selu
from activations_ext.modules import SELU, ReLU

__all__ = ["SELU", "ReLU", "relu", "selu"]
__version__ = "0.1.0"
