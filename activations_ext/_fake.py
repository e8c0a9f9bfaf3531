"""Fake (meta) kernels: output shape, dtype and strides of every ``act`` op without computing it.

They mirror the C++ checks so that ``torch.compile`` rejects bad input at trace time with the
same message, and allocate outputs with ``empty_like`` exactly as the C++ kernels do. Tracing an op
also readies its fusion by Inductor (``activations_ext._inductor``).
"""

import torch

from activations_ext import _inductor
from activations_ext.catalog import ACTIVATIONS, DTYPES


def _check_dtype(op: str, t: torch.Tensor, arg: str) -> None:
    if t.dtype not in DTYPES:
        raise TypeError(f"act.{op}: expected {arg} of dtype float32, float64, float16 or bfloat16, but got {t.dtype}")


def _check_matches(op: str, t: torch.Tensor, arg: str, like: torch.Tensor, like_arg: str) -> None:
    if t.device != like.device:
        raise RuntimeError(f"act.{op}: expected {arg} on the device of {like_arg} ({like.device}), but got {t.device}")
    if t.dtype != like.dtype:
        raise TypeError(f"act.{op}: expected {arg} of the dtype of {like_arg} ({like.dtype}), but got {t.dtype}")
    if t.shape != like.shape:
        raise RuntimeError(
            f"act.{op}: expected {arg} of the shape of {like_arg} {list(like.shape)}, but got {list(t.shape)}"
        )


def _register(op: str) -> None:
    @torch.library.register_fake(f"act::{op}")
    def _forward(x: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        _check_dtype(op, x, "x")
        return torch.empty_like(x)

    @torch.library.register_fake(f"act::{op}_")
    def _inplace(x: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        _check_dtype(op, x, "x")
        return x

    @torch.library.register_fake(f"act::{op}.out")
    def _out(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        _check_dtype(op, x, "x")
        _check_matches(op, out, "out", x, "x")
        return out

    @torch.library.register_fake(f"act::{op}_backward")
    def _backward(grad_output: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
        _inductor.prepare()
        _check_dtype(f"{op}_backward", result, "result")
        _check_matches(f"{op}_backward", grad_output, "grad_output", result, "result")
        return torch.empty_like(result)


for _op in ACTIVATIONS:
    _register(_op)


def _check_probability(op: str, p: float) -> None:
    if not 0 <= p <= 1:
        raise ValueError(f"act.{op}: expected p in [0, 1], but got {p}")


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
    _check_dtype("selu_alpha_dropout", x, "x")
    _check_probability("selu_alpha_dropout", p)
    _check_no_recomputation("selu_alpha_dropout")
    return torch.empty_like(x), x.new_empty((2,), dtype=torch.int64)


@torch.library.register_fake("act::selu_alpha_dropout_backward")
def _selu_alpha_dropout_backward(
    grad_output: torch.Tensor, x: torch.Tensor, rng_state: torch.Tensor, p: float
) -> torch.Tensor:
    op = "selu_alpha_dropout_backward"
    _check_dtype(op, x, "x")
    _check_matches(op, grad_output, "grad_output", x, "x")
    _check_probability(op, p)
    contiguous = rng_state.is_contiguous()
    if not (rng_state.dtype == torch.int64 and rng_state.numel() == 2 and contiguous and rng_state.device == x.device):
        raise RuntimeError(
            f"act.{op}: expected rng_state as the forward returned it (2 contiguous torch.int64 on the device of x), "
            f"but got {'' if contiguous else 'non-contiguous '}{rng_state.dtype} of shape {list(rng_state.shape)} "
            f"on {rng_state.device}"
        )
    return torch.empty_like(x)
