"""What the stable-ABI build (``ACT_STABLE_ABI=1``) registers from Python, where the default build has C++.

torch's stable C ABI, at the release that build targets (2.11), carries kernels but no autograd, no generator
argument and no typed errors. So here, for every op: autograd (at the Autograd key, with the default build's
saved tensors and double backward), functionalization of the mutating ops, and the argument checks of the fake
kernels run first so that errors keep their Python types (TypeError for a dtype, ValueError for p). The two ops
that take a generator are defined here, and their train-mode forward draws its (seed, offset) pair with
``Tensor.random_`` on the input's device (captured by CUDA graphs like any random op) before the kernel
``_selu_alpha_dropout_from_state`` reads it: the same masks' statistics, a different stream from the default
build's. Under ``torch.inference_mode`` the Autograd key is skipped, and the C++ checks answer, as
RuntimeError or ValueError with the same words.
"""

import contextlib

import torch

from activations_ext import _checks
from activations_ext.catalog import ACTIVATIONS, Activation

_LIB = torch.library.Library("act", "FRAGMENT")  # noqa: TOR901 (kept for the process's lifetime)
_OPS = torch.ops.act


def _below_autograd() -> contextlib.AbstractContextManager[None]:
    return torch._C._AutoDispatchBelowAutograd()


def _records_graph(*tensors: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _check_inplace(x: torch.Tensor) -> None:
    """autograd's refusals of an in-place write, before anything is written."""
    if x.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if x._is_view() and x._base.is_leaf and x._base.requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def _register_activation(a: Activation) -> None:
    name = a.name
    forward, inplace = getattr(_OPS, name).default, getattr(_OPS, f"{name}_").default
    out_op, backward = getattr(_OPS, name).out, getattr(_OPS, f"{name}_backward").default

    class Forward(torch.autograd.Function):
        @staticmethod
        def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
            with _below_autograd():
                result = forward(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
            (result,) = ctx.saved_tensors
            return backward(grad, result)

    class Inplace(Forward):  # the same gradient, from the result it wrote over x
        @staticmethod
        def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
            with _below_autograd():
                inplace(x)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

    class Backward(torch.autograd.Function):
        @staticmethod
        def forward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
            with _below_autograd():
                grad_input = backward(grad, result)
            ctx.save_for_backward(grad, result)
            return grad_input

        @staticmethod
        def backward(
            ctx: torch.autograd.function.FunctionCtx, gg: torch.Tensor
        ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
            grad, result = ctx.saved_tensors
            of_grad = backward(gg, result) if ctx.needs_input_grad[0] else None
            of_result = None
            if ctx.needs_input_grad[1] and a.backward_grad_of_result is not None:
                of_result = a.backward_grad_of_result(gg, grad, result)
            return of_grad, of_result

    def forward_autograd(x: torch.Tensor) -> torch.Tensor:
        _checks.check_dtype(name, x, "x")
        if not _records_graph(x):
            with _below_autograd():
                return forward(x)
        return Forward.apply(x)

    def inplace_autograd(x: torch.Tensor) -> torch.Tensor:
        _checks.check_dtype(name, x, "x")
        if not _records_graph(x):
            with _below_autograd():
                inplace(x)
            torch.autograd.graph.increment_version(x)
            return x
        _check_inplace(x)
        return Inplace.apply(x)

    def out_autograd(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        _checks.check_out(name, x, out)
        if _records_graph(x, out):
            raise RuntimeError(
                f"act::{name}(): functions with out=... arguments don't support automatic differentiation, "
                "but one of the arguments requires grad."
            )
        with _below_autograd():
            out_op(x, out=out)
        torch.autograd.graph.increment_version(out)
        return out

    def backward_autograd(grad_output: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
        _checks.check_backward(name, grad_output, result)
        if not _records_graph(grad_output, result):
            with _below_autograd():
                return backward(grad_output, result)
        return Backward.apply(grad_output, result)

    _LIB.impl(name, forward_autograd, "Autograd")
    _LIB.impl(f"{name}_", inplace_autograd, "Autograd")
    _LIB.impl(f"{name}.out", out_autograd, "Autograd")
    _LIB.impl(f"{name}_backward", backward_autograd, "Autograd")

    # Functionalization: under torch.compile (and torch.func.functionalize) selu_(x) becomes x <- selu(x)
    # and selu(x, out=o) becomes o <- selu(x), as kernels/functionalize.cpp does in the default build.
    def exclude_functionalize() -> contextlib.AbstractContextManager[None]:
        return torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize))

    def assign_functional(target: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        if torch._is_functional_tensor(x):
            torch._functionalize_sync(x)
            x = torch._from_functional_tensor(x)
        with exclude_functionalize():
            result = forward(x)
        torch._functionalize_replace(target, result)
        torch._functionalize_commit_update(target)
        torch._functionalize_sync(target)
        return target

    def inplace_functionalized(x: torch.Tensor) -> torch.Tensor:
        if not torch._is_functional_tensor(x):
            with exclude_functionalize():
                return inplace(x)
        return assign_functional(x, x)

    def out_functionalized(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        if not torch._is_functional_tensor(out):
            if torch._is_functional_tensor(x):
                raise RuntimeError(
                    f"act::{name}.out: cannot write a functional tensor's result into a non-functional out="
                )
            with exclude_functionalize():
                return out_op(x, out=out)
        return assign_functional(out, x)

    _LIB.impl(f"{name}_", inplace_functionalized, "Functionalize")
    _LIB.impl(f"{name}.out", out_functionalized, "Functionalize")


class _SeluAlphaDropout(torch.autograd.Function):
    """The train-mode forward's node: saves x (laid out as when saved) and the drawn pair, as autograd.cpp's."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, p: float, generator: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        with _below_autograd():
            result, rng_state = _OPS._selu_alpha_dropout(x, p, generator=generator)
        ctx.mark_non_differentiable(rng_state)
        ctx.save_for_backward(x, rng_state)
        ctx.p, ctx.x_strides, ctx.result_strides = p, x.stride(), result.stride()
        return result, rng_state

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor, _: torch.Tensor | None
    ) -> tuple[torch.Tensor, None, None]:
        x, rng_state = ctx.saved_tensors
        return _OPS.selu_alpha_dropout_backward(grad, _as_saved(x, ctx), rng_state, ctx.p), None, None


def _as_saved(x: torch.Tensor, ctx: torch.autograd.function.FunctionCtx) -> torch.Tensor:
    """x in the layout it was saved in. A saved-tensor hook may hand it back laid out anew, and the backward numbers
    its random words by offsets in a result laid out like x."""
    if x.stride() == ctx.x_strides:
        return x
    return torch.empty_strided(x.shape, ctx.result_strides, dtype=x.dtype, device=x.device).copy_(x)


class _SeluAlphaDropoutBackward(torch.autograd.Function):
    """Double backward: grad * m * selu'(x) is linear in grad, and in x its derivative is itself where x <= 0."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor, x: torch.Tensor, rng_state: torch.Tensor, p: float
    ) -> torch.Tensor:
        with _below_autograd():
            grad_input = _OPS.selu_alpha_dropout_backward(grad, x, rng_state, p)
        ctx.save_for_backward(grad, x, rng_state)
        ctx.p, ctx.x_strides, ctx.result_strides = p, x.stride(), grad_input.stride()
        return grad_input

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, gg: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None]:
        grad, x, rng_state = ctx.saved_tensors
        x = _as_saved(x, ctx)
        backward = _OPS.selu_alpha_dropout_backward
        of_grad = backward(gg, x, rng_state, ctx.p) if ctx.needs_input_grad[0] else None
        of_x = None
        if ctx.needs_input_grad[1]:
            of_x = torch.where(x > 0, 0, backward(gg * grad, x, rng_state, ctx.p))
        return of_grad, of_x, None, None


def _register_selu_alpha_dropout() -> None:
    _LIB.define("selu_alpha_dropout(Tensor x, float p, bool train, *, Generator? generator=None) -> Tensor")
    _LIB.define(
        "_selu_alpha_dropout(Tensor x, float p, *, Generator? generator=None) -> (Tensor result, Tensor rng_state)",
        tags=(torch.Tag.nondeterministic_seeded,),
    )

    def selu_alpha_dropout(x: torch.Tensor, p: float, train: bool, *, generator: torch.Generator | None = None):
        _checks.check_selu_alpha_dropout(x, p)
        if not train or p == 0:
            return _OPS.selu(x)
        return _OPS._selu_alpha_dropout(x, p, generator=generator)[0]

    def train_forward(x: torch.Tensor, p: float, *, generator: torch.Generator | None = None):
        _checks.check_selu_alpha_dropout(x, p)
        # 63 random bits each for the Philox key and offset.
        rng_state = torch.empty(2, dtype=torch.int64, device=x.device).random_(generator=generator)
        return _OPS._selu_alpha_dropout_from_state(x, rng_state, p), rng_state

    def train_autograd(x: torch.Tensor, p: float, *, generator: torch.Generator | None = None):
        _checks.check_selu_alpha_dropout(x, p)
        if not _records_graph(x):
            with _below_autograd():
                return _OPS._selu_alpha_dropout(x, p, generator=generator)
        return _SeluAlphaDropout.apply(x, p, generator)

    def backward_autograd(grad_output: torch.Tensor, x: torch.Tensor, rng_state: torch.Tensor, p: float):
        _checks.check_selu_alpha_dropout_backward(grad_output, x, rng_state, p)
        if not _records_graph(grad_output, x):
            with _below_autograd():
                return _OPS.selu_alpha_dropout_backward(grad_output, x, rng_state, p)
        return _SeluAlphaDropoutBackward.apply(grad_output, x, rng_state, p)

    _LIB.impl("selu_alpha_dropout", selu_alpha_dropout, "CompositeImplicitAutograd")
    for key in ("CPU", "CUDA"):
        _LIB.impl("_selu_alpha_dropout", train_forward, key)
    _LIB.impl("_selu_alpha_dropout", train_autograd, "Autograd")
    _LIB.impl("selu_alpha_dropout_backward", backward_autograd, "Autograd")


def register() -> None:
    """Registers all of the above; activations_ext calls it once, after loading the stable-ABI build's library."""
    for activation in ACTIVATIONS.values():
        _register_activation(activation)
    _register_selu_alpha_dropout()
