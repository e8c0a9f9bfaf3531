"""A tensor-parallel MLP block (Linear -> activations_ext.SELU -> Linear) next to the same model on one device.

Run: torchrun --nproc-per-node 2 examples/tensor_parallel.py [--sequence-parallel]
Uses NCCL on GPUs when there are enough, else gloo on the CPU. Prints the loss of a few SGD steps of both.
"""

import argparse
import copy
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import activations_ext


class Block(nn.Module):
    """Linear -> SELU -> Linear."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.act = activations_ext.SELU()
        self.down = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        return self.down(self.act(self.up(x)))


def init_distributed() -> tuple[str, DeviceMesh]:
    """Joins the torchrun job: NCCL on one GPU per rank when there are enough GPUs, else gloo on the CPU."""
    world = int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    device = "cuda" if use_cuda else "cpu"
    if use_cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    return device, init_device_mesh(device, (world,))


def leave_distributed() -> None:
    """Leaves the job once every rank is done, so no rank tears down its group while another still uses it.

    On gloo the rank then exits without finalizing the interpreter. Once DTensor (under TP or FSDP2) has used
    a gloo group, torch keeps that group's backend alive past ``destroy_process_group()``: its worker threads
    keep running, and one that drops its last reference to a finished collective while the interpreter
    finalizes cannot take the GIL and aborts the process ("terminate called without an active exception")
    after a run that succeeded.
    """
    gloo = dist.get_backend() == "gloo"
    dist.barrier()
    dist.destroy_process_group()
    if gloo:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def twin_blocks(device: str) -> tuple[Block, Block]:
    """Two identically initialized blocks: one to keep on a single device, one to distribute."""
    torch.manual_seed(0)
    single = Block(32, 128).to(device)
    return single, copy.deepcopy(single)


def main() -> None:
    """Trains both models on the same batches and prints their losses side by side."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequence-parallel", action="store_true", help="shard activations along the sequence")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()

    world = int(os.environ["WORLD_SIZE"])
    device, mesh = init_distributed()
    single, parallel = twin_blocks(device)
    if args.sequence_parallel:
        plan = {"up": ColwiseParallel(input_layouts=Shard(1)), "down": RowwiseParallel(output_layouts=Shard(1))}
    else:
        plan = {"up": ColwiseParallel(), "down": RowwiseParallel()}
    parallelize_module(parallel, mesh, plan)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (single, parallel)]

    rank = dist.get_rank()
    for step in range(args.steps):
        x = torch.randn(4, 16, 32, generator=torch.Generator().manual_seed(step)).to(device)
        losses = []
        for model, optimizer, batch in ((single, optimizers[0], x), (parallel, optimizers[1], x)):
            if model is parallel and args.sequence_parallel:
                batch = x.chunk(world, dim=1)[rank]  # each rank feeds its slice of the sequence
            out = model(batch)
            if model is parallel and args.sequence_parallel:
                loss = torch.zeros((), device=device) + out.pow(2).sum()
                dist.all_reduce(loss)
                loss = loss / x.numel()
            else:
                loss = out.pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        if rank == 0:
            print(
                f"step {step}: single-device loss {losses[0]:.6f}  tensor-parallel loss {losses[1]:.6f}  "
                f"difference {abs(losses[0] - losses[1]):.2e}",
                flush=True,
            )
    leave_distributed()


if __name__ == "__main__":
    main()
