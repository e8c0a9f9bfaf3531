"""float64 GELU or SiLU and its gradient against mpmath at 40 digits, by range of x (max and 99th percentile, in ulps).

The value in ulps of the result, the gradient in ulps of its terms (they cancel near its root): GELU's
|Phi(x)| + |x phi(x)|, SiLU's sigmoid(x) (1 + |x (1 - sigmoid(x))|). torch's own error is printed beside ours.
Usage: python benchmarks/probes/float64_accuracy.py [--op gelu|silu] [--device cuda]
"""

import argparse
from collections.abc import Callable

import mpmath
import numpy as np
import torch

import activations_ext  # noqa: F401  (registers torch.ops.act)


def gelu_terms(x: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
    """GELU's value's factor and its slope's two terms: Phi(x) and x phi(x)."""
    cdf = mpmath.erfc(-x / mpmath.sqrt(2)) / 2
    return cdf, x * mpmath.exp(-x * x / 2) / mpmath.sqrt(2 * mpmath.pi)


def silu_terms(x: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
    """SiLU's value's factor and its slope's two terms: sigmoid(x) and sigmoid(x) x (1 - sigmoid(x))."""
    sigmoid = 1 / (1 + mpmath.exp(-x))
    return sigmoid, sigmoid * x * (1 - sigmoid)


# Per op: its exact terms, torch's value and gradient, and the ranges of x reported (whose union the sample covers).
OPS: dict[str, tuple[Callable, Callable, Callable, list[tuple[float, float]]]] = {
    "gelu": (
        gelu_terms,
        torch.nn.functional.gelu,
        torch.ops.aten.gelu_backward,
        [(-37, -8), (-8, -3), (-3, -1), (-1, 0), (0, 3), (3, 10)],
    ),
    "silu": (
        silu_terms,
        torch.nn.functional.silu,
        torch.ops.aten.silu_backward,
        [(-37, -8), (-8, -3), (-3, -1.4), (-1.4, -1.15), (-1.15, 0), (0, 3), (3, 37)],
    ),
}


def ulps(results: np.ndarray, exact: list[mpmath.mpf], size: list[float]) -> np.ndarray:
    """|result - exact| in ulps of ``size``."""
    pairs = zip(results, exact, size, strict=True)
    return np.array([float(abs(mpmath.mpf(float(r)) - e)) / np.spacing(s) for r, e, s in pairs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=sorted(OPS), default="gelu")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    terms_of, torch_value, torch_gradient, ranges = OPS[args.op]
    mpmath.mp.dps = 40
    rng = np.random.default_rng(0)
    lowest, highest = ranges[0][0], ranges[-1][1]
    x = np.concatenate(
        [
            rng.uniform(-8, 3, 6000),
            rng.uniform(-1.4, -1.15, 1000),
            rng.uniform(lowest, -8, 2000),
            rng.uniform(3, highest, 500),
            -np.geomspace(1e-8, 1, 500),
            np.geomspace(1e-8, 1, 500),
        ]
    )
    xt = torch.tensor(x, dtype=torch.float64, device=args.device)
    ones = torch.ones_like(xt)
    op = getattr(torch.ops.act, args.op)
    op_backward = getattr(torch.ops.act, f"{args.op}_backward")
    results = {
        "ours": (op(xt).cpu().numpy(), op_backward(ones, xt).cpu().numpy()),
        "torch": (torch_value(xt).cpu().numpy(), torch_gradient(ones, xt).cpu().numpy()),
    }
    values, gradients, value_sizes, gradient_sizes = [], [], [], []
    for xi in x:
        big_x = mpmath.mpf(float(xi))
        factor, slope_term = terms_of(big_x)
        values.append(big_x * factor)
        gradients.append(factor + slope_term)
        value_sizes.append(abs(float(big_x * factor)))
        gradient_sizes.append(float(abs(factor) + abs(slope_term)))
    errors = {
        name: (ulps(value, values, value_sizes), ulps(gradient, gradients, gradient_sizes))
        for name, (value, gradient) in results.items()
    }
    print(f"float64 {args.op} on {args.device}: ulps, max / 99th percentile (torch's max)")
    for lo, hi in ranges:
        m = (x > lo) & (x <= hi)
        (value, gradient), (torch_value_error, torch_gradient_error) = errors["ours"], errors["torch"]
        print(
            f"x in ({lo}, {hi}]: value {value[m].max():.2f} / {np.quantile(value[m], 0.99):.2f} "
            f"({torch_value_error[m].max():.3g}), gradient {gradient[m].max():.2f} / "
            f"{np.quantile(gradient[m], 0.99):.2f} ({torch_gradient_error[m].max():.3g})"
        )


if __name__ == "__main__":
    main()
