"""Fake (meta) kernels: output shape, dtype and strides of every ``act`` op without computing it.

They mirror the C++ checks so that ``torch.compile`` rejects bad input at trace time with the
same message, and allocate outputs with ``empty_like`` exactly as the C++ kernels do. Tracing an op
also readies its fusion by Inductor (``activations_ext._inductor``).
"""

import torch

from activations_ext import _inductor

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _check_dtype(op: str, t: torch.Tensor, arg: str) -> None:
    if t.dtype not in SUPPORTED_DTYPES:
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


for _op in ("selu", "relu"):
    _register(_op)
