"""Where a gated op's forward and backward spend their time on a GPU: wall clock per pass over passes queued back
to back (the host's pace where it exceeds the device's), for ours through autograd, each of its two ops alone, the
merged and two-tensor forms, torch's composition and torch's own ReLU through autograd (the engine's cost alone),
bfloat16 at 4096x4096 and 256x4096; then torch.profiler's table of one such pass at 4096x4096.
Run: python benchmarks/probes/gated_host.py
"""

import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import activations_ext  # noqa: F401  (registers torch.ops.act)


def per_pass_us(f: Callable[[], object], passes: int = 100) -> float:
    """Wall clock per pass of ``passes`` calls queued back to back, in microseconds."""
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(passes):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - begin) / passes * 1e6


def variants(rows: int, d: int) -> dict[str, Callable[[], object]]:
    """The passes compared, on bfloat16 operands of one shape."""
    kw = {"dtype": torch.bfloat16, "device": "cuda"}
    x = torch.randn(rows, 2 * d, **kw, requires_grad=True)
    gate = torch.randn(rows, d, **kw, requires_grad=True)
    up = torch.randn(rows, d, **kw, requires_grad=True)
    grad = torch.randn(rows, d, **kw)
    xd = x.detach()
    return {
        "silu merged grad()": lambda: torch.autograd.grad(torch.ops.act.silu_and_mul(x), (x,), grad),
        "silu merged fwd (grad mode)": lambda: torch.ops.act.silu_and_mul(x),
        "silu merged fwd (no grad)": lambda: torch.ops.act.silu_and_mul(xd),
        "silu merged bwd op": lambda: torch.ops.act.silu_and_mul_backward(grad, xd),
        "gelu merged grad()": lambda: torch.autograd.grad(torch.ops.act.gelu_and_mul(x), (x,), grad),
        "silu pair grad()": lambda: torch.autograd.grad(torch.ops.act.silu_mul(gate, up), (gate, up), grad),
        "eager silu(a)*b merged grad()": lambda: torch.autograd.grad(F.silu(x[:, :d]) * x[:, d:], (x,), grad),
        "torch relu grad() on gate": lambda: torch.autograd.grad(torch.relu(gate), (gate,), grad),
        "empty_like x (alloc)": lambda: torch.empty_like(x),
    }


def main() -> None:
    for rows, d in [(4096, 4096), (256, 4096)]:
        passes = variants(rows, d)
        for f in passes.values():
            f()
        print(f"{rows}x{d} bf16, wall per pass (us), passes back to back:")
        for name, f in passes.items():
            print(f"  {name:34} {statistics.median(per_pass_us(f) for _ in range(7)):8.1f}")
    f = variants(4096, 4096)["silu merged grad()"]
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(50):
            f()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=30))


if __name__ == "__main__":
    main()
