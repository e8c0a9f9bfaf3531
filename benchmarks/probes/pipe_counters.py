"""Hardware counters of one kernel per row under ncu: DRAM, issue slots and the pipes that bound a kernel.

`python benchmarks/probes/pipe_counters.py [ROW ...]` profiles each row in its own process (a warm-up call, then the
call inside the NVTX range "m") and prints, per kernel, its time, DRAM throughput, issue-slot use and the FP64, FMA,
ALU and XU (conversions and the hardware's transcendentals) pipes' use, as percentages of their peaks, with the top
stall reasons. `--row NAME` runs one row without ncu (what ncu launches).
"""

import argparse
import csv
import subprocess
import sys
from collections.abc import Callable

import torch

METRICS = {
    "us": "gpu__time_duration.sum",
    "dram%": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "issue%": "sm__issue_active.avg.pct_of_peak_sustained_active",
    "fp64%": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "fma%": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "alu%": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "xu%": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "warps%": "sm__warps_active.avg.pct_of_peak_sustained_active",
}


def rows() -> dict[str, Callable[[], Callable[[], object]]]:
    """Each row: a function that makes its operands and returns the call to profile."""
    import activations_ext  # noqa: F401  (registers torch.ops.act)

    act, functional = torch.ops.act, torch.nn.functional
    f32, bf16 = torch.float32, torch.bfloat16

    def randn(n: int, dtype: torch.dtype) -> torch.Tensor:
        return torch.randn(n, device="cuda", dtype=dtype)

    def neg(n: int, dtype: torch.dtype) -> Callable[[], object]:
        x, y = randn(n, dtype), torch.empty(n, device="cuda", dtype=dtype)
        return lambda: torch.neg(x, out=y)

    def unary(op: Callable[[torch.Tensor], object], n: int, dtype: torch.dtype) -> Callable[[], object]:
        x = randn(n, dtype)
        return lambda: op(x)

    def gated(op: Callable[[torch.Tensor], object], r: int, d: int, dtype: torch.dtype) -> Callable[[], object]:
        x = randn(r * 2 * d, dtype).view(r, 2 * d)
        return lambda: op(x)

    return {
        "copy_f32": lambda: neg(2**26, f32),
        "copy_bf16": lambda: neg(2**27, bf16),
        "silu_f32": lambda: unary(act.silu, 2**26, f32),
        "torch_silu_f32": lambda: unary(functional.silu, 2**26, f32),
        "gelu_f32": lambda: unary(act.gelu, 2**26, f32),
        "torch_gelu_f32": lambda: unary(functional.gelu, 2**26, f32),
        "gelu_and_mul_f32": lambda: gated(act.gelu_and_mul, 8192, 14336, f32),
        "gelu_bf16": lambda: unary(act.gelu, 2**27, bf16),
        "torch_gelu_bf16": lambda: unary(functional.gelu, 2**27, bf16),
        "selu_bf16": lambda: unary(act.selu, 2**27, bf16),
        "torch_selu_bf16": lambda: unary(torch.selu, 2**27, bf16),
        "selu_alpha_dropout_bf16": lambda: unary(lambda x: act.selu_alpha_dropout(x, 0.1, True), 2**27, bf16),
        "selu_alpha_dropout_f32": lambda: unary(lambda x: act.selu_alpha_dropout(x, 0.1, True), 2**26, f32),
    }


def run_row(name: str) -> None:
    call = rows()[name]()
    call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("m")
    call()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def number(row: dict[str, str], key: str) -> float:
    """A metric of ncu's CSV row as a float (its thousands separators dropped; NaN where it is missing)."""
    return float(row.get(key, "nan").replace(",", "") or "nan")


def profile(name: str) -> None:
    command = ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "m/", "--section", "WarpStateStats",
               "--metrics", ",".join(METRICS.values()), "--csv", "--page", "raw",
               sys.executable, __file__, "--row", name]  # fmt: skip
    text = subprocess.run(command, capture_output=True, text=True, timeout=300).stdout
    table = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    if len(table) < 3:
        print(f"{name}: no kernel profiled")
        return
    head = table[0]
    for values in table[2:]:
        row = dict(zip(head, values, strict=True))
        stalls = sorted(
            ((number(row, h), h.split("stalled_")[1].split("_per_")[0]) for h in head
             if h.startswith("smsp__average_warps_issue_stalled_") and h.endswith("_per_issue_active.ratio")),
            reverse=True,
        )[:3]  # fmt: skip
        figures = "  ".join(f"{k}={number(row, m) / (1000 if k == 'us' else 1):.4g}" for k, m in METRICS.items())
        print(f"{name:24s} {row.get('Kernel Name', '').split('(')[0][:70]}")
        print(f"    {figures}  stalls per issue: " + "  ".join(f"{s}={v:.2f}" for v, s in stalls))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="rows to profile (default: all)")
    parser.add_argument("--row", help="run this row once, unprofiled (what ncu launches)")
    args = parser.parse_args()
    if args.row:
        run_row(args.row)
    else:
        print(torch.cuda.get_device_name())
        for row_name in args.names or list(rows()):
            profile(row_name)
