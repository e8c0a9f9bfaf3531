"""Benchmark of the gated activations (act(gate) * up) and of a gated MLP block.

Usage: ``python benchmarks/gated.py [--ops ...] [--dtypes ...] [--shapes ...] [--layouts ...] [--mlp] [--json PATH]``
Rows per op, layout, dtype and shape ``rows x d``, forward (``fwd``) and forward plus backward through autograd
(``fwd+bwd``). Layout ``merged``: ``x = [rows, 2d]`` from a fused gate/up projection, ours ``act_and_mul(x)``, the
others on the halves of x; ``pair``: two contiguous ``[rows, d]`` tensors from separate projections, ours
``act_mul(gate, up)`` (the layout Liger-Kernel's SwiGLU takes without a copy). Each row has ours, torch eager
(``act(gate) * up``), torch.compile of that expression, Liger-Kernel's fused SwiGLU (silu only, where
``liger_kernel`` is installed), and a device copy moving the same bytes (the roofline: forward, read 2d and write d
per row; backward, read the gradient and 2d, write 2d). Each figure is the median of interleaved runs on a cold L2
(CUDA events; wall clock on the CPU). Beside ours' device time, its wall clock per pass over passes queued back to
back (``wall us``): where that is the larger, the host sets the pace (dispatch, autograd, allocation), not the GPU.
``--mlp`` adds a compiled GatedMLP (4096 -> 14336 -> 4096, 8192 tokens on CUDA) forward plus backward against the
same block compiled with ``F.silu``, with each one's peak memory (CUDA).
"""

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from bench import DTYPES

import activations_ext
from activations_ext.catalog import GATED
from activations_ext.timing import interleaved_median_seconds, per_call_seconds

CUDA_SHAPES = ["8192x14336", "4096x4096", "256x4096"]
CPU_SHAPES = ["256x4096", "64x1024"]


def liger_silu_mul() -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None:
    """Liger-Kernel's fused SwiGLU product, silu(a) * b, where it is installed."""
    try:
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    except ImportError:
        return None
    return LigerSiLUMulFunction.apply


@dataclass
class Row:
    """One line of the report; times in microseconds (None where a variant does not apply)."""

    device: str
    op: str
    layout: str
    mode: str
    dtype: str
    shape: str
    ours_us: float
    eager_us: float
    compile_us: float
    liger_us: float | None
    copy_us: float
    ours_wall_us: float  # wall clock per pass of ours, passes back to back: the host's pace where above ours_us

    @property
    def percent_of_copy(self) -> float:
        return 100 * self.copy_us / self.ours_us


def forward_and_backward(forward: Callable[..., torch.Tensor], grad: torch.Tensor) -> Callable:
    """The forward through autograd and the gradients of its inputs for the output gradient ``grad``."""
    return lambda *inputs: torch.autograd.grad(forward(*inputs), inputs, grad)


def gate_and_up(layout: str, *inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The gate and up operands of a layout's inputs: the halves of x (merged), or the two tensors (pair)."""
    return inputs[0].chunk(2, dim=-1) if layout == "merged" else (inputs[0], inputs[1])


def measure(op: str, layout: str, mode: str, dtype: torch.dtype, shape: str, device: torch.device) -> Row:
    gated = GATED[op]
    rows, d = (int(n) for n in shape.split("x"))
    shapes = [(rows, 2 * d)] if layout == "merged" else [(rows, d), (rows, d)]
    inputs = tuple(torch.randn(s, dtype=dtype, device=device, requires_grad=mode == "fwd+bwd") for s in shapes)
    ours = gated.ops.merged if layout == "merged" else gated.ops.pair
    grad = torch.randn(rows, d, dtype=dtype, device=device)

    def eager(*t: torch.Tensor) -> torch.Tensor:
        return gated.torch_composition(*gate_and_up(layout, *t))

    torch._dynamo.reset()  # a compiled variant per row: past dynamo's cache limit the later rows would run eagerly
    forwards = {"ours": ours, "eager": eager, "compile": torch.compile(eager, dynamic=False)}
    variant_inputs = dict.fromkeys(forwards, inputs)
    liger = liger_silu_mul() if gated.activation.name == "silu" else None
    if liger is not None:
        forwards["liger"] = lambda *t: liger(*gate_and_up(layout, *t))
        # Liger's backward writes its gradients over the contiguous tensors it saved: on the pair layout, inputs of
        # its own, so that the other variants' data stays as drawn.
        variant_inputs["liger"] = tuple(t.detach().clone().requires_grad_(t.requires_grad) for t in inputs)
    # The bytes a pass must move at least, copied in one kernel: 3d per row forward, 5d more backward.
    moved = rows * d * (3 if mode == "fwd" else 8)
    source = torch.randn(moved // 2, dtype=dtype, device=device)
    target = torch.empty_like(source)
    passes = {name: f if mode == "fwd" else forward_and_backward(f, grad) for name, f in forwards.items()}
    variants = {name: (lambda p=p, i=variant_inputs[name]: p(*i)) for name, p in passes.items()}
    variants["copy"] = lambda: target.copy_(source)
    us = {name: t * 1e6 for name, t in interleaved_median_seconds(variants, device).items()}
    wall = per_call_seconds({"ours": variants["ours"]}, device, calls=100, rounds=5)["ours"]
    return Row(
        device.type,
        op,
        layout,
        mode,
        str(dtype).removeprefix("torch."),
        shape,
        us["ours"],
        us["eager"],
        us["compile"],
        us.get("liger"),
        us["copy"],
        wall * 1e6,
    )


@dataclass
class MlpRow:
    """A compiled gated MLP's forward plus backward: ours and torch's F.silu block, times and peak memory."""

    device: str
    dtype: str
    tokens: int
    ours_us: float
    torch_us: float
    ours_peak_mib: float | None
    torch_peak_mib: float | None


def measure_mlp(dtype: torch.dtype, device: torch.device, tokens: int, sizes: tuple[int, int]) -> MlpRow:
    width, hidden = sizes
    torch.manual_seed(0)
    ours = activations_ext.GatedMLP(width, hidden, device=device, dtype=dtype)

    def torch_block(t: torch.Tensor) -> torch.Tensor:
        gate, up = ours.gate_up(t).chunk(2, dim=-1)
        return ours.down(torch.nn.functional.silu(gate) * up)

    x = torch.randn(tokens, width, dtype=dtype, device=device, requires_grad=True)
    grad = torch.randn(tokens, width, dtype=dtype, device=device)
    blocks = {"ours": torch.compile(ours), "torch": torch.compile(torch_block)}
    steps = {name: (lambda b=b: torch.autograd.grad(b(x), [x, *ours.parameters()], grad)) for name, b in blocks.items()}
    us = {name: t * 1e6 for name, t in interleaved_median_seconds(steps, device).items()}
    peak = {}
    for name, step in steps.items():
        if device.type != "cuda":
            peak[name] = None
            continue
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        step()
        torch.cuda.synchronize(device)
        peak[name] = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    return MlpRow(device.type, str(dtype).removeprefix("torch."), tokens, us["ours"], us["torch"], *peak.values())


def format_rows(rows: list[Row]) -> str:
    head = (
        f"{'device':6} {'op':17} {'layout':6} {'mode':7} {'dtype':9} {'shape':11} {'ours us':>9} {'%copy':>6} "
        f"{'vs eager':>8} {'vs compile':>10} {'vs liger':>8} {'wall us':>9}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        liger = f"{r.liger_us / r.ours_us:7.2f}x" if r.liger_us else f"{'-':>8}"
        lines.append(
            f"{r.device:6} {r.op:17} {r.layout:6} {r.mode:7} {r.dtype:9} {r.shape:11} {r.ours_us:9.1f} "
            f"{r.percent_of_copy:5.1f}% {r.eager_us / r.ours_us:7.2f}x {r.compile_us / r.ours_us:9.2f}x {liger} "
            f"{r.ours_wall_us:9.1f}"
        )
    return "\n".join(lines)


def format_mlp(rows: list[MlpRow]) -> str:
    lines = [f"{'gated MLP fwd+bwd':18} {'dtype':9} {'tokens':>6} {'ours us':>9} {'vs torch':>8} {'peak MiB':>17}"]
    for r in rows:
        peak = f"{r.ours_peak_mib:.0f} vs {r.torch_peak_mib:.0f}" if r.ours_peak_mib is not None else "-"
        lines.append(
            f"{r.device:18} {r.dtype:9} {r.tokens:6} {r.ours_us:9.1f} {r.torch_us / r.ours_us:7.2f}x {peak:>17}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="python benchmarks/gated.py", description=__doc__.split("\n")[0])
    parser.add_argument("--ops", nargs="+", default=list(GATED), choices=list(GATED))
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"], choices=list(DTYPES))
    parser.add_argument("--shapes", nargs="+", default=CUDA_SHAPES if cuda else CPU_SHAPES, help="rows x d")
    parser.add_argument("--modes", nargs="+", default=["fwd", "fwd+bwd"], choices=["fwd", "fwd+bwd"])
    parser.add_argument("--layouts", nargs="+", default=["merged", "pair"], choices=["merged", "pair"])
    parser.add_argument("--mlp", action="store_true", help="also the compiled gated MLP block")
    parser.add_argument("--device", default="cuda" if cuda else "cpu")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    rows = [
        measure(op, layout, mode, DTYPES[d], shape, device)
        for op in args.ops
        for layout in args.layouts
        for mode in args.modes
        for d in args.dtypes
        for shape in args.shapes
    ]
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}; Liger-Kernel: {'yes' if liger_silu_mul() else 'not installed'}")
    print(format_rows(rows))
    mlp = []
    if args.mlp:
        tokens, sizes = (8192, (4096, 14336)) if device.type == "cuda" else (256, (256, 896))
        mlp = [measure_mlp(DTYPES[d], device, tokens, sizes) for d in args.dtypes]
        print(format_mlp(mlp))
    if args.json:
        with open(args.json, "w") as f:
            saved = {"device": name, "torch": torch.__version__, "rows": [asdict(r) for r in rows]}
            json.dump({**saved, "mlp": [asdict(r) for r in mlp]}, f, indent=1)
    return 0 if all(math.isfinite(r.ours_us) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
