"""The cold L2 a benchmark flushes to, dirty or clean, at 4096x4096 (bfloat16, 96 MiB a pass).

The merged gated forward, the same on two tensors, a plain two-input op (torch.mul), an xor without arithmetic and a
copy of the same bytes, each timed after the benchmarks' flush (a 256 MiB ``fill_``, which leaves the L2 full of
dirty lines whose write-back the next kernel pays) and after flushes that leave it clean (a 256 MiB read, alone or
after the fill). CUDA events behind a sleep kernel, medians of 41 interleaved runs.

Usage: ``python benchmarks/probes/l2_flush.py`` (CUDA).
"""

import statistics

import torch

from activations_ext.timing import cold_l2_seconds  # the package's import registers torch.ops.act

ROWS, D = 4096, 4096
RUNS = 41


def main() -> None:
    device, dtype = torch.device("cuda"), torch.bfloat16
    x = torch.randn(ROWS, 2 * D, dtype=dtype, device=device)
    a, b = (torch.randn(ROWS, D, dtype=dtype, device=device) for _ in range(2))
    out = torch.empty(ROWS, D, dtype=dtype, device=device)
    source = torch.randn(ROWS * D * 3 // 2, dtype=dtype, device=device)  # the forward's bytes: 2d read, d written
    target = torch.empty_like(source)
    buffer = torch.empty(256 << 20, dtype=torch.uint8, device=device)
    total = torch.empty((), dtype=torch.int64, device=device)
    words = (a.view(torch.int16), b.view(torch.int16), out.view(torch.int16))
    variants = {
        "silu_and_mul": lambda: torch.ops.act.silu_and_mul(x),
        "silu_mul (pair)": lambda: torch.ops.act.silu_mul(a, b),
        "a*b": lambda: torch.mul(a, b, out=out),
        "xor": lambda: torch.bitwise_xor(words[0], words[1], out=words[2]),
        "copy": lambda: target.copy_(source),
    }

    def read() -> None:
        torch.sum(buffer.view(torch.int64), dim=0, out=total)

    flushes = {
        "fill (dirty L2)": lambda: buffer.fill_(1),
        "read (clean L2)": read,
        "fill then read": lambda: (buffer.fill_(1), read()),
    }
    for flush_name, flush in flushes.items():
        for fn in variants.values():
            for _ in range(3):
                fn()
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(RUNS):
            for name, fn in variants.items():
                times[name].append(cold_l2_seconds(fn, flush) * 1e6)
        median = {name: statistics.median(t) for name, t in times.items()}
        print(f"== flush: {flush_name}")
        for name, us in median.items():
            print(f"  {name:16} {us:7.2f} us  {100 * median['copy'] / us:6.1f}% of the copy")


if __name__ == "__main__":
    main()
