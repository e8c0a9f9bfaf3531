"""Benchmark of the act ops under torch.compile: fused (the default), opaque (fusion off), and torch's own ops.

Usage: ``python benchmarks/fusion.py [--dtypes ...] [--sizes ...] [--json PATH]``.
Each figure is the median of CUDA-event timings with the L2 cache flushed before every run (wall clock on the
CPU). Rows:
- ``chain selu``: ``act.selu(x * 2) + 1``; ``chain relu``: ``act.relu(x + b) * y``, forward (``fwd``) and
  forward plus backward (``fwd+bwd``), against the same chain written with ``torch.selu`` / ``torch.relu``;
- ``isolated selu``: a compiled ``act.selu`` alone, against our eager kernel (``eager`` column);
- ``mlp``: Linear -> act -> Linear, and ``ffn``: x + Linear(act(Linear(LayerNorm(x)))), forward plus backward,
  against the same model with ``nn.SELU`` / ``nn.ReLU``.
``% copy`` is the fused version's bandwidth against a device-to-device copy of the bytes the chain must move.
"""

import argparse
import functools
import json
import math
import re
import sys
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from bench import DTYPES, parse_size
from torch import nn
from torch._inductor.utils import run_and_get_code

import activations_ext
from activations_ext.timing import interleaved_median_seconds

CHAINS: dict[str, tuple[Callable[..., torch.Tensor], Callable[..., torch.Tensor], int]] = {
    # name: (ours, torch's, tensors read per element)
    "selu": (lambda x, b, y: torch.ops.act.selu(x * 2) + 1, lambda x, b, y: torch.selu(x * 2) + 1, 1),
    "relu": (lambda x, b, y: torch.ops.act.relu(x + b) * y, lambda x, b, y: torch.relu(x + b) * y, 3),
}


@dataclass
class Row:
    """One line of the report; times in microseconds, None where the column does not apply."""

    case: str
    mode: str
    dtype: str
    size: str
    fused_us: float
    opaque_us: float
    torch_us: float  # timed beside fused_us (switch on)
    torch_off_us: float  # timed beside opaque_us (switch off)
    eager_us: float | None = None
    copy_us: float | None = None
    kernels_fused: str = ""
    kernels_opaque: str = ""


def make_row(case: str, mode: str, dtype: torch.dtype, size: str, times: dict[str, float], **kernels: str) -> Row:
    """A row from ``time_variants``' times (``eager`` and ``copy`` where they were timed)."""
    return Row(
        case,
        mode,
        str(dtype).removeprefix("torch."),
        size,
        times["fused"],
        times["opaque"],
        times["torch@on"],
        times["torch@off"],
        eager_us=times.get("eager@on"),
        copy_us=times.get("copy@on"),
        **kernels,
    )


def own_code(fn: Callable) -> Callable:
    """``fn`` with a code object of its own: torch.compile caches compiled code per code object, and each
    variant measured here must keep its own."""
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


KERNEL_DEFINITION = re.compile(r"async_compile\.(triton|cpp_pybinding|cpp)\(")


def kernels_in(code: str) -> int:
    """How many kernels (Triton or C++) one piece of Inductor's generated code defines."""
    return len(KERNEL_DEFINITION.findall(code))


def kernel_counts(fn: Callable[[], object]) -> str:
    """'forward/backward' kernels in the code compiled while ``fn`` first runs."""
    _, code = run_and_get_code(fn)
    return "/".join(str(kernels_in(c)) for c in code)


def time_variants(variants: dict[str, tuple[bool | None, Callable[[], object]]], device: torch.device) -> dict:
    """Median times of the variants, each run with the fusion switch it names (None: either state).

    Two phases, switch off then on, each timing its variants in turns; a variant that runs either way is
    timed in both, as ``name@off`` and ``name@on``, so every ratio compares times taken side by side.
    """
    times = {}
    for fusion in (False, True):
        activations_ext.set_inductor_fusion(fusion)
        phase = {name: fn for name, (need, fn) in variants.items() if need in (fusion, None)}
        for name, seconds in interleaved_median_seconds(phase, device).items():
            either = variants[name][0] is None
            times[f"{name}@{'on' if fusion else 'off'}" if either else name] = seconds * 1e6
    activations_ext.set_inductor_fusion(None)
    return times


def chain_rows(name: str, dtype: torch.dtype, size: str, device: torch.device) -> list[Row]:
    ours, theirs, reads = CHAINS[name]
    n = math.prod(parse_size(size))
    generator = torch.Generator(device=device).manual_seed(0)
    x, y, grad = (torch.randn(n, dtype=dtype, device=device, generator=generator) for _ in range(3))
    b = torch.randn(n, dtype=dtype, device=device, generator=generator)
    rows = []
    for mode in ("fwd", "fwd+bwd"):
        compiled = {
            "fused": (True, torch.compile(own_code(ours), fullgraph=True, dynamic=False)),
            "opaque": (False, torch.compile(own_code(ours), fullgraph=True, dynamic=False)),
            "torch": (None, torch.compile(own_code(theirs), fullgraph=True, dynamic=False)),
        }
        leaf = x.detach().requires_grad_(mode == "fwd+bwd")

        def call(fn: Callable, leaf: torch.Tensor = leaf) -> Callable[[], object]:
            if leaf.requires_grad:
                return lambda: fn(leaf, b, y).backward(grad)
            return lambda: fn(leaf, b, y)

        kernels = {}
        for variant, (fusion, fn) in compiled.items():
            activations_ext.set_inductor_fusion(True if fusion is None else fusion)
            kernels[variant] = kernel_counts(call(fn))
        variants = {v: (f, call(fn)) for v, (f, fn) in compiled.items()}
        if mode == "fwd":
            # A copy moving the bytes the chain must move: its inputs read once, its output written once.
            src = torch.randn((reads + 1) * n // 2, dtype=dtype, device=device, generator=generator)
            variants["copy"] = (None, functools.partial(torch.empty_like(src).copy_, src))
        times = time_variants(variants, device)
        rows.append(
            make_row(
                f"chain {name}",
                mode,
                dtype,
                size,
                times,
                kernels_fused=kernels["fused"],
                kernels_opaque=kernels["opaque"],
            )
        )
    return rows


def isolated_row(dtype: torch.dtype, size: str, device: torch.device) -> Row:
    x = torch.randn(parse_size(size), dtype=dtype, device=device, generator=torch.Generator(device).manual_seed(0))

    def selu(t: torch.Tensor) -> torch.Tensor:
        return torch.ops.act.selu(t)

    variants = {
        "fused": (True, torch.compile(own_code(selu), fullgraph=True, dynamic=False)),
        "opaque": (False, torch.compile(own_code(selu), fullgraph=True, dynamic=False)),
        "torch": (None, torch.compile(torch.selu, fullgraph=True, dynamic=False)),
        "eager": (None, torch.ops.act.selu.default),
        "copy": (None, torch.empty_like(x).copy_),
    }
    times = time_variants({v: (f, lambda fn=fn: fn(x)) for v, (f, fn) in variants.items()}, device)
    return make_row("isolated selu", "fwd", dtype, size, times)


class FFN(nn.Module):
    """A transformer-style feed-forward block with a residual: x + down(act(up(norm(x))))."""

    def __init__(self, dim: int, hidden: int, act: nn.Module) -> None:
        super().__init__()
        self.norm, self.up, self.act, self.down = nn.LayerNorm(dim), nn.Linear(dim, hidden), act, nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        return x + self.down(self.act(self.up(self.norm(x))))


def model_rows(dtype: torch.dtype, device: torch.device) -> list[Row]:
    rows = []
    tokens, dim = 8192, 4096
    x = torch.randn(tokens, dim, dtype=dtype, device=device, generator=torch.Generator(device).manual_seed(0))
    builders = {
        "mlp": lambda act: nn.Sequential(nn.Linear(dim, dim), act, nn.Linear(dim, dim)),
        "ffn": lambda act: FFN(dim, 2 * dim, act),
    }
    for case, build in builders.items():
        for act_name, ours, theirs in (
            ("selu", activations_ext.SELU, nn.SELU),
            ("relu", activations_ext.ReLU, nn.ReLU),
        ):
            torch.manual_seed(0)
            model_ours = build(ours()).to(device, dtype)
            model_opaque, model_theirs = build(ours()).to(device, dtype), build(theirs()).to(device, dtype)
            model_opaque.load_state_dict(model_ours.state_dict())
            model_theirs.load_state_dict(model_ours.state_dict())
            variants = {
                "fused": (True, torch.compile(model_ours)),
                "opaque": (False, torch.compile(model_opaque)),
                "torch": (None, torch.compile(model_theirs)),
            }
            calls = {v: (f, lambda m=m: m(x).sum().backward()) for v, (f, m) in variants.items()}
            times = time_variants(calls, device)
            rows.append(make_row(f"{case} {act_name}", "fwd+bwd", dtype, f"{tokens}x{dim}", times))
    return rows


def format_table(rows: list[Row]) -> str:
    head = (
        f"{'case':14} {'mode':8} {'dtype':9} {'size':10} {'fused us':>9} {'opaque':>9} {'torch':>9} "
        f"{'fused/torch':>11} {'opaque/torch':>12} {'fused/eager':>11} {'% copy':>7} {'kernels f|o':>12}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        vs_eager = f"{r.eager_us / r.fused_us:10.2f}x" if r.eager_us else f"{'-':>11}"
        copy = f"{100 * r.copy_us / r.fused_us:6.1f}%" if r.copy_us else f"{'-':>7}"
        kernels = f"{r.kernels_fused}|{r.kernels_opaque}" if r.kernels_fused else "-"
        lines.append(
            f"{r.case:14} {r.mode:8} {r.dtype:9} {r.size:10} {r.fused_us:9.1f} {r.opaque_us:9.1f} {r.torch_us:9.1f} "
            f"{r.torch_us / r.fused_us:10.2f}x {r.torch_off_us / r.opaque_us:11.2f}x {vs_eager} {copy} {kernels:>12}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="python benchmarks/fusion.py", description=__doc__.split("\n")[0])
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"], choices=list(DTYPES))
    parser.add_argument("--sizes", nargs="+", default=["2^24", "2^26"] if cuda else ["2^20"])
    parser.add_argument("--device", default="cuda" if cuda else "cpu")
    parser.add_argument("--no-models", action="store_true", help="skip the MLP and FFN rows (CUDA only)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    rows = []
    for size in args.sizes:
        for dtype in (DTYPES[d] for d in args.dtypes):
            rows += chain_rows("selu", dtype, size, device) + chain_rows("relu", dtype, size, device)
        rows += [isolated_row(dtype, size, device) for dtype in (torch.bfloat16, torch.float16)]
    if not args.no_models and device.type == "cuda":
        rows += model_rows(torch.bfloat16, device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "rows": [asdict(r) for r in rows]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
