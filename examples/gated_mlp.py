"""A small model of gated-MLP blocks (SwiGLU by default) trained end to end on a synthetic regression task.

Run: python examples/gated_mlp.py [--activation silu] [--blocks 2] [--width 64] [--hidden 172] [--steps 300]
[--device cpu] [--dtype float32] [--compile] [--seed 0] [--check]
The model is pre-norm residual blocks, ``x + GatedMLP(LayerNorm(x))``, as the MLP half of a transformer layer; the
target is a fixed random network of the same kind written with torch's own activation, plus noise. The script
first checks that its model equals the same blocks written with torch's ops (``act(gate) * up`` on the halves of the
fused projection), forward and gradients, then trains with AdamW and prints the loss; --check makes "the loss fell
to under a fifth of its start, and the two forms agreed" an exit status.
"""

import argparse
import sys

import torch
import torch.nn.functional as F
from torch import nn

import activations_ext
from activations_ext.catalog import GATED

NOISE = 0.01


class Block(nn.Module):
    """A pre-norm residual gated-MLP block: ``x + mlp(norm(x))``."""

    def __init__(self, width: int, hidden: int, activation: str) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = activations_ext.GatedMLP(width, hidden, activation=activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


def model(blocks: int, width: int, hidden: int, activation: str) -> nn.Sequential:
    return nn.Sequential(*(Block(width, hidden, activation) for _ in range(blocks)), nn.Linear(width, 1))


def with_torch_ops(net: nn.Sequential, activation: str) -> torch.Tensor:
    """The same network's forward written with torch's activation: ``act(gate) * up``, as model code writes it."""
    torch_act = next(g for g in GATED.values() if g.activation.name == activation).activation.torch_forward

    def forward(x: torch.Tensor) -> torch.Tensor:
        for block in net[:-1]:
            gate, up = block.mlp.gate_up(block.norm(x)).chunk(2, dim=-1)
            x = x + block.mlp.down(torch_act(gate) * up)
        return net[-1](x)

    return forward


def same_as_torch(net: nn.Sequential, activation: str, x: torch.Tensor) -> float:
    """The largest relative difference between the model and its torch-ops form, over outputs and gradients."""
    outputs = [net(x), with_torch_ops(net, activation)(x)]
    grads = [torch.autograd.grad(out.square().sum(), list(net.parameters())) for out in outputs]
    pairs = [(outputs[0], outputs[1]), *zip(grads[0], grads[1], strict=True)]
    return max(((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item() for a, b in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--activation", default="silu", choices=sorted({g.activation.name for g in GATED.values()}))
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=172)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--compile", action="store_true", help="train the model under torch.compile")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="exit non-zero unless the loss fell below a fifth")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)

    teacher = model(args.blocks, args.width, args.hidden, args.activation).to(args.device)
    for p in teacher.parameters():  # a target with some structure to learn
        nn.init.normal_(p, std=0.3)
    net = model(args.blocks, args.width, args.hidden, args.activation).to(args.device)
    probe = torch.randn(32, args.width, device=args.device, dtype=torch.float64)
    difference = same_as_torch(net.double(), args.activation, probe)
    print(f"model vs the same blocks in torch ops (float64): largest relative difference {difference:.2e}")
    net = net.to(dtype)
    step_model = torch.compile(net) if args.compile else net
    optimizer = torch.optim.AdamW(net.parameters(), lr=args.lr)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(args.batch, args.width, device=args.device)
        with torch.no_grad():
            y = teacher(x) + NOISE * torch.randn(args.batch, 1, device=args.device)
        return x.to(dtype), y.to(dtype)

    losses = []
    for step in range(1, args.steps + 1):
        x, y = batch()
        loss = F.mse_loss(step_model(x).float(), y.float())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step == 1 or step % max(1, args.steps // 10) == 0:
            print(f"step {step:5d}  loss {loss.item():.5f}")
    start, end = sum(losses[:10]) / len(losses[:10]), sum(losses[-10:]) / len(losses[-10:])
    print(f"loss: {start:.5f} over the first 10 steps, {end:.5f} over the last 10 ({start / end:.1f}x lower)")
    ok = end < start / 5 and difference < 1e-10
    if args.check and not ok:
        print("check failed: the loss did not fall below a fifth, or the model differs from its torch-ops form")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
