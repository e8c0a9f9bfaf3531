"""Sweeps the CUDA launch shape on a GPU: rebuilds the extension per configuration and benchmarks it.

Usage (on the GPU machine, from the repository root): ``python3 benchmarks/tune_launch.py [NAME-PART ...] [--sizes ...]
[--dtypes ...] [--ops ...] [--layouts ...]``. Prints, per configuration, the geometric mean of ours/torch eager speed
per size and the lowest share of the copy roofline; the best configuration becomes the default in
kernels/elementwise.cuh.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

# The benchmark it runs per configuration, beside it.
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.py")

CONFIGS = {
    "default (128 threads, 4 elements a thread; random ops: by the GPU's DRAM speed per SM cycle)": "",
    "256 threads": "-DACT_THREADS=256",
    "8 elements a thread": "-DACT_ELEMENTS=8",
    "16 elements a thread": "-DACT_ELEMENTS=16",
    "random ops: bound by issue on every GPU": "-DACT_RANDOM_ISSUE_BOUND_BYTES=0",
    "random ops: bound by memory on every GPU": "-DACT_RANDOM_ISSUE_BOUND_BYTES=1000",
    "random ops: at most 2 waves where bound by issue": "-DACT_RANDOM_WAVES=2",
    "random ops: at most 8 waves where bound by issue": "-DACT_RANDOM_WAVES=8",
    "random ops: 2 packs a thread where bound by memory": "-DACT_RANDOM_UNROLL=2",
    "random ops: 4 packs from 2^21 packs where bound by memory": "-DACT_RANDOM_UNROLL_PACKS_LOG2=21",
    "random ops: 4 packs from 2^23 packs where bound by memory": "-DACT_RANDOM_UNROLL_PACKS_LOG2=23",
}
DEFAULTS = {
    "ops": ["selu", "relu", "selu_backward", "selu_alpha_dropout"],
    "dtypes": ["float32", "bfloat16"],
    "sizes": ["2^20", "2^22", "2^24", "2^26", "2^28"],
    "layouts": ["contiguous"],
}


def build(flags: str) -> None:
    env = dict(os.environ, ACT_NVCC_FLAGS=flags, MAX_JOBS="16")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "-e", "."],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def summarize(rows: list[dict]) -> str:
    """One line per dtype and layout: ours/torch per size (geometric mean over the ops), lowest share of copy."""
    lines = []
    for dtype, layout in dict.fromkeys((r["dtype"], r["layout"]) for r in rows):
        group = [r for r in rows if (r["dtype"], r["layout"]) == (dtype, layout)]
        parts = []
        for size in dict.fromkeys(r["size"] for r in group):
            sel = [r for r in group if r["size"] == size]
            speedup = math.exp(sum(math.log(r["torch_us"] / r["ours_us"]) for r in sel) / len(sel))
            parts.append(f"{size} {speedup:.3f}x")
        worst = min((r["bytes"] / r["ours_us"]) / (r["copy_bytes"] / r["copy_us"]) for r in group)
        lines.append(f"  {dtype:9} {layout:10} " + " | ".join(parts) + f" | worst {100 * worst:.0f}% of copy")
    return "\n".join(lines)


def main() -> None:
    """Sweeps the configurations whose names contain any of the name parts given (all without any)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="parts of configuration names to sweep")
    for option, default in DEFAULTS.items():
        parser.add_argument(f"--{option}", nargs="+", default=default)
    args = parser.parse_args()
    bench = ["--no-compile", "--quiet"]
    for option in DEFAULTS:
        bench += [f"--{option}", *getattr(args, option)]
    chosen = {n: f for n, f in CONFIGS.items() if not args.names or any(a in n for a in args.names)}
    for name, flags in chosen.items():
        build(flags)
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run(
                [
                    sys.executable,
                    BENCH,
                    *bench,
                    "--json",
                    f.name,
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            rows = json.load(open(f.name))["rows"]
        print(f"{name}\n{summarize(rows)}", flush=True)
    build("")


if __name__ == "__main__":
    main()
