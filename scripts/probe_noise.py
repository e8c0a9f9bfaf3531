"""How much of a mid-size row's ours-vs-torch ratio is set by where its buffers lie and by the L2's state.

Each row is measured ``--trials`` times in one process, each time with fresh operands at new addresses (a
spacer of random size is kept alive between trials), and the ratios are printed; run it in several processes
to see the per-process part too. ``--no-flush`` times without flushing the L2 first. ``--ncu`` makes three calls
of ours and of torch's op per row (the two 2^10 rows left out, two rows where ours leads put first) for ncu to
profile; with ``--dirty`` each behind the benchmark's L2 flush, whose dirty lines the call then evicts.
"""

import argparse
import math
import random
import statistics

import torch

import activations_ext  # noqa: F401
from activations_ext import bench, timing

ROWS = [
    ("relu", "float32", "2^10"),
    ("relu_backward", "float32", "2^10"),
    ("relu", "float32", "2^16"),
    ("relu", "float32", "2^18"),
    ("relu", "float64", "2^18"),
    ("relu", "float64", "2^22"),
    ("relu_", "float16", "2^18"),
    ("relu.out", "float32", "2^18"),
    ("relu.out", "bfloat16", "2^20"),
    ("selu_backward", "float32", "2^16"),
    ("relu_backward", "float64", "2^16"),
    ("relu_backward", "float32", "2^18"),
]
# Rows where ours leads, for comparison under ncu.
LEADING = [("selu", "float32", "2^18"), ("relu", "float32", "2^22")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--no-flush", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ncu", action="store_true", help="three calls of ours and torch per row, for ncu")
    parser.add_argument("--dirty", action="store_true", help="with --ncu: each call behind the benchmark's L2 flush")
    args = parser.parse_args()
    if args.ncu:
        flush = torch.empty(timing.L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        # The 2^10 rows are one block each, whose time is the launch's: nothing there for ncu to compare.
        for op, dtype, size in LEADING + [row for row in ROWS if math.prod(bench.parse_size(row[2])) > 2**10]:
            case = bench.make_case(op)
            operands = bench.operands(
                case, op, bench.parse_size(size), bench.DTYPES[dtype], torch.device("cuda"), "contiguous"
            )
            for _ in range(3):
                for fn in (case.ours, case.torch):
                    if args.dirty:
                        flush.fill_(1)
                    fn(*operands)
        torch.cuda.synchronize()
        return
    if args.no_flush:
        timing.L2_FLUSH_BYTES = 1
    rng = random.Random(args.seed)
    device = torch.device("cuda")
    spacers = []
    print(f"{'op':15} {'dtype':9} {'size':6} {'ours us':>8} {'torch us':>8}  ratios (median)")
    for op, dtype, size in ROWS:
        ratios, ours, theirs = [], [], []
        for _ in range(args.trials):
            spacers.append(
                torch.empty(rng.randrange(1, 64) * 2**16 + rng.randrange(512) * 512, dtype=torch.uint8, device=device)
            )
            row = bench.measure(op, size, bench.DTYPES[dtype], device, False)
            ratios.append(row.vs_torch)
            ours.append(row.ours_us)
            theirs.append(row.torch_us)
        print(
            f"{op:15} {dtype:9} {size:6} {statistics.median(ours):8.2f} {statistics.median(theirs):8.2f}  "
            + " ".join(f"{r:.3f}" for r in ratios)
            + f"  ({statistics.median(ratios):.3f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
