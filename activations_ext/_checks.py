"""The ops' argument checks in Python, in the C++ checks' words.

The fake kernels run them, so that ``torch.compile`` rejects bad input at trace time as eager does.
"""

import torch

from activations_ext.catalog import DTYPES


def check_dtype(op: str, t: torch.Tensor, arg: str) -> None:
    if t.dtype not in DTYPES:
        raise TypeError(f"act.{op}: expected {arg} of dtype float32, float64, float16 or bfloat16, but got {t.dtype}")


def check_matches(op: str, t: torch.Tensor, arg: str, like: torch.Tensor, like_arg: str) -> None:
    if t.device != like.device:
        raise RuntimeError(f"act.{op}: expected {arg} on the device of {like_arg} ({like.device}), but got {t.device}")
    if t.dtype != like.dtype:
        raise TypeError(f"act.{op}: expected {arg} of the dtype of {like_arg} ({like.dtype}), but got {t.dtype}")
    if t.shape != like.shape:
        raise RuntimeError(
            f"act.{op}: expected {arg} of the shape of {like_arg} {list(like.shape)}, but got {list(t.shape)}"
        )


def check_probability(op: str, p: float) -> None:
    if not 0 <= p <= 1:
        raise ValueError(f"act.{op}: expected p in [0, 1], but got {p}")


def check_selu_alpha_dropout(x: torch.Tensor, p: float) -> None:
    """selu_alpha_dropout's forward, in either mode."""
    check_dtype("selu_alpha_dropout", x, "x")
    check_probability("selu_alpha_dropout", p)


def check_out(op: str, x: torch.Tensor, out: torch.Tensor) -> None:
    """An activation's out= form: the output matches the input, as the ops neither broadcast, cast nor resize."""
    check_dtype(op, x, "x")
    check_matches(op, out, "out", x, "x")


def check_backward(op: str, grad_output: torch.Tensor, self_or_result: torch.Tensor) -> None:
    """An activation's backward op ``op(grad_output, self_or_result, is_result=...)``."""
    check_dtype(op, self_or_result, "self_or_result")
    check_matches(op, grad_output, "grad_output", self_or_result, "self_or_result")


def check_selu_alpha_dropout_backward(
    grad_output: torch.Tensor, x: torch.Tensor, rng_state: torch.Tensor, p: float
) -> None:
    op = "selu_alpha_dropout_backward"
    check_dtype(op, x, "x")
    check_matches(op, grad_output, "grad_output", x, "x")
    check_probability(op, p)
    check_rng_state(op, rng_state, x)


def check_rng_state(op: str, rng_state: torch.Tensor, x: torch.Tensor) -> None:
    """The (seed, offset) pair a train-mode forward returned beside its result."""
    contiguous = rng_state.is_contiguous()
    if not (rng_state.dtype == torch.int64 and rng_state.numel() == 2 and contiguous and rng_state.device == x.device):
        raise RuntimeError(
            f"act.{op}: expected rng_state as the forward returned it (2 contiguous torch.int64 on the device of x), "
            f"but got {'' if contiguous else 'non-contiguous '}{rng_state.dtype} of shape {list(rng_state.shape)} "
            f"on {rng_state.device}"
        )


def check_halves(op: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A gated op's merged input ``x = [..., 2d]``: its gate and up halves along the last dimension."""
    check_dtype(op, x, "x")
    if x.dim() < 1 or x.shape[-1] % 2:
        raise RuntimeError(
            f"act.{op}: expected x of shape [..., 2d] (the gate and up halves along its last dimension), but got "
            f"{list(x.shape)}"
        )
    d = x.shape[-1] // 2
    return x.narrow(-1, 0, d), x.narrow(-1, d, d)


def check_pair(op: str, gate: torch.Tensor, up: torch.Tensor) -> None:
    """A gated op's two inputs: one dtype, device and shape."""
    check_dtype(op, gate, "gate")
    check_matches(op, up, "up", gate, "gate")
