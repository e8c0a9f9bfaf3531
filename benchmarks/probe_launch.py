"""Times the shipped CUDA kernel in many launch shapes from one build, on the GPU at hand.

Usage (on the GPU machine, from the repository root): ``python3 benchmarks/probe_launch.py [--json PATH]`` for the
sweep, or ``python3 benchmarks/probe_launch.py --ncu`` under ``ncu`` for one launch of each kernel that the mid-size
question is about. ``benchmarks/tune_launch.py`` rebuilds the package per shape; this probe compiles
``benchmarks/probe_launch.cu`` (the same kernel on dense tensors) once per block size and load kind and picks the
packs per thread and the grid at run time, so a whole sweep fits one device call. Each shape's output is checked against
one reference shape's (bit for bit: the same functor on the same elements) before it is timed.
"""

import argparse
import json
import math
import os
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
# The package's timing helpers, from their file: the probe needs no build of the package.
sys.path.insert(0, os.path.join(HERE, "..", "activations_ext"))
from timing import interleaved_median_seconds  # noqa: E402

THREADS = (128, 256)
UNROLLS = (1, 2, 4, 8)
WAVES = (1, 2, 4)  # grids capped at this many full waves of resident blocks, the rest by the grid-stride loop
SIZES = [2**e for e in range(16, 29, 2)]
CASES = [
    ("relu", torch.float32),
    ("selu", torch.float32),
    ("relu", torch.bfloat16),
    ("selu", torch.bfloat16),
    ("selu_alpha_dropout", torch.bfloat16),
    ("selu_alpha_dropout", torch.float32),
    ("relu", torch.float64),
    ("relu_backward", torch.float64),
    ("relu_backward", torch.float32),
]
LOADS = ("plain", "read-only")  # the shipped ld.global, or ld.global.nc (built with ACT_READ_ONLY_LOADS)


def module_name(threads: int, loads: str) -> str:
    """The shape-name prefix of a build: ``t128``, or ``t128r`` for read-only-path loads."""
    return f"t{threads}" + ("r" if loads == "read-only" else "")


def build(threads: int, loads: str) -> object:
    """The probe module compiled with ``threads`` threads a block and ``loads`` loads."""
    read_only = ["-DACT_READ_ONLY_LOADS"] if loads == "read-only" else []
    return cpp_extension.load(
        name=f"act_probe_{module_name(threads, loads)}",
        sources=[os.path.join(HERE, "probe_launch.cu")],
        extra_cuda_cflags=["-O3", f"-DACT_THREADS={threads}", "-DACT_WITH_CUDA", *read_only],
        extra_cflags=["-DACT_WITH_CUDA"],
        verbose=False,
    )


def torch_op(op: str) -> Callable[..., torch.Tensor]:
    if op == "selu":
        return torch.selu
    if op == "relu":
        return torch.relu
    if op == "relu_backward":
        return lambda grad, x: torch.ops.aten.threshold_backward(grad, x, 0.0)
    return lambda x: torch.nn.functional.alpha_dropout(torch.selu(x), 0.1, True)


def dram_bytes_per_sm_cycle() -> float:
    """kernels/torch_torch_runtime.h's device_limits: the peak bytes DRAM moves per clock cycle of one SM."""
    p = torch.cuda.get_device_properties(0)
    sm_cycles = p.multi_processor_count * p.clock_rate
    return 2 * p.memory_clock_rate * (p.memory_bus_width // 8) / sm_cycles if sm_cycles else 0.0


def elements_unroll(element_size: int) -> int:
    """kernels/elementwise.cuh's kUnroll: the packs that make 4 elements a thread, at least one."""
    return max(1, 4 * element_size // 16)


def shipped_shape(op: str, n_packs: int, element_size: int, shapes: dict, blocks_per_sm: Callable[[int], int]) -> str:
    """kernels/elementwise.cuh's shape for a dense tensor of ``n_packs`` packs, named as in ``shapes``;
    ``blocks_per_sm(u)``: the resident blocks of the kernel at ``u`` packs a thread."""
    unroll = elements_unroll(element_size)
    props = torch.cuda.get_device_properties(0)
    resident = props.multi_processor_count * props.max_threads_per_multi_processor
    if op != "selu_alpha_dropout":
        if n_packs > unroll * resident:
            # the fewest packs a thread, up to 4, at which one full wave takes the tensor, if registers admit it
            fewest = next((u for u in (2 * unroll, 4 * unroll) if u <= 4 and n_packs <= u * resident), None)
            if fewest and blocks_per_sm(fewest) * props.multi_processor_count * 128 >= resident:
                return f"t128 u{fewest}"
        return f"t128 u{unroll}"
    if dram_bytes_per_sm_cycle() > 16:  # bound by issue: kUnroll a thread, at most 4 waves of blocks
        return f"t128 u{unroll} w4" if f"t128 u{unroll} w4" in shapes else f"t128 u{unroll}"
    return f"t128 u{max(4, unroll) if n_packs >= 2**22 else unroll}"


def shapes_for(modules: dict, n_packs: int) -> dict[str, tuple]:
    """Every shape to time for a tensor of ``n_packs`` packs: (module, packs a thread, grid cap or 0)."""
    props = torch.cuda.get_device_properties(0)
    shapes = {}
    for (threads, loads), module in modules.items():
        resident = props.multi_processor_count * (props.max_threads_per_multi_processor // threads)
        prefix = module_name(threads, loads)
        for unroll in UNROLLS:
            shapes[f"{prefix} u{unroll}"] = (module, unroll, 0)
            for waves in WAVES:
                if unroll in (1, 4) and resident * waves * threads * unroll < n_packs:
                    shapes[f"{prefix} u{unroll} w{waves}"] = (module, unroll, resident * waves)
    return shapes


def time_row(modules: dict, op: str, dtype: torch.dtype, n: int, repeats: int) -> dict:
    """Every shape, torch's op and a copy of the same bytes, interleaved, on ``n`` standard-normal elements."""
    x = torch.randn(n, device="cuda", dtype=dtype)
    inputs = [torch.randn_like(x), x] if op == "relu_backward" else [x]
    out, copy_out = torch.empty_like(x), torch.empty_like(x)
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    n_packs = n * x.element_size() // 16

    def launcher(module: object, unroll: int, blocks: int) -> Callable[[], None]:
        return lambda: module.run(op, out, inputs, unroll, blocks)

    fns: dict[str, Callable[[], object]] = {}
    reference = None
    shapes = shapes_for(modules, n_packs)
    for name, shape in shapes.items():
        fns[name] = launcher(*shape)
        out.fill_(float("nan"))
        fns[name]()
        if reference is None:
            reference = out.clone()
        elif not torch.equal(out.view(bits), reference.view(bits)):
            raise AssertionError(f"{op} {dtype} {n}: shape {name} differs from the first shape's output")
    fns["torch"] = lambda: torch_op(op)(*inputs)
    fns["copy"] = lambda: copy_out.copy_(x)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, seconds in interleaved_median_seconds(fns, x.device).items():
            samples[name].append(seconds)
    return {
        "op": op,
        "dtype": str(dtype).removeprefix("torch."),
        "numel": n,
        "shipped": shipped_shape(
            op, n_packs, x.element_size(), shapes, lambda u: modules[128, "plain"].run(op, out, inputs, u, -1)
        ),
        "us": {name: statistics.median(s) * 1e6 for name, s in samples.items()},
    }


def sweep(modules: dict, repeats: int, cases: list[tuple[str, torch.dtype]], sizes: list[int]) -> list[dict]:
    rows = []
    for op, dtype in cases:
        for n in sizes:
            rows.append(time_row(modules, op, dtype, n, repeats))
            print(format_row(rows[-1]), flush=True)
    return rows


def format_row(row: dict) -> str:
    us = row["us"]
    ours = {k: v for k, v in us.items() if k not in ("torch", "copy")}
    best = min(ours, key=ours.get)
    pct = lambda k: 100 * us["copy"] / us[k]  # noqa: E731
    return (
        f"{row['op']:18} {row['dtype']:8} 2^{int(math.log2(row['numel'])):<2} copy {us['copy']:8.1f} us | "
        f"torch {pct('torch'):5.1f}% | shipped {row['shipped']:8} {pct(row['shipped']):5.1f}% "
        f"({us['torch'] / us[row['shipped']]:.3f}x torch) | best {best:12} {pct(best):5.1f}% "
        f"({us['torch'] / us[best]:.3f}x torch) | " + " ".join(f"{k}:{pct(k):.0f}" for k in ours)
    )


def ncu_launches(modules: dict) -> None:
    """One launch each, at 2^20 elements: our shipped shape and torch's kernel, for ncu to profile."""
    for op, dtype in (("relu", torch.float32), ("relu", torch.bfloat16), ("selu", torch.float32)):
        x = torch.randn(2**20, device="cuda", dtype=dtype)
        out = torch.empty_like(x)
        modules[128, "plain"].run(op, out, [x], elements_unroll(x.element_size()), 0)
        torch_op(op)(x)
    torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ncu", action="store_true", help="one launch per kernel, for ncu")
    parser.add_argument("--cases", nargs="+", help="op:dtype pairs, e.g. selu_alpha_dropout:bfloat16 (default: all)")
    parser.add_argument("--sizes", nargs="+", type=int, help="log2 of the element counts (default: 16 to 28 by 2)")
    parser.add_argument("--threads", nargs="+", type=int, choices=THREADS, default=THREADS, help="block sizes to build")
    parser.add_argument("--loads", nargs="+", choices=LOADS, default=["plain"], help="load kinds to build")
    args = parser.parse_args()
    known = {f"{op}:{str(dtype).removeprefix('torch.')}": (op, dtype) for op, dtype in CASES}
    if args.cases and not set(args.cases) <= known.keys():
        parser.error(f"--cases takes op:dtype pairs of {sorted(known)}")
    cases = [known[c] for c in args.cases] if args.cases else CASES
    if args.sizes and not all(3 <= e <= 30 for e in args.sizes):
        parser.error("--sizes takes log2 element counts from 3 to 30")
    sizes = [2**e for e in args.sizes] if args.sizes else SIZES
    threads = tuple(sorted(set(args.threads)))
    if 128 not in threads:
        parser.error("--threads must include 128, the shipped block size")
    builds = [(t, loads) for t in threads for loads in dict.fromkeys(["plain", *args.loads])]
    with ThreadPoolExecutor(len(builds)) as pool:
        modules = dict(zip(builds, pool.map(lambda b: build(*b), builds), strict=True))
    if args.ncu:
        return ncu_launches(modules)
    print(
        f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; % of a device copy's bandwidth, "
        f"medians of {args.repeats} interleaved runs; t: threads a block, u: packs a thread, w: grid capped at "
        f"w waves of resident blocks",
        flush=True,
    )
    rows = sweep(modules, args.repeats, cases, sizes)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
