"""The main job: environment, a correctness check of every op on every device, and a short benchmark.

Run it with ``python -m activations_ext``; it exits non-zero if any check fails.
"""

import platform
import sys

import torch

import activations_ext
from activations_ext.numerics import DTYPES, SELU_SCALE, max_ulp_errors, selu_reference
from activations_ext.timing import median_seconds, per_call_seconds

TOLERANCE = {torch.float64: 1e-14, torch.float32: 3e-7, torch.float16: 1e-3, torch.bfloat16: 8e-3}


def devices() -> list[torch.device]:
    """The CPU and, when visible, the current CUDA device."""
    return [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])


def print_environment() -> None:
    """Versions, devices, and which kernels the extension holds."""
    built = [key for key in ("CPU", "CUDA") if torch._C._dispatch_has_kernel_for_dispatch_key("act::selu", key)]
    print(
        f"activations_ext {activations_ext.__version__}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
        f"Python {platform.python_version()}"
    )
    print(f"kernels built: {', '.join(built)}")
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        print(f"GPU: {props.name}, {props.multi_processor_count} SMs, {props.total_memory / 2**30:.0f} GiB")
    else:
        print("GPU: none visible")


def check_ops() -> bool:
    """Every op and dtype on every device against a float64 reference; prints one line per device."""
    ok = True
    for device in devices():
        failed: list[str] = []
        checked = 0
        for dtype in DTYPES:
            x64 = torch.randn(4099, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 4
            x = x64.to(dtype=dtype, device=device)
            xr = x.double().cpu()
            selu_ref = selu_reference(xr)
            relu_ref = xr.clamp_min(0)
            g = torch.rand_like(x) + 0.5
            cases = {
                "selu": (torch.ops.act.selu(x), selu_ref),
                "relu": (torch.ops.act.relu(x), relu_ref),
                "selu_": (torch.ops.act.selu_(x.clone()), selu_ref),
                "relu.out": (torch.ops.act.relu(x, out=torch.full_like(x, float("nan"))), relu_ref),
                "selu_backward": (torch.ops.act.selu_backward(g, x.abs()), g.double().cpu() * SELU_SCALE),
                "relu_backward": (torch.ops.act.relu_backward(g, -x.abs()), torch.zeros_like(xr)),
            }
            for name, (actual, expected) in cases.items():
                error = ((actual.double().cpu() - expected).abs() / expected.abs().clamp_min(1e-30)).max().item()
                checked += 1
                if not error <= TOLERANCE[dtype]:
                    failed.append(f"{name}/{dtype} (relative error {error:.2e})")
        print(
            f"check {device.type}: {checked} op/dtype cases, "
            f"{'all within one rounding of float64' if not failed else 'FAILED: ' + ', '.join(failed)}"
        )
        ok &= not failed
    return ok


def print_ulp_table() -> None:
    """The largest error of each op in ulps of its dtype, over SELU's whole range, on every device."""
    ops = ("selu", "selu_backward", "relu", "relu_backward")
    print(f"\nmax ulp error vs float64\n{'device':6} {'dtype':9}" + "".join(f" {op:>14}" for op in ops))
    for device in devices():
        for dtype, errors in max_ulp_errors(device).items():
            print(f"{device.type:6} {str(dtype)[6:]:9}" + "".join(f" {errors[op]:>14.3f}" for op in ops))


def benchmark() -> None:
    """Ours vs torch: bandwidth on a large tensor, and per-call host time on a small one."""
    print(f"\n{'device':6} {'op':5} {'dtype':9} {'elements':>10} {'ours GB/s':>10} {'torch GB/s':>10} {'speedup':>8}")
    for device in devices():
        n = 2**26 if device.type == "cuda" else 2**22
        for name in ("selu", "relu"):
            for dtype in (torch.float32, torch.bfloat16):
                x = torch.randn(n, dtype=dtype, device=device)
                ours = median_seconds(lambda: getattr(torch.ops.act, name)(x), device)  # noqa: B023
                theirs = median_seconds(lambda: getattr(torch, name)(x), device)  # noqa: B023
                gbps = 2 * x.numel() * x.element_size() / 1e9
                print(
                    f"{device.type:6} {name:5} {str(dtype)[6:]:9} {n:>10} {gbps / ours:>10.1f} {gbps / theirs:>10.1f}"
                    f" {theirs / ours:>7.2f}x"
                )
    print(
        f"\n{'per-call host time, 1024 elements':42} {'torch.selu':>10} {'act.selu':>9} {'ratio':>6}"
        f" {'activations_ext.selu':>21}"
    )
    for device in devices():
        x = torch.randn(1024, device=device)
        for grad in (False, True):
            x.requires_grad_(grad)
            t = per_call_seconds(
                {
                    "torch": lambda: torch.selu(x),  # noqa: B023
                    "op": lambda: torch.ops.act.selu.default(x),  # noqa: B023
                    "api": lambda: activations_ext.selu(x),  # noqa: B023
                },
                device,
            )
            label = f"{device.type}, requires_grad={grad}"
            print(
                f"{label:42} {t['torch'] * 1e6:>8.2f}us {t['op'] * 1e6:>7.2f}us {t['op'] / t['torch']:>5.2f}x"
                f" {t['api'] * 1e6:>11.2f}us ({t['api'] / t['torch']:.2f}x)"
            )


def main() -> int:
    """Prints the report; returns the process exit status."""
    print_environment()
    ok = check_ops()
    print_ulp_table()
    benchmark()
    print("\nresult:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
