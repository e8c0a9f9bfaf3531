"""DTensor sharding rules for the ``act`` ops, so they run under tensor parallelism and FSDP2.

Every op is elementwise: a ``Shard(d)`` or ``Replicate`` input keeps its placement and each rank runs the
kernel on its local shard, with no communication. No rule accepts ``Partial``: the activations are not
linear, so DTensor reduces a partial input (to ``Replicate``) before the op; an in-place op cannot change
its input's placement, so it refuses one; nor can ``out=``, whose placement the input is moved to. Ops
with several tensors take them on one placement, and DTensor redistributes operands that differ.

The gated ops: the two-tensor forms are elementwise in (gate, up) and take every placement as above. The merged
forms read gate and up as the halves of x's last dimension, which a shard of that dimension splits apart: they take
Replicate and Shard along any other dimension, and DTensor redistributes an x sharded along its last dimension (to
Replicate, as the cheapest accepted placement) before the op; a merged out= sharded along its last dimension is
refused.

``selu_alpha_dropout`` in train mode refuses DTensors: each rank would draw its shard's mask from its own
generator, so shards of one tensor could repeat each other's masks and replicas could disagree. In eval
mode it is ``selu`` and follows selu's rule.
"""

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.experimental import register_sharding

from activations_ext.catalog import ACTIVATIONS, GATED

if TYPE_CHECKING:  # the spec DTensor hands a sharding rule in place of each tensor
    from torch.distributed.tensor._dtensor_spec import DTensorSpec


def _same_placement_everywhere(
    ndim: int, tensors: int, outputs: int = 1, sharded_dims: int | None = None
) -> list[tuple[list, list]]:
    """Every output and tensor operand on one placement: Replicate, or Shard along any of the first ``sharded_dims``
    dimensions (all of them by default)."""
    placements = [Replicate(), *(Shard(d) for d in range(ndim if sharded_dims is None else sharded_dims))]
    return [([p] * outputs, [p] * tensors) for p in placements]


def _out_rules(op: torch._ops.OpOverload, last_dim_sharded: bool = True) -> Callable[..., list]:
    """The rule of an ``out=`` overload: ``out`` keeps its mesh and placement, and the inputs are redistributed to it
    (a merged gated op's out may not be sharded along its last dimension: ``last_dim_sharded=False``)."""

    def rules(*inputs: "DTensorSpec", out: "DTensorSpec") -> list:
        for x in inputs:
            if out.mesh != x.mesh:
                raise RuntimeError(
                    f"{op}: out is on the DeviceMesh of ranks {out.mesh.mesh.tolist()} but the input is on "
                    f"{x.mesh.mesh.tolist()}; use one DeviceMesh"
                )
        if any(p.is_partial() for p in out.placements):
            raise RuntimeError(f"{op}: out is Partial; the activation is not linear, so its result cannot be partial")
        if not last_dim_sharded and any(p.is_shard(out.ndim - 1) for p in out.placements):
            raise RuntimeError(
                f"{op}: out is sharded along its last dimension, which splits the gate and up halves of the input "
                "apart; shard it along another dimension or replicate it"
            )
        return [([p], [p] * (len(inputs) + 1)) for p in dict.fromkeys(out.placements)]

    return rules


def _key_cache_on_out(op: torch._ops.OpOverload) -> None:
    """Makes DTensor's sharding cache tell ``out`` specs apart, as it does for ATen's own ``out=`` ops.

    ``register_sharding`` keys the cache on positional operands only, so a call whose ``out`` has another
    placement or mesh than an earlier call's would reuse that call's plan.
    """
    propagator = DTensor._op_dispatcher.sharding_propagator
    info = propagator.op_to_schema_info[op]
    propagator.op_to_schema_info[op] = dataclasses.replace(info, static_kwargkey=[*(info.static_kwargkey or []), "out"])


def _refuse_random(op: str) -> Callable[..., list]:
    """The rule of a random op: an error that says why and what to do instead."""

    def rules(*args: object, **kwargs: object) -> list:
        raise RuntimeError(
            f"act.{op}: train mode does not take a DTensor: every rank would draw its mask from its own generator, "
            "so the masks of different shards could repeat and replicas could disagree. Call it on the local "
            "tensor (DTensor.to_local()) with a generator seeded per rank, or in eval mode."
        )

    return rules


def register() -> None:
    """Registers the rules for every op and overload."""
    act = torch.ops.act
    for activation in ACTIVATIONS.values():
        ops = activation.ops
        for op in (ops.forward, ops.inplace):
            register_sharding(op)(lambda x: _same_placement_everywhere(x.ndim, 1))
        register_sharding(ops.out)(_out_rules(ops.out))
        _key_cache_on_out(ops.out)
        register_sharding(ops.backward)(
            lambda grad_output, saved, is_result=True: _same_placement_everywhere(saved.ndim, 2)
        )
    for gated in GATED.values():
        ops = gated.ops
        register_sharding(ops.merged)(lambda x: _same_placement_everywhere(x.ndim, 1, sharded_dims=x.ndim - 1))
        register_sharding(ops.merged_backward)(
            lambda grad_output, x: _same_placement_everywhere(x.ndim, 2, sharded_dims=x.ndim - 1)
        )
        register_sharding(ops.pair)(lambda gate, up: _same_placement_everywhere(gate.ndim, 2))
        register_sharding(ops.pair_backward)(
            lambda grad_output, gate, up: _same_placement_everywhere(gate.ndim, 3, outputs=2)
        )
        register_sharding(ops.merged_out)(_out_rules(ops.merged_out, last_dim_sharded=False))
        register_sharding(ops.pair_out)(_out_rules(ops.pair_out))
        for out in (ops.merged_out, ops.pair_out):
            _key_cache_on_out(out)
    register_sharding(act._selu_alpha_dropout.default)(_refuse_random("selu_alpha_dropout"))
    register_sharding(act.selu_alpha_dropout_backward.default)(_refuse_random("selu_alpha_dropout_backward"))
