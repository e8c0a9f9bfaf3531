"""Sweeps the CUDA launch shape on a GPU: rebuilds the extension per configuration and benchmarks it.

Usage (on the GPU machine, from the repository root): ``python3 scripts/tune_launch.py [NAME-PART ...]``. Prints, per
configuration, the geometric mean of ours/torch eager speed per size and the share of the copy roofline;
the best configuration becomes the default in kernels/elementwise.cuh.
"""

import json
import math
import os
import subprocess
import sys
import tempfile

CONFIGS = {
    "default (128 threads, unroll 4 from 2^22 packs)": "",
    "256 threads": "-DACT_THREADS=256",
    "512 threads": "-DACT_THREADS=512",
    "unroll 2 large": "-DACT_UNROLL_LARGE=2",
    "unroll 8 large": "-DACT_UNROLL_LARGE=8",
    "unroll 4 from 2^20 packs": "-DACT_LARGE_PACKS_LOG2=20",
    "unroll 4 from 2^24 packs": "-DACT_LARGE_PACKS_LOG2=24",
    "unroll 4 from 2^16 packs": "-DACT_LARGE_PACKS_LOG2=16",
    "unroll 4 from 2^18 packs": "-DACT_LARGE_PACKS_LOG2=18",
    "unroll 2 from 2^16 packs": "-DACT_LARGE_PACKS_LOG2=16 -DACT_UNROLL_LARGE=2",
    "unroll 2 from 2^18 packs": "-DACT_LARGE_PACKS_LOG2=18 -DACT_UNROLL_LARGE=2",
}
BENCH = [
    "--ops",
    "selu",
    "relu",
    "selu_backward",
    "--dtypes",
    "float32",
    "bfloat16",
    "--sizes",
    "2^20",
    "2^22",
    "2^24",
    "2^26",
    "2^28",
    "--no-compile",
    "--quiet",
]


def build(flags: str) -> None:
    env = dict(os.environ, ACT_NVCC_FLAGS=flags, MAX_JOBS="16")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "-e", "."],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def summarize(rows: list[dict]) -> str:
    parts = []
    for size in dict.fromkeys(r["size"] for r in rows):
        sel = [r for r in rows if r["size"] == size]
        speedup = math.exp(sum(math.log(r["torch_us"] / r["ours_us"]) for r in sel) / len(sel))
        worst = min((r["bytes"] / r["ours_us"]) / (r["copy_bytes"] / r["copy_us"]) for r in sel)
        parts.append(f"{size}: {speedup:.3f}x torch, worst {100 * worst:.0f}% of copy")
    return " | ".join(parts)


def main() -> None:
    """Sweeps the configurations whose names contain any command-line argument (all without arguments)."""
    chosen = {n: f for n, f in CONFIGS.items() if not sys.argv[1:] or any(a in n for a in sys.argv[1:])}
    for name, flags in chosen.items():
        build(flags)
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run(
                [sys.executable, "-m", "activations_ext.bench", *BENCH, "--json", f.name],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            rows = json.load(open(f.name))["rows"]
        print(f"{name:48} {summarize(rows)}", flush=True)
    build("")


if __name__ == "__main__":
    main()
