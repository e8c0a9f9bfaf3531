"""Fits GELU's erfc polynomials (``kErfcForFloat32`` and ``kErfcScaled`` in kernels/activations.h; docs/design/gelu.md).

``erfc(z) = t exp(-z^2) Q(t)`` with ``t = 1 / (1 + p |z|)``: Q of a given degree is fitted to ``erfc(z) exp(z^2) / t``
over z in [0, z_max] by least squares in relative error against mpmath at Chebyshev nodes of t, reweighted toward the
minimax (Lawson's iteration), then checked on a dense grid. Without options it refits the shipped Q (degree 10,
p = 0.3, z_max = 9.4) and compares it with the kernel's table; ``--scan`` tries several scales p per degree.

``--float64`` fits float64's ``erfc_scaled(a) = erfc(a) exp(a^2) = t G(t)``, ``t = 3 / (3 + a)``, over a in [1/2, 30]
(where GELU takes it) in 40-digit arithmetic: least squares in relative error at Chebyshev nodes of t, then each
coefficient rounded to double in turn, the constant first, and the others refitted around it (rounding them all at
once would leave 5.7e-17 where this leaves 2.0e-17).

    python benchmarks/probes/fit_erfc.py [--scan] [--degrees 8 9 10] [--z-max 9.4] [--float64]
"""

import argparse
import pathlib
import re

import mpmath
import numpy as np

mpmath.mp.dps = 40
# The shipped fits: float32's Q's degree and t's scale p; float64's G's degree and range of a.
DEGREE, SCALE = 10, 0.3
SCALED_DEGREE, SCALED_A_MIN, SCALED_A_MAX = 20, 0.5, 30


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


def g_exact(t: mpmath.mpf) -> mpmath.mpf:
    """``erfc(a) exp(a^2) / t`` at ``a = 3 / t - 3``."""
    a = 3 / t - 3
    return mpmath.erfc(a) * mpmath.exp(a * a) / t


def fit_scaled(degree: int, a_min: float, a_max: float, nodes: int = 160) -> list[float]:
    """G's coefficients as doubles (highest power first), each rounded in turn with the others refitted around it."""
    low, high = 3 / (3 + mpmath.mpf(a_max)), 3 / (3 + mpmath.mpf(a_min))
    t = [
        (low + high) / 2 + (high - low) / 2 * mpmath.cos(mpmath.pi * (k + mpmath.mpf(0.5)) / nodes)
        for k in range(nodes)
    ]
    g = [g_exact(x) for x in t]
    rounded: dict[int, float] = {}  # power -> coefficient
    for power in range(degree + 1):
        free = list(range(power, degree + 1))
        system, target = mpmath.matrix(nodes, len(free)), mpmath.matrix(nodes, 1)
        for i, (x, gx) in enumerate(zip(t, g, strict=True)):
            for j, k in enumerate(free):
                system[i, j] = x**k / gx
            target[i] = (gx - sum(c * x**k for k, c in rounded.items())) / gx
        solution, _ = mpmath.qr_solve(system, target)
        rounded[power] = float(solution[0])
    return [rounded[k] for k in range(degree, -1, -1)]


def check_scaled(coefficients: list[float], a_min: float, a_max: float) -> tuple[float, float]:
    """G's largest relative error over a in [a_min, a_max] (its coefficients exact) and its sum's largest
    cancellation, sum |c_k t^k| / G."""
    error, cancellation = mpmath.mpf(0), mpmath.mpf(0)
    for a in np.linspace(a_min, a_max, 4001):
        t = 3 / (3 + mpmath.mpf(a))
        terms = [c * t ** (len(coefficients) - 1 - j) for j, c in enumerate(coefficients)]
        exact = g_exact(t)
        error = max(error, abs(sum(terms) / exact - 1))
        cancellation = max(cancellation, sum(abs(x) for x in terms) / exact)
    return float(error), float(cancellation)


def shipped_table(name: str = "kErfcForFloat32") -> list[float]:
    """A table's values, read from kernels/activations.h."""
    header = pathlib.Path(__file__).resolve().parents[2] / "kernels" / "activations.h"
    body = re.search(name + r"\{\s*\{([^}]*)\}", header.read_text()).group(1)
    return [float(v) for v in body.replace("\n", " ").split(",") if v.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scan", action="store_true", help="scan t's scale p for each degree")
    parser.add_argument("--degrees", nargs="+", type=int, default=[8, 9, 10])
    parser.add_argument("--z-max", type=float, default=9.4)
    parser.add_argument("--float64", action="store_true", help="refit float64's erfc_scaled (kErfcScaled)")
    args = parser.parse_args()
    if args.float64:
        coefficients = fit_scaled(SCALED_DEGREE, SCALED_A_MIN, SCALED_A_MAX)
        print("G (highest power first):", ", ".join(repr(x) for x in coefficients))
        error, cancellation = check_scaled(coefficients, SCALED_A_MIN, SCALED_A_MAX)
        span = f"[{SCALED_A_MIN}, {SCALED_A_MAX}]"
        print(f"relative error: {error:.3g} over a in {span}; sum |c t^k| / G <= {cancellation:.3g}")
        shipped = shipped_table("kErfcScaled")
        print("the kernel's table:", "the same" if shipped == coefficients else shipped)
        return
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
