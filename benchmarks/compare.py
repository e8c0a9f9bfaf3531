"""Compares two runs of a benchmark table saved with ``--json`` (bench.py's or fusion.py's), row by row.

Usage: ``python benchmarks/compare.py BEFORE.json AFTER.json``. A row's speed is its ratio to torch in the same run
(torch / ours, or torch / fused), so the two runs need not share a machine's clocks. bench.py rows carry the spread
of that ratio over repeats: a row moves when the two spreads do not overlap. fusion.py rows carry none: a row moves
when its ratio changes by more than ``--tolerance``.
"""

import argparse
import json
import math


def row_key(row: dict) -> tuple:
    """What identifies a row across runs."""
    return tuple(row.get(k) for k in ("op", "case", "mode", "dtype", "size", "layout"))


def ratios(row: dict, tolerance: float) -> dict[str, tuple[float, float, float]]:
    """The row's speeds as (torch / ours, low, high): bench.py's one, fusion.py's fused and opaque ones."""
    if "ours_us" in row:
        ratio = row["torch_us"] / row["ours_us"]
        low, high = row.get("spread") or (ratio, ratio)
        return {"": (ratio, low, high)}
    found = {}
    for column in ("fused", "opaque"):
        if row.get(f"{column}_us"):
            ratio = row["torch_us"] / row[f"{column}_us"]
            found[column] = (ratio, ratio * (1 - tolerance), ratio * (1 + tolerance))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--tolerance", type=float, default=0.03, help="for rows without a spread (default 3%%)")
    args = parser.parse_args()
    with open(args.before) as f:
        before = {row_key(r): r for r in json.load(f)["rows"] if r.get("torch_us")}
    with open(args.after) as f:
        after = {row_key(r): r for r in json.load(f)["rows"] if r.get("torch_us")}
    common = [k for k in after if k in before]
    logs, moved = [], []
    for key in common:
        before_ratios = ratios(before[key], args.tolerance)
        for column, (a, a_low, a_high) in ratios(after[key], args.tolerance).items():
            b, b_low, b_high = before_ratios[column]
            logs.append(math.log(a / b))
            if a_low > b_high or a_high < b_low:
                name = " ".join(str(k) for k in (*key, column) if k)
                moved.append(f"  {name}: {b:.3f}x [{b_low:.3f}, {b_high:.3f}] -> {a:.3f}x [{a_low:.3f}, {a_high:.3f}]")
    geomean = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    print(
        f"{args.after} against {args.before}: {len(logs)} speeds of {len(common)} rows, "
        f"geomean of after / before {geomean:.3f}, {len(moved)} beyond their spreads"
    )
    print("\n".join(moved))


if __name__ == "__main__":
    main()
