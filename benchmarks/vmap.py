"""vmap of each act op against the unbatched op on the same batch, and against vmap of torch's op.

``python benchmarks/vmap.py [--device cpu|cuda] [--batch 256] [--features 1024]``: median times (CUDA events behind
an L2 flush on a GPU: ``activations_ext.timing``), printed as a table with ratios measured in the same run.
"""

import argparse
from collections.abc import Callable

import torch
from torch.func import grad, vmap

import activations_ext  # noqa: F401  (registers the ops)
from activations_ext.catalog import ACTIVATIONS
from activations_ext.timing import median_seconds


def cases(name: str, x: torch.Tensor, g: torch.Tensor) -> dict[str, tuple[Callable[[], object], ...]]:
    """Per case: the unbatched op on the batch, vmap of ours, and vmap of torch's."""
    a = ACTIVATIONS[name]
    op, backward = getattr(torch.ops.act, name), getattr(torch.ops.act, f"{name}_backward")
    leaf = x.detach().requires_grad_()
    return {
        name: (lambda: op(x), lambda: vmap(op)(x), lambda: vmap(a.torch_forward)(x)),
        f"{name}_backward": (
            lambda: backward(g, x, is_result=False),
            lambda: vmap(lambda u, v: backward(u, v, is_result=False))(g, x),
            lambda: vmap(a.gradient(is_result=False).torch_op)(g, x),
        ),
        f"grad of {name}": (
            lambda: torch.autograd.grad(op(leaf).sum(), leaf)[0],
            lambda: vmap(grad(lambda v: op(v).sum()))(x),
            lambda: vmap(grad(lambda v: a.torch_forward(v).sum()))(x),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--features", type=int, default=1024)
    args = parser.parse_args()
    x = torch.randn(args.batch, args.features, device=args.device) * 3
    g = torch.randn_like(x)
    print(f"vmap over a {args.batch} x {args.features} float32 batch on {args.device} (median, microseconds)")
    print(f"{'case':34} {'unbatched':>10} {'vmap':>10} {'vmap torch':>11} {'vmap/unbatched':>15} {'torch/ours':>11}")
    for name in ACTIVATIONS:
        for case, fns in cases(name, x, g).items():
            t = [median_seconds(f, torch.device(args.device), reps=51) * 1e6 for f in fns]
            print(f"{case:34} {t[0]:10.1f} {t[1]:10.1f} {t[2]:11.1f} {t[1] / t[0]:15.2f} {t[2] / t[1]:11.2f}")


if __name__ == "__main__":
    main()
