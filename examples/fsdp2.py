"""The same MLP block (Linear -> activations_ext.SELU -> Linear) under FSDP2 (``fully_shard``), next to one device.

Run: torchrun --nproc-per-node 2 examples/fsdp2.py
Uses NCCL on GPUs when there are enough, else gloo on the CPU. Each rank trains on its own slice of every batch;
the printed loss is the mean over all ranks, which equals the single-device loss on the whole batch.
"""

import argparse
import os

import torch
import torch.distributed as dist
from tensor_parallel import init_distributed, leave_distributed, twin_blocks
from torch.distributed.fsdp import fully_shard


def main() -> None:
    """Trains both models on the same batches and prints their losses side by side."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    world = int(os.environ["WORLD_SIZE"])
    device, mesh = init_distributed()
    single, sharded = twin_blocks(device)
    fully_shard(sharded.up, mesh=mesh)
    fully_shard(sharded.down, mesh=mesh)
    fully_shard(sharded, mesh=mesh)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (single, sharded)]

    rank = dist.get_rank()
    for step in range(args.steps):
        x = torch.randn(8, 16, 32, generator=torch.Generator().manual_seed(step)).to(device)
        single_loss = single(x).pow(2).mean()
        local_loss = sharded(x.chunk(world)[rank]).pow(2).mean()  # FSDP averages gradients over ranks
        for loss, optimizer in ((single_loss, optimizers[0]), (local_loss, optimizers[1])):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        mean_loss = local_loss.detach().clone()
        dist.all_reduce(mean_loss)
        mean_loss /= world
        if rank == 0:
            print(
                f"step {step}: single-device loss {single_loss.item():.6f}  FSDP2 loss {mean_loss.item():.6f}  "
                f"difference {abs(single_loss.item() - mean_loss.item()):.2e}",
                flush=True,
            )
    leave_distributed()


if __name__ == "__main__":
    main()
