"""Benchmark: ours vs torch eager vs torch.compile vs a device-to-device copy (the bandwidth roofline).

Usage: ``python benchmarks/bench.py [--ops ...] [--dtypes ...] [--sizes ...] [--layouts ...] [--repeats N]
[--json PATH] [--plot PATH]``.
The implementations of one row run in turns (ours, torch, torch.compile, the copy), each run on a cold L2 and
timed by CUDA events around the device's work only (wall clock on the CPU); a figure is the median of
``--repeats`` such interleaved runs of 25 rounds each, each run on operands of its own, and ``spread`` gives the
lowest and highest ours-vs-torch ratio among them. Bandwidth counts the bytes every op must move: one read and one
write per element for the forward ops, two reads and a write for the backward ops. Below the table, per op, dtype
and layout: the geometric mean of ours-vs-torch over the sizes measured, and the lowest row.

An op ending in ``+bwd`` times the forward and ``torch.autograd.grad`` through it (five passes over memory: the
forward's read and write, the backward's two reads and a write). ``selu_alpha_dropout`` (train mode, p = 0.1) is
compared with ``alpha_dropout(selu(x))``; for it and its ``+bwd`` the report adds each variant's peak memory above
its inputs during the forward and backward.
"""

import argparse
import functools
import json
import math
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

import torch

import activations_ext  # noqa: F401  (registers the ops)
from activations_ext import catalog
from activations_ext.timing import interleaved_median_seconds

DTYPES = {str(dtype).removeprefix("torch."): dtype for dtype in catalog.DTYPES}
CUDA_SIZES = ["2^16", "2^18", "2^20", "2^22", "2^24", "2^26", "4096x393216"]
CPU_SIZES = ["2^16", "2^18", "2^20", "2^22"]
# Each activation's forward, in-place, out= and backward forms and its forward and backward through autograd
# (+bwd), and the fused SELU + AlphaDropout.
DROPOUT_OPS = ["selu_alpha_dropout", "selu_alpha_dropout+bwd"]
OPS = [f"{name}{form}" for form in ("", "_", ".out", "_backward", "+bwd") for name in catalog.ACTIVATIONS] + DROPOUT_OPS
DROPOUT_P = 0.1
# contiguous; strided: every other element along the last dimension; chunk: the first half of
# ``t.chunk(2, dim=-1)`` for rows of 4096 (the gated-MLP idiom), contiguous rows with a row stride.
LAYOUTS = ["contiguous", "strided", "chunk"]
CHUNK_ROW = 4096
# The most bytes of a row's earlier runs' operands kept alive, so that its next run's lie elsewhere.
KEEP_BYTES = 2**30
# % of the copy roofline above which a contiguous row is flagged as suspect rather than reported.
SUSPECT_PERCENT = 110


def parse_size(size: str) -> tuple[int, ...]:
    """'2^20' -> (1048576,), '4096x393216' -> (4096, 393216)."""
    if "^" in size:
        base, exponent = size.split("^")
        return (int(base) ** int(exponent),)
    return tuple(int(d) for d in size.split("x"))


@dataclass
class Case:
    """One op's three implementations, as functions of prepared operands."""

    reads: int  # passes over memory besides the one write: tensors read per element, for most ops
    ours: Callable[..., object]
    torch: Callable[..., object]
    inputs: int | None = None  # operands to make, if not ``reads``
    # For a forward-and-backward case (ours and torch then take (x, grad)): torch's forward alone, which
    # torch.compile compiles, and which requires grad of x.
    torch_forward: Callable[[torch.Tensor], torch.Tensor] | None = None

    def compiled_torch(self) -> Callable[..., object]:
        """torch.compile of torch's implementation; for a forward-and-backward case, of its forward,
        differentiated by autograd around it."""
        if self.torch_forward is None:
            return torch.compile(self.torch, dynamic=True)
        forward = compiled_forward(self.torch_forward)
        return lambda x, g: torch.autograd.grad(forward(x), x, g)


@functools.cache
def compiled_forward(forward: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """torch.compile of a forward function, once per function (dynamic shapes: sizes reuse it)."""
    return torch.compile(forward, dynamic=True)


def _torch_selu_alpha_dropout(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.alpha_dropout(torch.selu(x), DROPOUT_P, True)


def _ours_selu_alpha_dropout(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.act.selu_alpha_dropout(x, DROPOUT_P, True)


def gradient_case(ours_forward: Callable, torch_forward: Callable) -> Case:
    """Forward and ``torch.autograd.grad`` through it, of x and a gradient: five passes over memory."""
    return Case(
        4,
        lambda x, g: torch.autograd.grad(ours_forward(x), x, g),
        lambda x, g: torch.autograd.grad(torch_forward(x), x, g),
        inputs=2,
        torch_forward=torch_forward,
    )


def make_case(op: str) -> Case:
    """The implementations of ``op``; in-place and out= forms are compared with torch's own in-place and out=
    kernels, which write the same tensor."""
    if op == "selu_alpha_dropout":
        return Case(1, _ours_selu_alpha_dropout, _torch_selu_alpha_dropout)
    if op == "selu_alpha_dropout+bwd":
        return gradient_case(_ours_selu_alpha_dropout, _torch_selu_alpha_dropout)
    base = op.split(".")[0].removesuffix("+bwd").rstrip("_").replace("_backward", "")
    activation = catalog.ACTIVATIONS[base]
    ours_packet = getattr(torch.ops.act, base)
    torch_fn = activation.torch_forward
    if op.endswith("+bwd"):
        return gradient_case(ours_packet.default, torch_fn)
    if op.endswith("_backward"):
        # The backward op's default form (from the result where it has one) on two operands of random data.
        return Case(2, getattr(torch.ops.act, f"{base}_backward").default, activation.gradients[0].torch_op)
    if op.endswith("_"):
        return Case(1, getattr(torch.ops.act, f"{base}_").default, activation.torch_inplace)
    if op.endswith(".out"):
        return Case(1, lambda x, out: ours_packet.out(x, out=out), activation.torch_out)
    return Case(1, ours_packet.default, torch_fn)


@dataclass
class Row:
    """One line of the report."""

    device: str
    op: str
    dtype: str
    size: str
    elements: int
    bytes: int
    ours_us: float
    torch_us: float
    compile_us: float | None
    copy_us: float  # copying one operand: 2 * elements * itemsize bytes
    copy_bytes: int
    layout: str = "contiguous"
    spread: tuple[float, float] | None = None  # lowest and highest ours-vs-torch ratio over the repeats

    @staticmethod
    def gbps_of(n_bytes: int, us: float) -> float:
        return n_bytes / us / 1e3

    def gbps(self, us: float) -> float:
        """This op's bandwidth at a run time of ``us`` microseconds."""
        return self.gbps_of(self.bytes, us)

    @property
    def roofline_gbps(self) -> float:
        """The copy's bandwidth: reading and writing memory as fast as this device can."""
        return self.gbps_of(self.copy_bytes, self.copy_us)

    @property
    def vs_torch(self) -> float:
        """How many times faster than torch's op ours ran."""
        return self.torch_us / self.ours_us

    @property
    def percent_of_roofline(self) -> float:
        return 100 * self.gbps(self.ours_us) / self.roofline_gbps


def operands(
    case: Case, op: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, layout: str
) -> list:
    """Random operands (normal data over both branches, never all zeros) for one call of ``op``, in ``layout``;
    an ``out=`` tensor is contiguous and poisoned with NaN."""
    generator = torch.Generator(device=device).manual_seed(0)
    if layout == "chunk" and len(shape) == 1:
        row = math.gcd(shape[0], CHUNK_ROW)
        shape = (shape[0] // row, row)
    stored = shape if layout == "contiguous" else (*shape[:-1], 2 * shape[-1])
    count = case.inputs or case.reads
    tensors = [torch.randn(stored, dtype=dtype, device=device, generator=generator) for _ in range(count)]
    if layout == "strided":
        tensors = [t[..., ::2] for t in tensors]
    elif layout == "chunk":
        tensors = [t.chunk(2, dim=-1)[0] for t in tensors]
    if op.endswith(".out"):
        tensors.append(torch.full(shape, float("nan"), dtype=dtype, device=device))
    if case.torch_forward is not None:
        tensors[0].requires_grad_()
    return tensors


_compiled: dict[str, Callable[..., object]] = {}


def compiled_torch(op: str, case: Case) -> Callable[..., object]:
    """torch.compile of torch's implementation, one per op."""
    if op not in _compiled:
        _compiled[op] = case.compiled_torch()
    return _compiled[op]


def measure(
    op: str,
    size: str,
    dtype: torch.dtype,
    device: torch.device,
    with_compile: bool,
    layout: str = "contiguous",
    repeats: int = 1,
) -> Row:
    """Times ours, torch eager, torch.compile and a copy of the same operand (into a contiguous tensor) for one
    op, dtype, size and layout, in turns; each time is the median over ``repeats`` interleaved runs.

    Each run has operands of its own, at new addresses where the earlier runs' fit in ``KEEP_BYTES``: where its
    buffers lie moves a mid-size time by up to 5%, for ours and torch's alike, so one placement would bias every
    run of a row the same way."""
    case = make_case(op)
    compiled = compiled_torch(op, case) if with_compile else None
    kept: list[list[torch.Tensor]] = []
    runs = []
    for _ in range(repeats):
        args = operands(case, op, parse_size(size), dtype, device, layout)
        dst = torch.empty(args[0].shape, dtype=dtype, device=device)
        variants = {
            "ours": lambda args=args: case.ours(*args),
            "torch": lambda args=args: case.torch(*args),
            "copy": lambda args=args, dst=dst: dst.copy_(args[0]),
        }
        if compiled is not None:
            variants["compile"] = lambda args=args: compiled(*args)
        runs.append(interleaved_median_seconds(variants, device))
        if sum(t.untyped_storage().nbytes() for t in [*args, dst]) * (len(kept) + 1) <= KEEP_BYTES:
            kept.append([*args, dst])
    elements = args[0].numel()
    itemsize = args[0].element_size()
    us = {name: statistics.median(run[name] for run in runs) * 1e6 for name in variants}
    ratios = [run["torch"] / run["ours"] for run in runs]
    return Row(
        device.type,
        op,
        str(dtype).removeprefix("torch."),
        size,
        elements,
        (case.reads + 1) * elements * itemsize,
        us["ours"],
        us["torch"],
        us.get("compile"),
        us["copy"],
        2 * elements * itemsize,
        layout,
        (min(ratios), max(ratios)),
    )


@dataclass
class MemoryRow:
    """What the forward and backward of the SELU + AlphaDropout variants keep: bytes per element saved for the
    backward, and on CUDA the peak memory above the inputs (MiB) during the forward and backward."""

    device: str
    dtype: str
    size: str
    saved_bytes_per_element: dict[str, float]
    peak_mib: dict[str, float] | None


def saved_bytes(fn: Callable[[], object]) -> int:
    """The bytes of the tensors autograd saves for the backward while ``fn`` runs its forward."""
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return total


def measure_memory(size: str, dtype: torch.dtype, device: torch.device) -> MemoryRow:
    """Saved bytes and peak memory of ours, torch eager and torch.compile for one forward and backward."""
    case = make_case("selu_alpha_dropout+bwd")
    x, g = operands(case, "selu_alpha_dropout+bwd", parse_size(size), dtype, device, "contiguous")
    compiled = compiled_forward(_torch_selu_alpha_dropout)  # the benchmark's own compile, when it ran
    forwards = {"ours": _ours_selu_alpha_dropout, "torch": _torch_selu_alpha_dropout, "compile": compiled}
    compiled(x)  # compile before measuring
    saved = {name: saved_bytes(lambda f=f: f(x)) / x.numel() for name, f in forwards.items()}
    peak = None
    if device.type == "cuda":
        peak = {}
        for name, forward in forwards.items():
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
            torch.autograd.grad(forward(x), x, g)
            torch.cuda.synchronize(device)
            peak[name] = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    return MemoryRow(device.type, str(dtype).removeprefix("torch."), size, saved, peak)


def format_memory(rows: list[MemoryRow]) -> str:
    """Saved bytes per element and peak MiB per variant."""
    names = ("ours", "torch", "compile")
    head = f"{'selu_alpha_dropout+bwd':22} {'dtype':9} {'size':12} " + " ".join(
        f"{'saved B/el ' + n:>18}" for n in names
    )
    head += " " + " ".join(f"{'peak MiB ' + n:>16}" for n in names)
    lines = [head, "-" * len(head)]
    for r in rows:
        line = f"{r.device:22} {r.dtype:9} {r.size:12} " + " ".join(
            f"{r.saved_bytes_per_element[n]:18.3f}" for n in names
        )
        if r.peak_mib:
            line += " " + " ".join(f"{r.peak_mib[n]:16.1f}" for n in names)
        lines.append(line)
    return "\n".join(lines)


def fits(op: str, size: str, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether the operands, outputs and copies fit comfortably in the device's memory."""
    if device.type != "cuda":
        return True
    needed = 12 * math.prod(parse_size(size)) * torch.empty((), dtype=dtype).element_size()
    return needed < 0.8 * torch.cuda.get_device_properties(device).total_memory


def progress(items: list, enabled: bool) -> Iterable:
    """Progress over ``items`` on stderr: tqdm's bar (the ``bench`` extra installs it), else a line per item."""
    if not enabled:
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return _progress_lines(items)
    return tqdm(items, desc="benchmark", file=sys.stderr)


def _progress_lines(items: list) -> Iterable:
    for i, item in enumerate(items, 1):
        print(f"benchmark {i}/{len(items)}: {' '.join(map(str, item))}", file=sys.stderr, flush=True)
        yield item


def format_table(rows: list[Row]) -> str:
    """A fixed-width table: GB/s per implementation, % of the copy roofline, speedups."""
    head = (
        f"{'device':6} {'op':22} {'dtype':9} {'size':12} {'layout':10} {'ours GB/s':>9} {'torch':>7} {'compile':>8} "
        f"{'copy':>7} {'%roof':>6} {'vs torch':>8} {'spread':>11} {'vs compile':>10}"
    )
    lines = [head, "-" * len(head)]
    suspect = False
    for r in rows:
        compile_gbps = f"{r.gbps(r.compile_us):8.4g}" if r.compile_us else f"{'-':>8}"
        vs_compile = f"{r.compile_us / r.ours_us:9.2f}x" if r.compile_us else f"{'-':>10}"
        spread = f"{r.spread[0]:.2f}-{r.spread[1]:.2f}x" if r.spread else "-"
        # Past the copy of the same bytes, a contiguous op is beyond what memory allows: the timing, not the op.
        flag = "?" if r.layout == "contiguous" and r.percent_of_roofline > SUSPECT_PERCENT else " "
        suspect |= flag == "?"
        lines.append(
            f"{r.device:6} {r.op:22} {r.dtype:9} {r.size:12} {r.layout:10} {r.gbps(r.ours_us):9.4g} "
            f"{r.gbps(r.torch_us):7.4g} {compile_gbps} {r.roofline_gbps:7.4g} {r.percent_of_roofline:5.1f}%{flag}"
            f"{r.vs_torch:7.2f}x {spread:>11} {vs_compile}"
        )
    if suspect:
        lines.append(
            f"? above {SUSPECT_PERCENT}% of the copy: suspect, not a result (a busy machine, or data left in cache)"
        )
    return "\n".join(lines)


def format_summary(rows: list[Row]) -> str:
    """Per op, dtype and layout: the geometric mean of ours-vs-torch over the sizes measured, and the lowest row."""
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.op, r.dtype, r.layout), []).append(r)
    head = f"{'op':22} {'dtype':9} {'layout':10} {'sizes':>5} {'geomean vs torch':>16} {'lowest (size)':>20}"
    lines = [head, "-" * len(head)]
    for (op, dtype, layout), group in groups.items():
        geomean = math.exp(sum(math.log(r.vs_torch) for r in group) / len(group))
        low = min(group, key=lambda r: r.vs_torch)
        lowest = f"{low.vs_torch:.2f}x ({low.size})"
        lines.append(f"{op:22} {dtype:9} {layout:10} {len(group):5} {geomean:15.3f}x {lowest:>20}")
    return "\n".join(lines)


def plot(rows: list[Row], path: str, title: str) -> None:
    """Bandwidth vs size, one panel per op, one line per implementation and dtype, the copy roofline in grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = list(dict.fromkeys(r.op for r in rows))
    columns = min(4, len(ops))
    figure, axes = plt.subplots(
        math.ceil(len(ops) / columns),
        columns,
        figsize=(4.5 * columns, 3.6 * math.ceil(len(ops) / columns)),
        squeeze=False,
    )
    for ax, op in zip(axes.flat, ops, strict=False):
        for dtype, layout in dict.fromkeys((r.dtype, r.layout) for r in rows):
            series = sorted(
                (r for r in rows if (r.op, r.dtype, r.layout) == (op, dtype, layout)), key=lambda r: r.elements
            )
            if not series:
                continue
            label = dtype if layout == "contiguous" else f"{dtype} {layout}"
            x = [r.elements for r in series]
            (line,) = ax.plot(x, [r.gbps(r.ours_us) for r in series], "o-", label=f"ours {label}")
            for name, style, times in (
                ("torch", "s--", [r.torch_us for r in series]),
                ("compile", "^:", [r.compile_us for r in series]),
            ):
                if all(times):
                    ax.plot(
                        x,
                        [r.gbps(t) for r, t in zip(series, times, strict=True)],
                        style,
                        color=line.get_color(),
                        alpha=0.6,
                        label=f"{name} {label}",
                    )
            ax.plot(
                x,
                [r.roofline_gbps for r in series],
                "-",
                color="black",
                lw=3,
                alpha=0.15,
                label="copy (roofline)" if (dtype, layout) == (rows[0].dtype, rows[0].layout) else None,
            )
        ax.set_xscale("log", base=2)
        ax.set_title(op)
        ax.set_xlabel("elements")
        ax.set_ylabel("GB/s")
    for ax in list(axes.flat)[len(ops) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def run(
    ops: list[str],
    dtypes: list[str],
    sizes: list[str],
    device: torch.device,
    with_compile: bool,
    show_progress: bool = True,
    layouts: list[str] = LAYOUTS[:1],
    repeats: int = 1,
) -> list[Row]:
    """Measures every combination that fits on the device."""
    combos = [
        (op, d, s, layout)
        for op in ops
        for d in dtypes
        for s in sizes
        for layout in layouts
        if fits(op, s, DTYPES[d], device)
    ]
    rows = []
    for op, d, s, layout in progress(combos, show_progress):
        rows.append(measure(op, s, DTYPES[d], device, with_compile, layout, repeats))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def report(device: str, torch_version: str, rows: list[Row], memory: list[MemoryRow], plot_path: str | None) -> None:
    """Prints the rows' table, summary and memory table, and draws the plot if asked: measured or read back."""
    print(f"device: {device}; torch {torch_version}")
    print(format_table(rows))
    print(format_summary(rows))
    if memory:
        print(format_memory(memory))
    if plot_path:
        plot(rows, plot_path, f"activations_ext on {device}")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="python benchmarks/bench.py", description=__doc__.split("\n")[0])
    parser.add_argument("--ops", nargs="+", default=OPS, choices=OPS)
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument(
        "--sizes", nargs="+", default=CUDA_SIZES if cuda else CPU_SIZES, help="element counts as 2^N or shapes as AxB"
    )
    parser.add_argument("--layouts", nargs="+", default=LAYOUTS[:1], choices=LAYOUTS)
    parser.add_argument("--device", default="cuda" if cuda else "cpu")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile column")
    parser.add_argument(
        "--repeats", type=int, help="interleaved runs per row; the figure is their median (default 3 on CUDA, else 1)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--plot", metavar="PATH", help="also draw bandwidth vs size to a PNG")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--from-json", metavar="PATH", help="report (and plot) rows saved by --json, measuring nothing")
    args = parser.parse_args(argv)

    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        rows = [Row(**r) for r in saved["rows"]]
        memory = [MemoryRow(**r) for r in saved.get("memory", [])]
        report(saved["device"], saved["torch"], rows, memory, args.plot)
        return 0

    device = torch.device(args.device)
    repeats = args.repeats or (3 if device.type == "cuda" else 1)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    rows = run(args.ops, args.dtypes, args.sizes, device, not args.no_compile, not args.quiet, args.layouts, repeats)
    memory = []
    if "selu_alpha_dropout+bwd" in args.ops:
        memory = [
            measure_memory(s, DTYPES[d], device)
            for d in args.dtypes
            for s in args.sizes
            if fits("selu_alpha_dropout+bwd", s, DTYPES[d], device)
        ]
    if args.json:
        with open(args.json, "w") as f:
            saved = {"device": name, "torch": torch.__version__, "rows": [asdict(r) for r in rows]}
            json.dump({**saved, "memory": [asdict(r) for r in memory]}, f, indent=1)
    report(name, torch.__version__, rows, memory, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
