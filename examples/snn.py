"""A deep self-normalizing network (Klambauer et al. 2017) trained on a synthetic Gaussian-mixture classification task.

Run: python examples/snn.py [--layers 16] [--width 256] [--steps 300] [--p 0.05] [--device cpu] [--seed 0] [--check]
Every hidden layer is Linear (LeCun-normal weights, zero bias) -> activations_ext.SELUAlphaDropout, with no
normalization layer: SELU keeps each layer's activations near mean 0 and variance 1 by itself. The per-layer table,
taken in eval mode on a held-out batch before and after training, shows it; --check makes that an exit status.
Training makes the deep layers' features correlated, which the fixed-point analysis does not assume, so a much larger
--lr or many more --steps move their variance up from 1; the defaults stay well within --check's bounds.
"""

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn

import activations_ext
from activations_ext.init import lecun_normal_

FEATURES, CLASSES, NOISE = 256, 32, 3.0  # NOISE: the spread of each class around its center, in the centers' units
MEAN_BOUND, VARIANCE_RANGE = 0.15, (0.7, 1.3)


def mixture(n: int, centers: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """`n` points of the mixture around `centers` and their labels, scaled to about mean 0 and variance 1."""
    labels = torch.randint(len(centers), (n,), generator=generator)
    points = (centers[labels] + NOISE * torch.randn(n, centers.shape[1], generator=generator)) / math.hypot(1, NOISE)
    return points, labels


def snn(layers: int, width: int, p: float) -> tuple[nn.Sequential, list[nn.Module]]:
    """The network, and its activation modules, whose outputs the table reports."""
    activations = [activations_ext.SELUAlphaDropout(p) for _ in range(layers)]
    blocks = []
    for i, activation in enumerate(activations):
        blocks += [nn.Linear(FEATURES if i == 0 else width, width), activation]
    model = nn.Sequential(*blocks, nn.Linear(width, CLASSES))
    for module in model.modules():
        if isinstance(module, nn.Linear):
            lecun_normal_(module.weight)
            nn.init.zeros_(module.bias)
    return model, activations


@torch.no_grad()
def evaluate(
    model: nn.Module, activations: list[nn.Module], x: torch.Tensor, y: torch.Tensor
) -> tuple[float, list[tuple[float, float]]]:
    """The loss on (x, y) in eval mode, and each activation's output mean and variance in that pass."""
    stats = []
    hooks = [
        a.register_forward_hook(lambda _m, _i, out: stats.append((out.mean().item(), out.var().item())))
        for a in activations
    ]
    model.eval()
    loss = F.cross_entropy(model(x), y).item()
    model.train()
    for hook in hooks:
        hook.remove()
    return loss, stats


def main() -> int:
    """Trains the network and prints the per-layer table and the loss; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=16, help="hidden layers")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--p", type=float, default=0.05, help="alpha dropout probability")
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="exit 1 unless the network stayed normalized and learned")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    data = torch.Generator().manual_seed(args.seed)
    centers = torch.randn(CLASSES, FEATURES, generator=data)
    x_test, y_test = (t.to(args.device) for t in mixture(4096, centers, data))
    model, activations = snn(args.layers, args.width, args.p)
    model.to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    held_out = (model, activations, x_test, y_test)
    loss_before, stats_before = evaluate(*held_out)
    for step in range(args.steps):
        x, y = (t.to(args.device) for t in mixture(256, centers, data))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (step + 1) % max(1, args.steps // 5) == 0:
            # The training loss carries the dropout noise of every layer; the held-out one is taken in eval mode.
            print(f"step {step + 1:4d}  training loss {loss.item():.4f}  held-out loss {evaluate(*held_out)[0]:.4f}")
    loss_after, stats_after = evaluate(*held_out)

    print("\nactivations on the held-out batch, eval mode")
    print(f"{'layer':>5} {'mean before':>12} {'var before':>11} {'mean after':>11} {'var after':>10}")
    for i, ((m0, v0), (m1, v1)) in enumerate(zip(stats_before, stats_after, strict=True)):
        print(f"{i + 1:5d} {m0:+12.4f} {v0:11.4f} {m1:+11.4f} {v1:10.4f}")
    print(f"held-out loss: {loss_before:.4f} before training, {loss_after:.4f} after (chance: {math.log(CLASSES):.4f})")

    off = [
        (when, i + 1, mean, var)
        for when, stats in (("before", stats_before), ("after", stats_after))
        for i, (mean, var) in enumerate(stats)
        if abs(mean) > MEAN_BOUND or not VARIANCE_RANGE[0] <= var <= VARIANCE_RANGE[1]
    ]
    if args.check and (off or not loss_after < loss_before):
        for when, layer, mean, var in off:
            print(f"CHECK FAILED: layer {layer} {when} training: mean {mean:+.4f}, variance {var:.4f}")
        if not loss_after < loss_before:
            print(f"CHECK FAILED: the held-out loss did not decrease ({loss_before:.4f} -> {loss_after:.4f})")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
