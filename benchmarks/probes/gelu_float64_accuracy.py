"""float64 GELU and its gradient against mpmath at 40 digits, by range of x (max and 99th percentile, in ulps).

The value in ulps of the result, the gradient in ulps of its terms |Phi(x)| + |x phi(x)| (they cancel near its root).
Usage: python benchmarks/probes/gelu_float64_accuracy.py [--device cuda]
"""

import argparse

import mpmath
import numpy as np
import torch

import activations_ext  # noqa: F401  (registers torch.ops.act)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    device = parser.parse_args().device
    mpmath.mp.dps = 40
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-8, 3, 6000),
            rng.uniform(-37, -8, 2000),
            rng.uniform(3, 10, 500),
            -np.geomspace(1e-8, 1, 500),
            np.geomspace(1e-8, 1, 500),
        ]
    )
    xt = torch.tensor(x, dtype=torch.float64, device=device)
    value = torch.ops.act.gelu(xt).cpu().numpy()
    gradient = torch.ops.act.gelu_backward(torch.ones_like(xt), xt).cpu().numpy()
    value_error, gradient_error = [], []
    for i, xi in enumerate(x):
        big_x = mpmath.mpf(float(xi))
        cdf = mpmath.erfc(-big_x / mpmath.sqrt(2)) / 2
        slope_term = big_x * mpmath.exp(-big_x * big_x / 2) / mpmath.sqrt(2 * mpmath.pi)
        reference = big_x * cdf
        value_error.append(float(abs(mpmath.mpf(float(value[i])) - reference)) / np.spacing(abs(float(reference))))
        terms = float(abs(cdf) + abs(slope_term))
        gradient_error.append(float(abs(mpmath.mpf(float(gradient[i])) - (cdf + slope_term))) / np.spacing(terms))
    value_error, gradient_error = np.array(value_error), np.array(gradient_error)
    print(f"float64 gelu on {device}: ulps, max / 99th percentile")
    for lo, hi in [(-37, -8), (-8, -3), (-3, -1), (-1, 0), (0, 3), (3, 10)]:
        m = (x > lo) & (x <= hi)
        print(
            f"x in ({lo}, {hi}]: value {value_error[m].max():.2f} / {np.quantile(value_error[m], 0.99):.2f}, "
            f"gradient {gradient_error[m].max():.2f} / {np.quantile(gradient_error[m], 0.99):.2f}"
        )


if __name__ == "__main__":
    main()
