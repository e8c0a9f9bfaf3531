"""DTensor sharding rules for the ``act`` ops, so they run under tensor parallelism and FSDP2.

Every op is elementwise: a ``Shard(d)`` or ``Replicate`` input keeps its placement and each rank runs the
kernel on its local shard, with no communication. No rule accepts ``Partial``: the activations are not
linear, so DTensor reduces a partial input (to ``Replicate``) before the op; an in-place op cannot change
its input's placement, so it refuses one. Ops with several tensors take them on one placement, and
DTensor redistributes operands that differ.
"""

import torch
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.experimental import register_sharding


def _same_placement_everywhere(ndim: int, tensors: int) -> list[tuple[list, list]]:
    """Output and every tensor operand on one placement: Replicate, or Shard along any dimension."""
    placements = [Replicate(), *(Shard(d) for d in range(ndim))]
    return [([p], [p] * tensors) for p in placements]


def register() -> None:
    """Registers the rules for every op and overload."""
    act = torch.ops.act
    for op in (act.selu.default, act.relu.default, act.selu_.default, act.relu_.default):
        register_sharding(op)(lambda x: _same_placement_everywhere(x.ndim, 1))
    for op in (act.selu.out, act.relu.out):
        register_sharding(op)(lambda x, out: _same_placement_everywhere(x.ndim, 2))
    for op in (act.selu_backward.default, act.relu_backward.default):
        register_sharding(op)(lambda grad_output, result: _same_placement_everywhere(result.ndim, 2))
