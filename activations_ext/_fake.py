"""Fake (meta) kernels: output shape, dtype and strides of every ``act`` op without computing it.

They mirror the C++ checks so that ``torch.compile`` rejects bad input at trace time with the
same message, and allocate outputs with ``empty_like`` exactly as the C++ kernels do. Tracing an op
also readies its fusion by Inductor (``activations_ext._inductor``).
"""

import torch

from activations_ext import _inductor
from activations_ext._checks import (
    check_backward,
    check_dtype,
    check_halves,
    check_matches,
    check_out,
    check_pair,
    check_selu_alpha_dropout,
    check_selu_alpha_dropout_backward,
)
from activations_ext.catalog import ACTIVATIONS, GATED, Activation, Gated


def _register(activation: Activation) -> None:
    op, inplace, out, backward = activation.ops.names

    # Outputs laid out as ATen's TensorIterator lays out the ops' torch counterparts in eager mode, as the kernels
    # do.
    @torch.library.register_fake(f"act::{op}")
    def _forward(x: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        check_dtype(op, x, "x")
        return activation.torch_forward(x)

    @torch.library.register_fake(f"act::{inplace}")
    def _inplace(x: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        check_dtype(op, x, "x")
        return x

    @torch.library.register_fake(f"act::{out}")
    def _out(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        check_out(op, x, out)
        return out

    from_result = activation.gradient(is_result=True) is not None

    @torch.library.register_fake(f"act::{backward}")
    def _backward(
        grad_output: torch.Tensor, self_or_result: torch.Tensor, *, is_result: bool = from_result
    ) -> torch.Tensor:
        _inductor.prepare()
        check_backward(backward, grad_output, self_or_result)
        if is_result and not from_result:
            raise RuntimeError(
                f"act.{backward}: {op}'s gradient is taken from its input (is_result=False): its result does not "
                "determine it"
            )
        # aten.add's fake kernel lays out as eager TensorIterator does; elu_backward's own does not.
        if activation.backward_layout_from_grad:
            return torch.ops.aten.add(grad_output, self_or_result)
        return torch.ops.aten.add(self_or_result, grad_output)


for _activation in ACTIVATIONS.values():
    _register(_activation)


def _register_gated(gated: Gated) -> None:
    merged, merged_out, merged_backward, pair, pair_out, pair_backward = gated.ops.names

    # The result laid out as TensorIterator lays out an op on (gate, up), the merged form's gradient as x
    # (empty_like), the two-tensor form's each as an op on (grad_output, its input): as the kernels lay them out.
    @torch.library.register_fake(f"act::{merged}")
    def _merged(x: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        gate, up = check_halves(merged, x)
        return torch.ops.aten.mul(gate, up)

    @torch.library.register_fake(f"act::{merged_out}")
    def _merged_out(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        gate, _ = check_halves(merged, x)
        check_matches(merged, out, "out", gate, "x[..., :d]")
        return out

    @torch.library.register_fake(f"act::{merged_backward}")
    def _merged_backward(grad_output: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        gate, _ = check_halves(merged_backward, x)
        check_matches(merged_backward, grad_output, "grad_output", gate, "x[..., :d]")
        return torch.empty_like(x)

    @torch.library.register_fake(f"act::{pair}")
    def _pair(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        check_pair(pair, gate, up)
        return torch.ops.aten.mul(gate, up)

    @torch.library.register_fake(f"act::{pair_out}")
    def _pair_out(gate: torch.Tensor, up: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        check_pair(pair, gate, up)
        check_matches(pair, out, "out", gate, "gate")
        return out

    @torch.library.register_fake(f"act::{pair_backward}")
    def _pair_backward(
        grad_output: torch.Tensor, gate: torch.Tensor, up: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        _inductor.prepare()
        check_pair(pair_backward, gate, up)
        check_matches(pair_backward, grad_output, "grad_output", gate, "gate")
        return torch.ops.aten.add(grad_output, gate), torch.ops.aten.add(grad_output, up)


for _gated in GATED.values():
    _register_gated(_gated)


def _check_no_recomputation(op: str) -> None:
    """AOTAutograd's partitioner recomputes forward ops in the backward where these settings allow it, and it
    does not spare an op tagged nondeterministic_seeded: recomputed, this op would draw a new mask."""
    from torch._functorch import config

    if config.aggressive_recomputation or config.activation_memory_budget < 1:
        raise RuntimeError(
            f"act.{op}: torch._functorch.config.aggressive_recomputation or activation_memory_budget < 1 would let "
            "torch.compile recompute this random op in the backward, with a new mask; compile it without them"
        )


@torch.library.register_fake("act::_selu_alpha_dropout")
def _selu_alpha_dropout(
    x: torch.Tensor, p: float, *, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    check_selu_alpha_dropout(x, p)
    _check_no_recomputation("selu_alpha_dropout")
    return torch.empty_like(x), x.new_empty((2,), dtype=torch.int64)


@torch.library.register_fake("act::selu_alpha_dropout_backward")
def _selu_alpha_dropout_backward(
    grad_output: torch.Tensor, x: torch.Tensor, rng_state: torch.Tensor, p: float
) -> torch.Tensor:
    check_selu_alpha_dropout_backward(grad_output, x, rng_state, p)
    return torch.empty_like(x)
