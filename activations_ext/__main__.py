"""The main job: environment, a correctness check of every op on every device, and a short benchmark.

Run it with ``python -m activations_ext [--device cpu|cuda|all] [--quick] [--json PATH]``; it exits non-zero if any
check fails.
"""

import argparse
import json
import platform
import sys

import torch

import activations_ext
from activations_ext.catalog import ACTIVATIONS, GATED, ONE_ROUNDING_RTOL, alpha_dropout_kept
from activations_ext.numerics import DTYPES, max_ulp_errors
from activations_ext.timing import median_seconds, per_call_seconds


def devices(choice: str) -> list[torch.device]:
    """The devices named by ``--device``: cpu, cuda, or all (the CPU and, when visible, the current CUDA device)."""
    cuda = [torch.device("cuda")] if torch.cuda.is_available() else []
    return {"cpu": [torch.device("cpu")], "cuda": cuda, "all": [torch.device("cpu"), *cuda]}[choice]


def environment() -> dict:
    """Versions, the GPU, and which kernels the extension holds; printed as it is gathered."""
    built = [key for key in ("CPU", "CUDA") if torch._C._dispatch_has_kernel_for_dispatch_key("act::selu", key)]
    env = {
        "activations_ext": activations_ext.__version__,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "kernels": built,
        "gpu": None,
    }
    print(
        f"activations_ext {env['activations_ext']}, torch {env['torch']} (CUDA {env['cuda']}), Python {env['python']}"
    )
    print(f"kernels built: {', '.join(built)}")
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = props.name
        print(f"GPU: {props.name}, {props.multi_processor_count} SMs, {props.total_memory / 2**30:.0f} GiB")
    else:
        print("GPU: none visible")
    return env


def check_ops(device: torch.device) -> list[str]:
    """Every activation's forms and every dtype on ``device`` against float64 references, and selu_alpha_dropout's
    statistics and mask; returns the failures and prints a line."""
    failed: list[str] = []
    checked = 0
    for dtype in DTYPES:
        x64 = torch.randn(4099, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 4
        x = x64.to(dtype=dtype, device=device)
        xr = x.double().cpu()
        g = torch.rand_like(x) + 0.5
        cases = {}
        for a in ACTIVATIONS.values():
            ops, (name, inplace, out, _) = a.ops, a.ops.names
            reference = a.reference(xr)
            result = ops.forward(x)
            cases[name] = (result, reference, None)
            cases[inplace] = (ops.inplace(x.clone()), reference, None)
            cases[out] = (ops.out(x, out=torch.full_like(x, float("nan"))), reference, None)
            for form in a.gradients:
                saved = result if form.is_result else x
                scale = form.scale(g.cpu(), saved.cpu()) if form.scale else None  # the terms it cancels
                expected = form.reference(g.cpu(), saved.cpu())
                cases[a.gradient_name(form)] = (ops.backward(g, saved, is_result=form.is_result), expected, scale)
        cases |= gated_cases(x, g)
        for name, (actual, expected, scale) in cases.items():
            size = expected.abs() if scale is None else torch.maximum(expected.abs(), scale.abs())
            # Relative to the smallest normal at least: below it a result has a subnormal ulp.
            error = ((actual.double().cpu() - expected).abs() / size.clamp_min(torch.finfo(dtype).tiny)).max().item()
            checked += 1
            if not error <= ONE_ROUNDING_RTOL[dtype]:
                failed.append(f"{name}/{dtype} (relative error {error:.2e})")
    failed += check_selu_alpha_dropout(device)
    verdict = "all within one rounding of float64" if not failed else "FAILED: " + ", ".join(failed)
    print(f"check {device.type}: {checked} op/dtype cases, {verdict}")
    return failed


def gated_cases(x: torch.Tensor, g: torch.Tensor) -> dict:
    """The gated ops on gate = x and up = x rolled by one, merged (a 1-D [2d] input) and as two tensors, with their
    out= forms and gradients: name -> (result, float64 reference, scale or None)."""
    up = x.roll(1)
    merged = torch.cat([x, up])
    gate_r, up_r, g_r = x.double().cpu(), up.double().cpu(), g.double().cpu()
    cases = {}
    for gated in GATED.values():
        ops, names = gated.ops, gated.ops.names
        reference, scale = gated.reference(gate_r, up_r), gated.scale(gate_r, up_r)
        cases[names[0]] = (ops.merged(merged), reference, scale)
        cases[names[1]] = (ops.merged_out(merged, out=torch.full_like(x, float("nan"))), reference, scale)
        cases[names[3]] = (ops.pair(x, up), reference, scale)
        cases[names[4]] = (ops.pair_out(x, up, out=torch.full_like(x, float("nan"))), reference, scale)
        expected, scales = gated.gradient_references(g_r, gate_r, up_r), gated.gradient_scales(g_r, gate_r, up_r)
        for name, grads in (
            (names[2], ops.merged_backward(g, merged).chunk(2)),
            (names[5], ops.pair_backward(g, x, up)),
        ):
            for which, grad, reference, scale in zip(("gate", "up"), grads, expected, scales, strict=True):
                cases[f"{name}({which})"] = (grad, reference, scale)
    return cases


def check_selu_alpha_dropout(device: torch.device, p: float = 0.1, n: int = 1 << 20) -> list[str]:
    """On standard-normal input: the kept fraction within 5 sigma of 1 - p, mean and variance within 0.01 of SELU's
    fixed point (0, 1), and a gradient that is zero exactly where the forward dropped; prints a line per dtype."""
    failed = []
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(n, generator=torch.Generator().manual_seed(1)).to(device=device, dtype=dtype).requires_grad_()
        y = torch.ops.act.selu_alpha_dropout(x, p, True)
        (grad,) = torch.autograd.grad(y, x, torch.ones_like(y))
        kept = alpha_dropout_kept(y.detach(), p)
        fraction, mean, var = kept.double().mean().item(), y.double().mean().item(), y.double().var().item()
        ok = (
            abs(fraction - (1 - p)) <= 5 * (p * (1 - p) / n) ** 0.5
            and abs(mean) <= 0.01
            and abs(var - 1) <= 0.01
            and torch.equal(grad == 0, ~kept)
        )
        print(
            f"selu_alpha_dropout {device.type} {str(dtype)[6:]:9} p={p}: kept {fraction:.4f}, mean {mean:+.4f}, "
            f"variance {var:.4f}, gradient zero exactly where dropped: {torch.equal(grad == 0, ~kept)}"
        )
        if not ok:
            failed.append(f"selu_alpha_dropout/{dtype}")
    return failed


def ulp_table(chosen: list[torch.device]) -> dict:
    """The largest error of each op in ulps of its dtype, over SELU's whole range; printed as a table."""
    ops = [op for a in ACTIVATIONS.values() for op in (a.name, *(a.gradient_name(g) for g in a.gradients))]
    print("\nmax ulp error vs float64 (_backward: from the result; _backward(x): from the input)")
    print(f"{'device':6} {'dtype':9}" + "".join(f" {op:>17}" for op in ops))
    table = {}
    for device in chosen:
        for dtype, errors in max_ulp_errors(device).items():
            table.setdefault(device.type, {})[str(dtype).removeprefix("torch.")] = errors
            print(f"{device.type:6} {str(dtype)[6:]:9}" + "".join(f" {errors[op]:>17.3f}" for op in ops))
    return table


def bandwidth(chosen: list[torch.device], quick: bool) -> list[dict]:
    """Ours vs torch on one large tensor per device, op and dtype (a gated op: on a [rows, 2 * 4096] input, against
    torch's act(gate) * up on its halves); printed as a table."""
    print(f"\n{'device':6} {'op':17} {'dtype':9} {'elements':>10} {'ours GB/s':>10} {'torch GB/s':>10} {'speedup':>8}")
    calls = {name: (a.ops.forward, a.torch_forward, 1) for name, a in ACTIVATIONS.items()}
    calls |= {
        name: (g.ops.merged, lambda x, g=g: g.torch_composition(*x.chunk(2, dim=-1)), 2) for name, g in GATED.items()
    }
    rows = []
    for device in chosen:
        n = (2**26 if device.type == "cuda" else 2**22) // (16 if quick else 1)
        for name, (ours_fn, theirs_fn, inputs) in calls.items():
            for dtype in (torch.float32, torch.bfloat16):
                # n elements read (n / 2 rows of [gate, up] for a gated op) and the result written.
                x = torch.randn(n, dtype=dtype, device=device).view(-1, 2 * 4096) if inputs == 2 else None
                x = torch.randn(n, dtype=dtype, device=device) if x is None else x
                ours = median_seconds(lambda: ours_fn(x), device)  # noqa: B023
                theirs = median_seconds(lambda: theirs_fn(x), device)  # noqa: B023
                gb = (1 + 1 / inputs) * x.numel() * x.element_size() / 1e9
                rows.append(
                    {"device": device.type, "op": name, "dtype": str(dtype)[6:], "elements": n, "ours_gbps": gb / ours}
                    | {"torch_gbps": gb / theirs, "speedup": theirs / ours}
                )
                print(
                    f"{device.type:6} {name:17} {str(dtype)[6:]:9} {n:>10} {gb / ours:>10.1f} {gb / theirs:>10.1f}"
                    f" {theirs / ours:>7.2f}x"
                )
    return rows


def per_call(chosen: list[torch.device], quick: bool) -> list[dict]:
    """Host time per call on a small tensor: torch.selu, the op, and the Python API; printed as a table."""
    # Speedups as in the bandwidth table: torch's time over ours (above 1x: ours is faster).
    print(
        f"\n{'per-call host time, 1024 elements':42} {'torch.selu':>10} {'act.selu':>9} {'speedup':>8}"
        f" {'activations_ext.selu':>21}"
    )
    rows = []
    for device in chosen:
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
                **({"calls": 100, "rounds": 5} if quick else {}),
            )
            rows.append({"device": device.type, "requires_grad": grad} | {k: v * 1e6 for k, v in t.items()})
            label = f"{device.type}, requires_grad={grad}"
            print(
                f"{label:42} {t['torch'] * 1e6:>8.2f}us {t['op'] * 1e6:>7.2f}us {t['torch'] / t['op']:>7.2f}x"
                f" {t['api'] * 1e6:>11.2f}us ({t['torch'] / t['api']:.2f}x)"
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Prints the report (and writes it as JSON with ``--json``); returns the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m activations_ext", description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda", "all"], default="all", help="where to check and time")
    parser.add_argument("--quick", action="store_true", help="smaller benchmark tensors and fewer timing rounds")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    args = parser.parse_args(argv)
    chosen = devices(args.device)
    if not chosen:
        parser.error("--device cuda: no CUDA GPU is visible")

    report: dict = {"environment": environment()}
    failures = {device.type: check_ops(device) for device in chosen}
    report["checks"] = failures
    report["max_ulp_error"] = ulp_table(chosen)
    report["bandwidth"] = bandwidth(chosen, args.quick)
    report["per_call_us"] = per_call(chosen, args.quick)
    ok = not any(failures.values())
    report["result"] = "PASS" if ok else "FAIL"
    print("\nresult:", report["result"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
