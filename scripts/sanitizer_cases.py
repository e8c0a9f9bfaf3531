"""CUDA work for compute-sanitizer: every op (selu_alpha_dropout's forward and backward too, and the gated forms'
two-output backward), form and dtype on odd sizes, unaligned and strided views, rows, empty tensors, and more
dimensions than one launch takes.

Run it under memcheck, racecheck and initcheck (scripts/device_check.sh does); it also checks results, so a
sanitizer-clean run that computes wrong values still fails. Every input and reference is made on the CPU and
copied over: initcheck, restricted to our kernels, counts memory written by torch's own kernels as uninitialized
(their writes are not instrumented), so inputs made on the GPU would be reported at every read.
"""

from collections.abc import Callable

import torch

import activations_ext  # noqa: F401  (registers the ops)
from activations_ext.catalog import ACTIVATIONS, GATED, alpha_dropout_kept

SIZES = [0, 1, 3, 7, 9, 33, 4099]


def views(n: int) -> list[Callable[[torch.Tensor], torch.Tensor]]:
    """Views of about n elements into a buffer of 2n + 16: contiguous, at odd offsets (unaligned), every other
    element, transposed, and rows (the second half of a chunk, a narrow with a head and a tail)."""
    cases = [lambda b: b[:n], lambda b: b[1 : n + 1], lambda b: b[3 : n + 3], lambda b: b[: 2 * n : 2]]
    if n > 1:
        if n % 2 == 0:
            cases.append(lambda b: b[:n].view(2, -1).t())
        else:
            cases.append(lambda b: b[1 : n + 1].view(1, n).t())
    if n >= 24:
        rows = n // 24
        cases.append(lambda b: b[: 48 * rows].view(rows, 48).chunk(2, dim=-1)[1])
        cases.append(lambda b: b[: 48 * rows].view(rows, 48)[:, 3:27])
    return cases


def gated_views(n: int) -> list[Callable[[torch.Tensor], torch.Tensor]]:
    """[rows, 2d] views for the gated forms: d odd and even, rows contiguous, strided and transposed."""
    if n < 8:
        return []
    cases = [lambda b: b[: n - n % 2].view(1, -1), lambda b: b[1 : 1 + 2 * (n // 6) * 3].view(-1, 6)]
    if n >= 32:  # rows of 2 * 8: each half a 16-byte pack of the 16-bit types in every row
        cases.append(lambda b: b[: 16 * (n // 16)].view(-1, 16))
    cases.append(lambda b: b[: 8 * (n // 8)].view(-1, 8)[:, 1:7])  # d = 3, rows 8 apart, off 16-byte boundaries
    cases.append(lambda b: b[: 4 * (n // 4)].view(4, -1).t()[:, :2])  # columns: every element its own pack
    return cases


def on_gpu(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor copied to the GPU with its strides (a host-to-device copy initializes the memory it writes)."""
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cuda").copy_(t)


def check_random_op(x: torch.Tensor, contiguous_grad: bool = False) -> None:
    """The random op's backward, at a gradient of ones laid out as ``x`` where it is dense (else, or if asked,
    contiguous), replays its forward's mask: a zero gradient exactly where it dropped."""
    y, state = torch.ops.act._selu_alpha_dropout(x, 0.3)
    ones = torch.ones(x.shape, dtype=x.dtype) if contiguous_grad else torch.ones_like(x, device="cpu")
    grad = torch.ops.act.selu_alpha_dropout_backward(on_gpu(ones), x, state, 0.3)
    assert torch.equal(grad.cpu() == 0, ~alpha_dropout_kept(y.cpu(), 0.3))


def check_gated(x: torch.Tensor, x_cpu: torch.Tensor) -> int:
    """Every gated op on ``x`` as a merged input (its last dimension even) and on its halves as two tensors, with
    out= and both backwards, against torch's composition on the CPU; the number of ops checked."""
    d = x.shape[-1] // 2
    gate, up = x[..., :d], x[..., d:]
    grad_cpu = torch.linspace(-2, 2, gate.numel(), dtype=torch.float64).view(gate.shape).to(x.dtype)
    grad = on_gpu(grad_cpu)
    checked = 0
    for gated in GATED.values():
        ops = gated.ops
        reference = gated.torch_composition(x_cpu[..., :d].double(), x_cpu[..., d:].double())
        out = torch.empty(gate.shape, dtype=x.dtype, device="cuda")
        for t in (ops.merged(x), ops.pair(gate, up), ops.merged_out(x, out=out)):
            torch.testing.assert_close(t.cpu().double(), reference, rtol=2e-2, atol=1e-5)
        grad_gate, grad_up = ops.pair_backward(grad, gate, up)
        grad_x = ops.merged_backward(grad, x)
        assert torch.equal(grad_x.cpu(), torch.cat([grad_gate.cpu(), grad_up.cpu()], -1))
        expected_gate, expected_up = gated.gradient_references(grad_cpu, x_cpu[..., :d], x_cpu[..., d:])
        torch.testing.assert_close(grad_gate.cpu().double(), expected_gate, rtol=2e-2, atol=1e-5)
        torch.testing.assert_close(grad_up.cpu().double(), expected_up, rtol=2e-2, atol=1e-5)
        checked += 1
    return checked


def main() -> None:
    checked = 0
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for n in SIZES:
            base_cpu = torch.randn(2 * n + 16, dtype=torch.float64).to(dtype)
            base = on_gpu(base_cpu)
            for view in [*views(n), *gated_views(n)]:
                x = view(base)
                for activation in ACTIVATIONS.values():
                    op = activation.name
                    reference = activation.torch_forward(view(base_cpu))
                    ours = getattr(torch.ops.act, op)(x)
                    out = torch.empty(x.shape, dtype=dtype, device="cuda")
                    getattr(torch.ops.act, op)(x, out=out)
                    inplace = getattr(torch.ops.act, op + "_")(view(on_gpu(base_cpu)))
                    for t in (ours, out, inplace):
                        torch.testing.assert_close(t.cpu(), reference, rtol=2e-2, atol=1e-5)
                    for gradient in activation.gradients:
                        saved = ours if gradient.is_result else x
                        grad = getattr(torch.ops.act, op + "_backward")(x, saved, is_result=gradient.is_result)
                        torch.testing.assert_close(
                            grad.cpu(), gradient.torch_op(view(base_cpu), saved.cpu()), rtol=2e-2, atol=1e-5
                        )
                    checked += 1
                check_random_op(x)
                checked += 1
                if x.dim() == 2 and x.shape[-1] % 2 == 0:
                    checked += check_gated(x, view(base_cpu))
    # More dimensions than one launch describes (25): a reversed input into a contiguous result goes in parts.
    # Compared on the CPU, whose elementwise loops take any number of dimensions.
    x = on_gpu(torch.randn((2,) * 26, dtype=torch.bfloat16)).permute(*range(25, -1, -1))
    for op, activation in ACTIVATIONS.items():
        out = torch.empty(x.shape, dtype=x.dtype, device="cuda")
        getattr(torch.ops.act, op)(x, out=out)
        torch.testing.assert_close(out.cpu(), activation.torch_forward(x.cpu()), rtol=2e-2, atol=1e-5)
        checked += 1
    # The random op's backward with a contiguous gradient, in parts: its words still numbered as the forward's.
    check_random_op(x, contiguous_grad=True)
    checked += 1
    torch.cuda.synchronize()
    print(f"sanitizer cases: {checked} views x ops checked")


if __name__ == "__main__":
    main()
