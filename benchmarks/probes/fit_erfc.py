"""Fits float32 GELU's erfc polynomial (``kErfcForFloat32`` in kernels/activations.h; docs/design/gelu.md).

``erfc(z) = t exp(-z^2) Q(t)`` with ``t = 1 / (1 + p |z|)``: Q of a given degree is fitted to ``erfc(z) exp(z^2) / t``
over z in [0, z_max] by least squares in relative error against mpmath at Chebyshev nodes of t, reweighted toward the
minimax (Lawson's iteration), then checked on a dense grid. Without options it refits the shipped Q (degree 10,
p = 0.3, z_max = 9.4) and compares it with the kernel's table; ``--scan`` tries several scales p per degree.

    python benchmarks/probes/fit_erfc.py [--scan] [--degrees 8 9 10] [--z-max 9.4]
"""

import argparse
import pathlib
import re

import mpmath
import numpy as np

mpmath.mp.dps = 40
# The shipped fit: Q's degree and t's scale p.
DEGREE, SCALE = 10, 0.3


def q_exact(t: float, p: float) -> float:
    """``erfc(z) exp(z^2) / t`` at ``z = (1 / t - 1) / p``, z and z^2 rounded to double as the shipped fit took them
    (their roundings move the value by 1e-14 at most, far below the fit's error)."""
    z = (1 / t - 1) / p
    return float(mpmath.erfc(z) * mpmath.exp(z * z)) / t


def fit(degree: int, p: float, z_max: float, nodes: int = 1200) -> tuple[np.ndarray, float]:
    """Q's coefficients (highest power first) and their largest relative error at the nodes."""
    t_min = 1 / (1 + p * z_max)
    k = np.arange(nodes)
    t = (t_min + 1) / 2 + (1 - t_min) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    q = np.array([q_exact(x, p) for x in t])
    vandermonde = np.vander(t, degree + 1)
    weights = np.full(nodes, 1 / nodes)
    for _ in range(80):
        scaled = vandermonde / q[:, None] * np.sqrt(weights)[:, None]
        c, *_ = np.linalg.lstsq(scaled, np.sqrt(weights), rcond=None)
        error = np.abs(vandermonde @ c / q - 1)
        weights = weights * (error + 1e-30)
        weights /= weights.sum()
    return c, float(error.max())


def shipped_table() -> list[float]:
    """kErfcForFloat32's values, read from kernels/activations.h."""
    header = pathlib.Path(__file__).resolve().parents[2] / "kernels" / "activations.h"
    body = re.search(r"kErfcForFloat32\{\s*\{([^}]*)\}", header.read_text()).group(1)
    return [float(v) for v in body.replace("\n", " ").split(",") if v.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scan", action="store_true", help="scan t's scale p for each degree")
    parser.add_argument("--degrees", nargs="+", type=int, default=[8, 9, 10])
    parser.add_argument("--z-max", type=float, default=9.4)
    args = parser.parse_args()
    if args.scan:
        for degree in args.degrees:
            best = min((fit(degree, p, args.z_max)[1], p) for p in np.arange(0.15, 0.81, 0.05))
            print(f"degree {degree}: relative error {best[0]:.3g} at p = {best[1]:.2f}")
        return
    c, _ = fit(DEGREE, SCALE, args.z_max)
    coefficients = [float(x) for x in c]
    grid = np.concatenate([np.linspace(0, args.z_max, 4001), np.linspace(args.z_max, 11, 200)])
    t = 1 / (1 + SCALE * grid)
    relative = np.abs(np.polyval(coefficients, t) / np.array([q_exact(x, SCALE) for x in t]) - 1)
    print("Q (highest power first):", ", ".join(repr(x) for x in coefficients))
    within = relative[grid <= args.z_max].max()
    print(f"relative error: {within:.3g} over [0, {args.z_max}], {relative.max():.3g} up to 11")
    print(f"smallest Q over t in [0, 1]: {np.polyval(coefficients, np.linspace(0, 1, 10001)).min():.4f}")
    shipped = shipped_table()
    print("the kernel's table:", "the same" if shipped == coefficients else shipped)


if __name__ == "__main__":
    main()
