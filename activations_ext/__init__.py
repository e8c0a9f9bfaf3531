"""Fast, exact SELU and ReLU as PyTorch operators (``torch.ops.act.*``), and SELU fused with AlphaDropout.

Importing the package loads the compiled extension, whose C++ registers the ops, their
CPU/CUDA kernels and their autograd; this package adds the fake (meta) kernels that
``torch.compile`` needs, the decompositions through which Inductor fuses the ops with their
neighbours (``set_inductor_fusion`` turns that off), and the Python API below.
"""

import importlib
import os

import torch

from activations_ext._version_check import check_torch_version, missing_build

try:
    _build_info = importlib.import_module(f"{__name__}._build_info")
    # Before loading _C, which would fail obscurely.
    check_torch_version(torch.__version__, _build_info.TORCH_VERSION)
    # Imported by name, so that a missing module is a ModuleNotFoundError (`from activations_ext import _C` would
    # raise a plain ImportError about a circular import).
    _C = importlib.import_module(f"{__name__}._C")  # its C++ registers the ops
except ModuleNotFoundError as error:  # not the version check's ImportError, which says what to do itself
    raise missing_build(os.path.dirname(__file__)) from error
from activations_ext import _fake  # noqa: E402, F401  (imported for its registrations)

if torch.distributed.is_available():
    from activations_ext import _sharding

    _sharding.register()
from activations_ext import init  # noqa: E402
from activations_ext._inductor import inductor_fusion_enabled, set_inductor_fusion  # noqa: E402
from activations_ext.functional import relu, selu, selu_alpha_dropout  # noqa: E402
from activations_ext.modules import SELU, ReLU, SELUAlphaDropout  # noqa: E402

__all__ = [
    "SELU",
    "ReLU",
    "SELUAlphaDropout",
    "inductor_fusion_enabled",
    "init",
    "relu",
    "selu",
    "selu_alpha_dropout",
    "set_inductor_fusion",
]
__version__ = "0.1.0"
