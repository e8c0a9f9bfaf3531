"""Fusion under torch.compile: Inductor compiles the act ops as pointwise code it fuses with their neighbours.

The formulations live in ``activations_ext.decompositions``; this module hands them to Inductor, and is the
only one that touches Inductor's private state: its decomposition table (and the cached copy it keeps), the
fallback each op needs for when its decomposition declines, and an entry in its cache-key configuration.
``tests/test_inductor.py::test_inductor_internals_this_module_relies_on`` fails loudly if a torch release
changes any of them. Eager calls never come here: they keep the C++/CUDA kernels and C++ autograd.

Registration is lazy (importing Inductor costs over a second): the ops' fake kernels call ``prepare()``, so
it happens the first time an act op runs on fake tensors, which ``torch.compile`` does while tracing, before
Inductor compiles anything.
"""

import functools
import hashlib
import inspect
import os
from collections.abc import Callable

import torch

from activations_ext import decompositions

ENV_VAR = "ACT_INDUCTOR_FUSION"
# An entry in Inductor's `unsafe_marked_cacheable_functions`, whose values enter the key of Inductor's FX
# graph cache and of AOTAutograd's cache. Neither key sees the decomposition table, so without it a graph
# compiled with fusion off could be served to a compile with fusion on, or one from an older formulation.
_CACHE_KEY_ENTRY = "activations_ext.inductor_fusion"

_enabled: bool | None = None  # set_inductor_fusion's choice; None follows ACT_INDUCTOR_FUSION
_registered = False


def set_inductor_fusion(enabled: bool | None) -> None:
    """Turns fusion of the act ops under ``torch.compile`` on or off; ``None`` returns the choice to the
    ``ACT_INDUCTOR_FUSION`` environment variable (``0`` turns it off; on by default).

    Compiles that start afterwards follow it (``torch.compiler.reset()`` makes every function compile
    anew). Off, each act op is a call to its C++/CUDA kernel in the compiled code, as it was before fusion
    existed.
    """
    global _enabled
    _enabled = enabled
    if _registered:
        _update_cache_key()


def inductor_fusion_enabled() -> bool:
    """Whether compiles that start now fuse the act ops (see ``set_inductor_fusion``)."""
    if _enabled is not None:
        return _enabled
    return os.environ.get(ENV_VAR, "1") != "0"


def prepare() -> None:
    """Registers the decompositions with Inductor the first time it is called, and keeps the switch's state
    in Inductor's cache key. Called whenever an act op is traced with fake tensors."""
    global _registered
    if not _registered:
        _register()
        _registered = True
    _update_cache_key()


def _when_enabled(decomposition: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """The decomposition while fusion is on; declined (the op stays a kernel call) while it is off."""

    @functools.wraps(decomposition)
    def decompose(*args: torch.Tensor, **kwargs: object) -> torch.Tensor:
        return decomposition(*args, **kwargs) if inductor_fusion_enabled() else NotImplemented

    return decompose


def _register() -> None:
    from torch._inductor import decomposition, lowering
    from torch._library.utils import get_layout_constraint_tag

    for op, fn in decompositions.DECOMPOSITIONS.items():
        decomposition.decompositions[op] = _when_enabled(fn)
        # A declined op reaches Inductor as itself, and Inductor refuses to create an implicit fallback for
        # an op that has a decomposition: register the fallback it would otherwise create.
        layout = lowering.tag_to_layout_constraint(get_layout_constraint_tag(op, with_default=True))
        lowering.make_fallback(op, layout_constraint=layout, warn=False, override_decomp=True)
    decomposition.fast_random_decomps.cache_clear()  # the table in use is a cached copy of `decompositions`


@functools.cache
def _source_digest() -> str:
    return hashlib.sha256(inspect.getsource(decompositions).encode()).hexdigest()[:16]


def _update_cache_key() -> None:
    from torch._inductor import config

    value = f"{'on' if inductor_fusion_enabled() else 'off'}-{_source_digest()}"
    entries = config.unsafe_marked_cacheable_functions
    if entries.get(_CACHE_KEY_ENTRY) != value:
        config.unsafe_marked_cacheable_functions = {**entries, _CACHE_KEY_ENTRY: value}
