"""The largest error of float32 activations and their gradients from the input, over every float32 on one device.

Every bit pattern (NaNs left out, or every ``--stride``-th one) goes through each op's forward and its backward from
the input (grad = 1), against the catalog's float64 references, in ulps as the tests measure them (of the result, or
of the terms a gradient cancels); results whose reference rounds to +-inf must equal it. Prints, per op, the largest
error and the input where it occurs. Run from the repository root on a machine with the extension built:

    python benchmarks/probes/float32_ulp_sweep.py --device cuda --ops silu gelu gelu_tanh quick_gelu
"""

import argparse

import torch

from activations_ext.catalog import ACTIVATIONS
from activations_ext.numerics import ulp_error


def float32_patterns(start: int, stop: int, stride: int, device: str) -> torch.Tensor:
    """The float32 values of bit patterns start, start + stride, ... below stop (NaNs left out)."""
    bits = torch.arange(start, stop, stride, dtype=torch.int64, device=device)
    x = torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32).view(torch.float32)
    return x[~x.isnan()]


def worst(actual: torch.Tensor, expected: torch.Tensor, x: torch.Tensor, scale: torch.Tensor | None) -> tuple:
    """The largest ulp error of ``actual`` and the input where it occurs; infinite and NaN results must match."""
    rounded = expected.float()
    infinite = rounded.isinf()
    if not torch.equal(actual.isnan(), expected.isnan()) or not torch.equal(actual[infinite], rounded[infinite]):
        return float("inf"), float("nan")
    finite = rounded.isfinite()
    error = ulp_error(actual[finite], expected[finite], torch.float32, None if scale is None else scale[finite])
    i = int(error.argmax())
    return error[i].item(), x[finite][i].item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--ops", nargs="+", default=["silu", "gelu", "gelu_tanh", "quick_gelu"], choices=ACTIVATIONS)
    parser.add_argument("--stride", type=int, default=1, help="every stride-th bit pattern")
    parser.add_argument("--chunk", type=int, default=2**25, help="inputs a step")
    args = parser.parse_args()
    found: dict[str, tuple[float, float]] = {}
    step = args.chunk * args.stride
    for start in range(0, 2**32, step):
        x = float32_patterns(start, min(start + step, 2**32), args.stride, args.device)
        x64 = x.double()
        ones, ones64 = torch.ones_like(x), torch.ones_like(x64)
        for name in args.ops:
            a = ACTIVATIONS[name]
            form = a.gradient(is_result=False)
            measured = {
                name: worst(a.ops.forward(x), a.reference(x64), x, a.scale(x64) if a.scale else None),
                a.gradient_name(form): worst(
                    a.ops.backward(ones, x, is_result=False),
                    form.reference(ones64, x64),
                    x,
                    form.scale(ones64, x64) if form.scale else None,
                ),
            }
            for op, (error, at) in measured.items():
                if op not in found or not error <= found[op][0]:
                    found[op] = (error, at)
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"float32, every {args.stride} of 2^32 patterns, {device}, torch {torch.__version__}")
    for op, (error, at) in found.items():
        print(f"{op:28s} max {error:.4f} ulp at x = {at:.9g}")


if __name__ == "__main__":
    main()
