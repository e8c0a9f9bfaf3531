"""DTensor sharding rules for the ``act`` ops, so they run under tensor parallelism and FSDP2.

Every op is elementwise: a ``Shard(d)`` or ``Replicate`` input keeps its placement and each rank runs the
kernel on its local shard, with no communication, also where a dimension has fewer elements than shards (the last
ranks' shards empty), as under DTensor's rules for torch's pointwise ops. No rule accepts ``Partial``: the
activations are not linear, so DTensor reduces a partial input (to ``Replicate``) before the op; an in-place op
cannot change its input's placement, so it refuses one; nor can ``out=``, whose placement the input is moved to. Ops
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

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor._op_schema import OpSchema, OpStrategy, RuntimeSchemaInfo, StrategyType, TupleStrategy
from torch.distributed.tensor._ops.utils import expand_to_full_mesh_op_strategy

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


# Inputs sharded along a dimension with fewer elements than shards keep their placement where the rules take it, as
# DTensor's rules for torch's pointwise ops keep it (torch 2.14 and later have the option). register_sharding's
# expansion has no such option: it moved those inputs to Replicate, and in-place and out= forms refused them.
_KEEP_UNEVEN_SHARDS = (
    {"allow_uneven_sharding": True}
    if "allow_uneven_sharding" in inspect.signature(expand_to_full_mesh_op_strategy).parameters
    else {}
)


def _spec(strategy: object) -> object:
    """What a rule takes in place of a tensor: its placement spec (a tuple of them for a list of tensors)."""
    if isinstance(strategy, OpStrategy):
        return strategy.strategies[0].output_spec
    if isinstance(strategy, TupleStrategy):
        return tuple(_spec(child) for child in strategy.children)
    return strategy


def _register(op: torch._ops.OpOverload, rules: Callable[..., list]) -> None:
    """Registers ``op``'s rules, in ``register_sharding``'s convention (the (output placements, input placements)
    it takes on one mesh dimension), expanded over every dimension of the mesh. DTensor's cache tells calls apart by
    ``out`` too, as it does for ATen's own ``out=`` ops."""

    def strategy(op_schema: OpSchema) -> StrategyType:
        acceptable = rules(
            *(_spec(arg) for arg in op_schema.args_schema),
            **{name: _spec(arg) for name, arg in op_schema.kwargs_schema.items()},
        )
        return expand_to_full_mesh_op_strategy(
            op_schema.get_mesh_from_args(),
            op_schema,
            [outputs + inputs for outputs, inputs in acceptable],
            input_index=len(op_schema.op._schema.returns),
            inplace_op=op_schema.is_inplace_op(),
            **_KEEP_UNEVEN_SHARDS,
        )

    static_kwargkey = ["out"] if any(argument.is_out for argument in op._schema.arguments) else None
    DTensor._op_dispatcher.sharding_propagator.register_op_strategy(
        op, strategy, RuntimeSchemaInfo(static_kwargkey=static_kwargkey, needs_pytree=True)
    )


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
            _register(op, lambda x: _same_placement_everywhere(x.ndim, 1))
        _register(ops.out, _out_rules(ops.out))
        _register(ops.backward, lambda grad_output, saved, is_result=True: _same_placement_everywhere(saved.ndim, 2))
    for gated in GATED.values():
        ops = gated.ops
        _register(ops.merged, lambda x: _same_placement_everywhere(x.ndim, 1, sharded_dims=x.ndim - 1))
        _register(
            ops.merged_backward, lambda grad_output, x: _same_placement_everywhere(x.ndim, 2, sharded_dims=x.ndim - 1)
        )
        _register(ops.pair, lambda gate, up: _same_placement_everywhere(gate.ndim, 2))
        _register(ops.pair_backward, lambda grad_output, gate, up: _same_placement_everywhere(gate.ndim, 3, outputs=2))
        _register(ops.merged_out, _out_rules(ops.merged_out, last_dim_sharded=False))
        _register(ops.pair_out, _out_rules(ops.pair_out))
    _register(act._selu_alpha_dropout.default, _refuse_random("selu_alpha_dropout"))
    _register(act.selu_alpha_dropout_backward.default, _refuse_random("selu_alpha_dropout_backward"))
