"""vmap of each act op against the unbatched op on the same batch, and against vmap of torch's op.

``python benchmarks/vmap.py [--device cpu|cuda] [--batch 256] [--features 1024]``: median times (CUDA events behind
an L2 flush on a GPU: ``activations_ext.timing``), printed as a table with ratios measured in the same run.
"""

import argparse
from collections.abc import Callable

import torch
from torch.func import grad, vmap

import activations_ext  # noqa: F401  (registers the ops)
from activations_ext.catalog import ACTIVATIONS, GATED
from activations_ext.timing import median_seconds

Case = tuple[Callable[[], object], Callable[[], object], Callable[[], object] | None]  # None: torch has no such op


def activation_cases(name: str, x: torch.Tensor, g: torch.Tensor) -> dict[str, Case]:
    """Per case: the unbatched op on the batch, vmap of ours, and vmap of torch's."""
    a = ACTIVATIONS[name]
    op, backward, inplace = a.ops.forward, a.ops.backward, a.ops.inplace
    torch_backward = a.gradient(is_result=False).torch_op
    leaf = x.detach().requires_grad_()
    return {
        name: (lambda: op(x), lambda: vmap(op)(x), lambda: vmap(a.torch_forward)(x)),
        a.ops.names[1]: (lambda: inplace(x.clone()), lambda: vmap(inplace)(x.clone()), None),
        a.ops.names[3]: (
            lambda: backward(g, x, is_result=False),
            lambda: vmap(lambda u, v: backward(u, v, is_result=False))(g, x),
            lambda: vmap(torch_backward)(g, x),
        ),
        f"grad of {name}": (
            lambda: torch.autograd.grad(op(leaf).sum(), leaf)[0],
            lambda: vmap(grad(lambda v: op(v).sum()))(x),
            lambda: vmap(grad(lambda v: a.torch_forward(v).sum()))(x),
        ),
    }


def gated_cases(name: str, x: torch.Tensor, g: torch.Tensor) -> dict[str, Case]:
    """The same for a gated op on the batch as [batch, 2d] (d = features / 2) and its backward."""
    gated = GATED[name]
    merged, backward = gated.ops.merged, gated.ops.merged_backward
    half = g[:, : x.shape[1] // 2]

    def torch_merged(t: torch.Tensor) -> torch.Tensor:
        return gated.torch_composition(*t.chunk(2, dim=-1))

    return {
        name: (lambda: merged(x), lambda: vmap(merged)(x), lambda: vmap(torch_merged)(x)),
        gated.ops.names[2]: (lambda: backward(half, x), lambda: vmap(backward)(half, x), None),
    }


def dropout_cases(x: torch.Tensor) -> dict[str, Case]:
    """selu_alpha_dropout (p = 0.1, train) with a mask per sample (randomness="different")."""
    op = torch.ops.act.selu_alpha_dropout.default

    def torch_op(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.alpha_dropout(torch.selu(t), 0.1, True)

    def ours(t: torch.Tensor) -> torch.Tensor:
        return op(t, 0.1, True)

    batched = vmap(ours, randomness="different")
    return {
        "selu_alpha_dropout": (lambda: ours(x), lambda: batched(x), lambda: vmap(torch_op, randomness="different")(x))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--features", type=int, default=1024)
    args = parser.parse_args()
    x = torch.randn(args.batch, args.features, device=args.device) * 3
    g = torch.randn_like(x)
    cases: dict[str, Case] = {}
    for name in ACTIVATIONS:
        cases |= activation_cases(name, x, g)
    for name in GATED:
        cases |= gated_cases(name, x, g)
    cases |= dropout_cases(x)
    print(f"vmap over a {args.batch} x {args.features} float32 batch on {args.device} (median, microseconds)")
    print(f"{'case':34} {'unbatched':>10} {'vmap':>10} {'vmap torch':>11} {'vmap/unbatched':>15} {'torch/ours':>11}")
    for case, fns in cases.items():
        t = [median_seconds(f, torch.device(args.device), reps=51) * 1e6 if f else None for f in fns]
        torch_time, torch_ratio = (f"{t[2]:.1f}", f"{t[2] / t[1]:.2f}") if t[2] else ("-", "-")
        print(f"{case:34} {t[0]:10.1f} {t[1]:10.1f} {torch_time:>11} {t[1] / t[0]:15.2f} {torch_ratio:>11}")


if __name__ == "__main__":
    main()
