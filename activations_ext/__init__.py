"""Fast, exact SELU, ReLU, SiLU and GELU as PyTorch operators (``torch.ops.act.*``), their gated forms (SwiGLU, GeGLU,
ReGLU), and SELU fused with AlphaDropout.

Importing the package loads the compiled extension, whose C++ registers the ops, their
CPU/CUDA kernels and their autograd; this package adds the fake (meta) kernels that
``torch.compile`` needs, the decompositions through which Inductor fuses the ops with their
neighbours (``set_inductor_fusion`` turns that off), and the Python API below.
"""

from activations_ext import _version_check


def _load_extension() -> object:
    """The compiled module, whose C++ registers the ops, after checking it was built against this torch."""
    import importlib
    import os

    import torch

    try:
        build_info = importlib.import_module(f"{__name__}._build_info")
        # Before loading _C, which would fail obscurely.
        _version_check.check_torch_version(torch.__version__, build_info.TORCH_VERSION)
        # Imported by name, so that a missing module is a ModuleNotFoundError (`from activations_ext import _C`
        # would raise a plain ImportError about a circular import).
        return importlib.import_module(f"{__name__}._C")
    except ModuleNotFoundError as error:  # not the version check's ImportError, which says what to do itself
        raise _version_check.missing_build(os.path.dirname(__file__)) from error


def _register_sharding_rules() -> None:
    """DTensor's rules for the ops, where this torch has torch.distributed."""
    import torch

    if torch.distributed.is_available():
        from activations_ext import _sharding

        _sharding.register()


_C = _load_extension()
from activations_ext import catalog  # noqa: E402


def _check_catalog_describes(built: tuple[str, ...]) -> None:
    """The activations the build registers (``_C.activations()``) are the catalog's, in its order."""
    if tuple(catalog.ACTIVATIONS) != built:
        raise ImportError(
            f"activations_ext: the compiled extension registers the activations {built}, but "
            f"activations_ext/catalog.py describes {tuple(catalog.ACTIVATIONS)}; rebuild, or describe each there"
        )


_check_catalog_describes(tuple(name for name, _ in _C.activations()))
if tuple(g.activation.name for g in catalog.GATED.values()) != tuple(name for name, _ in _C.gated()):
    raise ImportError(
        f"activations_ext: the compiled extension registers gated forms of {tuple(n for n, _ in _C.gated())}, but "
        "activations_ext/catalog.py's GATED describes others; rebuild, or describe each there"
    )
from activations_ext import _fake  # noqa: E402, F401  (imported for its registrations)

_register_sharding_rules()
from activations_ext import (  # noqa: E402
    functional,
    init,  # noqa: E402
    modules,
)
from activations_ext._inductor import inductor_fusion_enabled, set_inductor_fusion  # noqa: E402
from activations_ext.functional import selu_alpha_dropout  # noqa: E402
from activations_ext.modules import SELUAlphaDropout  # noqa: E402

# Each catalog activation's functional form (selu, relu, ...) and module (SELU, ReLU, ...).
_DROP_INS = [a for a in catalog.ACTIVATIONS.values() if a.drop_in]
for _activation in _DROP_INS:
    globals()[_activation.name] = getattr(functional, _activation.name)
    globals()[_activation.module_name] = getattr(modules, _activation.module_name)
# Each drop-in activation's gated forms (silu_and_mul, silu_mul, ...), and GELU's with torch's approximate.
_GATED_DROP_INS = [name for g in catalog.GATED.values() if g.activation.drop_in for name in (g.name, g.pair_name)]
for _name in _GATED_DROP_INS:
    globals()[_name] = getattr(functional, _name)
from activations_ext.functional import gelu, gelu_and_mul, gelu_mul  # noqa: E402
from activations_ext.modules import GELU, GatedMLP  # noqa: E402

__all__ = [
    *(activation.name for activation in _DROP_INS),
    *(activation.module_name for activation in _DROP_INS),
    *_GATED_DROP_INS,
    "GELU",
    "GatedMLP",
    "SELUAlphaDropout",
    "gelu",
    "gelu_and_mul",
    "gelu_mul",
    "inductor_fusion_enabled",
    "init",
    "selu_alpha_dropout",
    "set_inductor_fusion",
]
__version__ = "0.1.0"
