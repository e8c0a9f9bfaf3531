"""CUDA work for compute-sanitizer: every op, form and dtype on odd sizes, unaligned views and empty tensors.

Run it under memcheck, racecheck and initcheck (scripts/device_check.sh does); it also checks results, so a
sanitizer-clean run that computes wrong values still fails.
"""

import torch

import activations_ext  # noqa: F401  (registers the ops)

SIZES = [0, 1, 3, 7, 9, 33, 4099]


def views(n: int, dtype: torch.dtype) -> list[torch.Tensor]:
    """Contiguous, at odd offsets (unaligned), strided and transposed tensors of n elements."""
    base = torch.randn(2 * n + 16, device="cuda", dtype=torch.float64).to(dtype)
    cases = [base[:n], base[1 : n + 1], base[3 : n + 3], base[: 2 * n : 2]]
    if n > 1:
        cases.append(base[: n - n % 2].view(2, -1).t() if n % 2 == 0 else base[1 : n + 1].view(1, n).t())
    return cases


def main() -> None:
    checked = 0
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for n in SIZES:
            for x in views(n, dtype):
                for op in ("selu", "relu"):
                    reference = getattr(torch, op)(x)
                    ours = getattr(torch.ops.act, op)(x)
                    out = torch.empty(x.shape, dtype=dtype, device="cuda")
                    getattr(torch.ops.act, op)(x, out=out)
                    inplace = getattr(torch.ops.act, op + "_")(x.clone())
                    grad = (
                        torch.ops.act.selu_backward(x, reference)
                        if op == "selu"
                        else torch.ops.act.relu_backward(x, reference)
                    )
                    for t in (ours, out, inplace):
                        torch.testing.assert_close(t, reference, rtol=2e-2, atol=1e-5)
                    assert grad.shape == x.shape
                    checked += 1
    torch.cuda.synchronize()
    print(f"sanitizer cases: {checked} views x ops checked")


if __name__ == "__main__":
    main()
