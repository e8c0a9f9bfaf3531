"""Every torch transform gives torch's answer: forward-mode AD, double backward, vmap, torch.func, in every form.

In the style of PyTorch's OpInfo tests: each entry of FORMS is one of our callables beside torch's own, run through
gradcheck and gradgradcheck (forward AD, batched gradients, forward-over-reverse), torch.func's jvp, vjp, jacfwd,
jacrev, hessian and vmap, and torch.autograd.forward_ad, each compared with torch's result.
"""

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from conftest import DTYPES, SELU_ALPHA, SELU_SCALE, random_data
from torch.autograd import gradcheck, gradgradcheck
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

from activations_ext.catalog import ACTIVATIONS, GATED, Gated
from activations_ext.numerics import ulp_error, whole_range_inputs

act = torch.ops.act


@dataclass(frozen=True)
class Form:
    """A differentiable form of an op: ours and torch's, each taking ``arity`` tensors of one shape."""

    name: str
    ours: Callable[..., torch.Tensor]
    theirs: Callable[..., torch.Tensor]
    arity: int = 1


def torch_silu_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """torch's own differentiable form of silu's gradient (its infinitely_differentiable_silu_backward, through which
    torch's autograd takes silu's second derivative): aten::silu_backward itself has no forward-mode formula."""
    sigmoid = torch.sigmoid(x)
    return grad * sigmoid * (1 + x * (1 - sigmoid))


# torch's counterpart of a gradient form where its ATen kernel does not support every transform.
TORCH_DIFFERENTIABLE = {"silu_backward(x)": torch_silu_backward}
# Forms whose torch counterpart loses digits that ours keep, compared to the absolute error torch's makes: torch's
# tanh-GELU derivatives take 1 - tanh(u)^2 and 1 + tanh(u), which cancel for negative x (float64 gradient at
# x = -4.3: relative error 5e-12; second derivatives near their zeros off by up to 5e-14). Its erf-GELU takes
# 1 + erf(x / sqrt2), which cancels for negative x (absolute error about |x| eps / 2); the gated forms multiply that
# by up (float64 on CUDA: 1.4e-15 at gelu(-5.2) * up). torch's composition for quick GELU differentiates sigmoid
# as sigmoid (1 - sigmoid), which cancels for large x (float64 second derivative at x = 8: relative error 1e-11).
TORCH_ABSOLUTE_ERROR = {
    **{
        name: 1e-13
        for activation in ("gelu_tanh", "quick_gelu")
        for name in (
            activation,
            f"{activation}_",
            f"{activation}_backward(x)",
            *(n for n in GATED[f"{activation}_and_mul"].ops.names if ".out" not in n),
        )
    },
    **{name: 1e-14 for name in GATED["gelu_and_mul"].ops.names if ".out" not in name},
}


def _forms() -> list[Form]:
    forms = []
    for name, a in ACTIVATIONS.items():
        forward, inplace, backward = getattr(act, name), getattr(act, f"{name}_"), getattr(act, f"{name}_backward")
        forms += [
            Form(name, forward, a.torch_forward),
            # In place on a copy: the copy is part of the function, as for torch's own in-place forms.
            Form(f"{name}_", lambda x, f=inplace: f(x * 1), lambda x, f=a.torch_forward: f(x * 1)),
        ]
        forms += [
            Form(
                a.gradient_name(g),
                lambda u, s, b=backward, r=g.is_result: b(u, s, is_result=r),
                TORCH_DIFFERENTIABLE.get(a.gradient_name(g), g.torch_op),
                2,
            )
            for g in a.gradients
        ]
    return forms


def _gated_forms(gated: Gated) -> list[Form]:
    """A gated activation's forms beside torch's composition, act(gate) * up: the merged ones on the concatenation of
    gate and up (so all take tensors of one shape), and both gradients as one tensor, [d gate, d up]."""
    ops, a = gated.ops, gated.activation
    gradient = a.gradient(is_result=False)
    torch_gradient = TORCH_DIFFERENTIABLE.get(a.gradient_name(gradient), gradient.torch_op)

    def theirs(gate, up, f=a.torch_forward):
        return f(gate) * up

    def theirs_backward(grad, gate, up, f=a.torch_forward):
        return torch.cat([torch_gradient(grad * up, gate), grad * f(gate)], -1)

    merged, _, merged_backward, pair, _, pair_backward = ops.names
    return [
        Form(merged, lambda g, u: ops.merged(torch.cat([g, u], -1)), theirs, 2),
        Form(pair, ops.pair, theirs, 2),
        Form(merged_backward, lambda d, g, u: ops.merged_backward(d, torch.cat([g, u], -1)), theirs_backward, 3),
        Form(pair_backward, lambda d, g, u: torch.cat(ops.pair_backward(d, g, u), -1), theirs_backward, 3),
    ]


FORMS = {f.name: f for f in [*_forms(), *(form for g in GATED.values() for form in _gated_forms(g))]}


def operands(form: Form, device: str, dtype: torch.dtype = torch.float64, shape=(3, 5)) -> list[torch.Tensor]:
    """Inputs off ReLU's kink and SELU's second derivative's jump at 0, where finite differences are meaningless."""
    out = []
    for i in range(form.arity):
        t = random_data(shape, dtype, device, seed=i)
        out.append(torch.where(t.abs() < 0.05, 0.5, t))
    return out


@pytest.mark.parametrize("name", FORMS)
def test_gradcheck_forward_and_batched(device, name):
    form = FORMS[name]
    args = [t.requires_grad_() for t in operands(form, device)]
    assert gradcheck(
        form.ours,
        args,
        check_forward_ad=True,
        check_backward_ad=True,
        check_batched_grad=True,
        check_batched_forward_grad=True,
        check_undefined_grad=True,
    )
    assert gradgradcheck(form.ours, args, check_fwd_over_rev=True, check_rev_over_rev=True, check_batched_grad=True)


def assert_same(ours, theirs, dtype=torch.float64, atol=None):
    if isinstance(ours, tuple):
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b, dtype, atol)
        return
    rtol = {torch.float64: 1e-13, torch.float32: 2e-6}.get(dtype, 8e-3)
    torch.testing.assert_close(ours, theirs, rtol=rtol, atol=rtol * 1e-2 if atol is None else atol, equal_nan=True)


@pytest.mark.parametrize("name", FORMS)
def test_func_transforms_match_torch(device, name):
    form = FORMS[name]
    same = functools.partial(assert_same, atol=TORCH_ABSOLUTE_ERROR.get(name))
    args = operands(form, device)
    tangents = operands(form, device, shape=(3, 5))[::-1]
    argnums = tuple(range(form.arity))
    same(jvp(form.ours, tuple(args), tuple(tangents)), jvp(form.theirs, tuple(args), tuple(tangents)))
    out, pullback = vjp(form.ours, *args)
    out_t, pullback_t = vjp(form.theirs, *args)
    same(out, out_t)
    cotangent = random_data(tuple(out.shape), torch.float64, device, seed=7)  # a gated backward's is [..., 2d]
    same(pullback(cotangent), pullback_t(cotangent))
    same(jacfwd(form.ours, argnums)(*args), jacfwd(form.theirs, argnums)(*args))
    same(jacrev(form.ours, argnums)(*args), jacrev(form.theirs, argnums)(*args))

    def summed(f):
        return lambda *a: f(*a).sum()

    same(hessian(summed(form.ours), argnums)(*args), hessian(summed(form.theirs), argnums)(*args))
    # forward-over-reverse
    primals, directions = tuple(args), tuple(tangents)
    same(jvp(grad(summed(form.ours)), primals, directions), jvp(grad(summed(form.theirs)), primals, directions))


@pytest.mark.parametrize("name", FORMS)
def test_forward_ad_dual_tensors(device, name):
    form = FORMS[name]
    same = functools.partial(assert_same, atol=TORCH_ABSOLUTE_ERROR.get(name))
    args, tangents = operands(form, device), operands(form, device)[::-1]
    with fwAD.dual_level():
        ours = fwAD.unpack_dual(form.ours(*(fwAD.make_dual(a, t) for a, t in zip(args, tangents, strict=True))))
        theirs = fwAD.unpack_dual(form.theirs(*(fwAD.make_dual(a, t) for a, t in zip(args, tangents, strict=True))))
        assert ours.tangent is not None, f"{name}: no tangent"
        same((ours.primal, ours.tangent), (theirs.primal, theirs.tangent))


def test_inplace_updates_the_tangent_in_place(device):
    x, t = operands(FORMS["selu"], device)[0], operands(FORMS["selu"], device)[0] * 0.5 + 1
    with fwAD.dual_level():
        for name, a in ACTIVATIONS.items():
            dual = fwAD.make_dual(x.clone(), t.clone())
            tangent = fwAD.unpack_dual(dual).tangent
            getattr(act, f"{name}_")(dual)
            expected = fwAD.unpack_dual(a.torch_forward(fwAD.make_dual(x, t))).tangent
            assert fwAD.unpack_dual(dual).tangent is tangent or torch.equal(fwAD.unpack_dual(dual).tangent, tangent)
            assert_same(fwAD.unpack_dual(dual).tangent, expected)


@pytest.mark.parametrize("op", ACTIVATIONS)
def test_out_form_refuses_forward_ad(device, op):
    x = random_data((4,), torch.float64, device)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        with pytest.raises(NotImplementedError, match=rf"act::{op}\.out: forward-mode AD does not support out="):
            getattr(act, op)(dual, out=torch.empty_like(x))
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            getattr(act, op)(x, out=fwAD.make_dual(torch.empty_like(x), torch.ones_like(x)))


@pytest.mark.parametrize("name", GATED)
def test_gated_out_forms_refuse_forward_ad(device, name):
    ops = GATED[name].ops
    x = random_data((3, 8), torch.float64, device)
    gate, up = x[:, :4], x[:, 4:]
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        with pytest.raises(NotImplementedError, match=rf"act::{name}\.out: forward-mode AD does not support out="):
            ops.merged_out(dual, out=torch.empty_like(gate))
        dual_gate = fwAD.make_dual(gate.contiguous(), torch.ones_like(gate))
        with pytest.raises(NotImplementedError, match=rf"act::{ops.names[3]}\.out: forward-mode AD"):
            ops.pair_out(dual_gate, up, out=torch.empty_like(gate))


# --- vmap ---------------------------------------------------------------------------------------------------
def _vmap_dims(arity: int) -> list:
    """Batch dimensions of every operand first or second, and some operands unbatched."""
    if arity == 1:
        return [0, 1]
    rest = arity - 1
    return [(0,) * arity, (1,) + (0,) * rest, (0,) + (None,) * rest, (None,) * rest + (1,)]


VMAP_CASES = [(name, dims) for name, form in FORMS.items() for dims in _vmap_dims(form.arity)]


@pytest.mark.parametrize(("name", "in_dims"), VMAP_CASES)
def test_vmap_matches_torch_without_fallback(device, name, in_dims):
    form = FORMS[name]
    args = operands(form, device, shape=(4, 4, 5))
    if isinstance(in_dims, tuple):  # an unbatched operand has no batch dimension
        args = [a if d is not None else a[0] for a, d in zip(args, in_dims, strict=True)]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*performance drop.*")  # functorch's per-sample fallback
        ours = vmap(form.ours, in_dims=in_dims)(*args)
        hess = vmap(hessian(lambda *a: form.ours(*a).sum()), in_dims=in_dims)(*args)
    atol = TORCH_ABSOLUTE_ERROR.get(name)
    assert_same(ours, vmap(form.theirs, in_dims=in_dims)(*args), atol=atol)
    assert_same(hess, vmap(hessian(lambda *a: form.theirs(*a).sum()), in_dims=in_dims)(*args), atol=atol)


@pytest.mark.parametrize("op", ACTIVATIONS)
def test_vmap_inplace_and_out(device, op):
    x = random_data((4, 6), torch.float32, device)
    expected = getattr(act, op)(x)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*performance drop.*")
        y = x.t().clone()
        vmap(getattr(act, f"{op}_"), in_dims=1)(y)
        assert torch.equal(y.t(), expected)
        out = torch.full((6, 4), float("nan"), device=device)
        vmap(lambda a, o: getattr(act, op)(a, out=o), in_dims=(0, 1))(x, out)
        assert torch.equal(out.t(), expected)
        out = torch.full((4, 6), float("nan"), device=device)
        vmap(lambda o: getattr(act, op)(x[0], out=o))(out)  # an unbatched input broadcast into each out
        assert torch.equal(out, getattr(act, op)(x[0]).expand(4, 6))
    with pytest.raises(RuntimeError, match=rf"act\.{op}\.out: vmap cannot write a result that varies"):
        vmap(lambda a: getattr(act, op)(a, out=torch.empty(6, device=device)))(x)


@pytest.mark.parametrize("name", GATED)
def test_vmap_gated_forms_on_any_batch_dimension_and_out(device, name):
    """The merged form batched along x's last physical dimension (its halves along another), and the out= forms
    under vmap: each equal to the per-sample calls, with no per-sample fallback."""
    ops = GATED[name].ops
    x = random_data((3, 8, 5), torch.float32, device)  # samples along the last dimension
    expected = torch.stack([ops.merged(x[..., i]) for i in range(5)])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*performance drop.*")
        assert torch.equal(vmap(ops.merged, in_dims=2)(x), expected)
        out = torch.full((5, 3, 4), float("nan"), device=device)
        vmap(lambda t, o: ops.merged_out(t, out=o), in_dims=(2, 0))(x, out)
        assert torch.equal(out, expected)
        gate, up = x[:, :4], x[:, 4:]
        out = torch.full((3, 4, 5), float("nan"), device=device)
        vmap(lambda g, u, o: ops.pair_out(g, u, out=o), in_dims=2)(gate, up, out)
        assert torch.equal(out.permute(2, 0, 1), expected)
        grads = vmap(ops.merged_backward, in_dims=(None, 2))(torch.ones(3, 4, device=device), x)
        assert torch.equal(
            grads, torch.stack([ops.merged_backward(torch.ones(3, 4, device=device), x[..., i]) for i in range(5)])
        )
    with pytest.raises(RuntimeError, match=rf"act\.{name}\.out: vmap cannot write a result that varies"):
        vmap(lambda t: ops.merged_out(t, out=torch.empty(3, 4, device=device)), in_dims=2)(x)


# --- selu_alpha_dropout under the transforms ----------------------------------------------------------------
def generator(device: str, seed: int = 0) -> torch.Generator:
    return torch.Generator(device).manual_seed(seed)


def dropout(x: torch.Tensor, device: str, p: float = 0.3) -> torch.Tensor:
    """selu_alpha_dropout in train mode with a fixed mask for a fixed layout: every call draws the same words."""
    return act.selu_alpha_dropout(x, p, True, generator=generator(device))


def dropout_reference(x: torch.Tensor, device: str, p: float = 0.3) -> torch.Tensor:
    """The same mask, read back from the forward's result, applied by torch's ops: alpha_dropout(selu(x))."""
    from activations_ext.catalog import alpha_dropout_constants, alpha_dropout_kept

    kept = alpha_dropout_kept(dropout(x.detach(), device, p), p)
    a, b_keep, b_drop = alpha_dropout_constants(p)
    return torch.where(kept, a * torch.selu(x) + b_keep, torch.full_like(x, b_drop))


def test_dropout_transforms_match_the_composition(device):
    x = operands(FORMS["selu"], device)[0]
    t = operands(FORMS["selu"], device)[0].flip(0)
    ours, theirs = (lambda v: dropout(v, device)), (lambda v: dropout_reference(v, device))
    assert_same(jvp(ours, (x,), (t,)), jvp(theirs, (x,), (t,)))
    # jacfwd runs vmap over the basis: one mask for every basis vector is randomness="same"
    assert_same(jacfwd(ours, randomness="same")(x), jacfwd(theirs, randomness="same")(x))
    assert_same(jacrev(ours)(x), jacrev(theirs)(x))
    summed, summed_t = (lambda v: ours(v).sum()), (lambda v: theirs(v).sum())
    assert_same(jacfwd(jacrev(summed), randomness="same")(x), jacfwd(jacrev(summed_t), randomness="same")(x))
    with fwAD.dual_level():
        out = fwAD.unpack_dual(ours(fwAD.make_dual(x, t)))
        assert_same(out.tangent, fwAD.unpack_dual(theirs(fwAD.make_dual(x, t))).tangent)
    xg = x.clone().requires_grad_()
    assert gradcheck(ours, (xg,), check_forward_ad=True, check_batched_grad=True, check_batched_forward_grad=True)
    assert gradgradcheck(ours, (xg,), check_fwd_over_rev=True)


def test_dropout_vmap_randomness_modes(device):
    x = random_data((8, 64), torch.float32, device)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        vmap(lambda v: act.selu_alpha_dropout(v, 0.5, True))(x)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        vmap(lambda v: torch.nn.functional.dropout(v, 0.5, True))(x)  # torch's words, for its own
    from activations_ext.catalog import alpha_dropout_kept

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*performance drop.*")
        for in_dims in (0, 1):
            batch = x if in_dims == 0 else x.t().contiguous()
            for randomness in ("same", "different"):
                y = vmap(lambda v: act.selu_alpha_dropout(v, 0.5, True), in_dims=in_dims, randomness=randomness)(batch)
                kept = alpha_dropout_kept(y, 0.5)
                same = (kept == kept[0]).all().item()
                assert same == (randomness == "same"), (in_dims, randomness)
                # each sample is SELU then alpha dropout of that sample, with its mask
                from activations_ext.catalog import selu_alpha_dropout_reference

                expected = selu_alpha_dropout_reference(x.cpu(), kept.cpu(), 0.5)
                torch.testing.assert_close(y.double().cpu(), expected, rtol=2e-6, atol=1e-6)


def test_dropout_vmap_grad_replays_the_forwards_mask(device):
    """Under vmap(vjp), the backward's batching rule replays exactly the masks the forward drew."""
    x = random_data((8, 64), torch.float32, device)
    for randomness in ("same", "different"):

        def value_and_grad(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out, pullback = vjp(lambda u: act.selu_alpha_dropout(u, 0.5, True), v)
            return out, pullback(torch.ones_like(out))[0]

        y, g = vmap(value_and_grad, randomness=randomness)(x)
        from activations_ext.catalog import alpha_dropout_constants, alpha_dropout_kept

        kept = alpha_dropout_kept(y, 0.5)
        a = alpha_dropout_constants(0.5)[0]
        slope = torch.where(x > 0, SELU_SCALE, SELU_SCALE * SELU_ALPHA * torch.exp(x.double())).float()
        torch.testing.assert_close(g, torch.where(kept, a * slope, 0.0), rtol=2e-6, atol=1e-7)


# --- special values, exact to torch ------------------------------------------------------------------------
SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, -2.5, 30.0, -30.0, -90.0, -110.0]


def special_values(dtype: torch.dtype, device: str) -> torch.Tensor:
    finfo = torch.finfo(dtype)
    extra = [finfo.max, -finfo.max, finfo.tiny, -finfo.tiny, finfo.smallest_normal / 4, -finfo.smallest_normal / 4]
    return torch.tensor(SPECIAL + extra, dtype=dtype, device=device)


def first_and_second(f: Callable, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    leaf = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(f(leaf), leaf, torch.ones_like(x), create_graph=True)
    (gg,) = torch.autograd.grad(g, leaf, torch.ones_like(x), allow_unused=True, materialize_grads=True)
    return g.detach(), gg


def elementwise(f: Callable, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``f`` on each element alone, so that torch's CPU kernels answer from their scalar code (see below)."""
    return tuple(torch.cat(parts) for parts in zip(*(f(x[i : i + 1]) for i in range(x.numel())), strict=True))


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values_first_and_second_derivatives_equal_torch(device, dtype):
    """Bit-equal values to torch's at NaN, +-inf, +-0, subnormals and the largest finite values. Short tensors:
    torch's own CPU elu_backward answers NaN for a NaN input in its vector loop and scale in its scalar tail
    (torch's CUDA kernel: scale, everywhere); ours answers scale everywhere. At the ordinary values among them,
    within a few ulps of the terms: torch's scalar code calls libm's expm1, its vector loop (and ours) Sleef's,
    and the gradient from the result (the in-place form's) cancels their last-bit difference up."""
    x = special_values(dtype, device)
    finfo = torch.finfo(dtype)
    special = x.isnan() | x.isinf() | (x.abs() < finfo.smallest_normal) | (x.abs() == finfo.max)

    def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
        close = (a - b).abs() <= 8 * finfo.eps * (1 + b.abs())
        return bool(torch.where(special, (a == b) | (a.isnan() & b.isnan()), close).all())

    for name, a in ACTIVATIONS.items():
        if name in TORCH_ABSOLUTE_ERROR:
            continue  # torch's digits cancel there: test_gelu_tanh_special_values_against_float64
        ours = getattr(act, name)
        inplace, torch_inplace = FORMS[f"{name}_"].ours, a.torch_inplace
        cases = {name: (ours, a.torch_forward), f"{name}_": (inplace, lambda v, f=torch_inplace: f(v * 1))}
        for case, (f_ours, f_theirs) in cases.items():
            g, gg = first_and_second(f_ours, x)
            g_t, gg_t = elementwise(lambda v, f=f_theirs: first_and_second(f, v), x)
            assert same_values(g, g_t), f"{case} {dtype}: first derivative {g.tolist()} vs torch {g_t.tolist()}"
            assert same_values(gg, gg_t), f"{case} {dtype}: second derivative {gg.tolist()} vs torch {gg_t.tolist()}"
            _, tangent = jvp(f_ours, (x,), (torch.ones_like(x),))
            (tangent_t,) = elementwise(lambda v, f=f_theirs: jvp(f, (v,), (torch.ones_like(v),))[1:], x)
            assert same_values(tangent, tangent_t), f"{case} {dtype}: jvp {tangent.tolist()} vs {tangent_t.tolist()}"


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_tanh_special_values_against_float64(device, dtype):
    """torch's tanh-GELU derivative cancels for negative x (float32 at x = -2.5: off by 2e-6 relative), gives +0 for
    the -0 of large negative x, and NaN at +-max (x^3 overflows in its float arithmetic). Ours: NaN where torch's is
    NaN at NaN and +-inf, elsewhere within an ulp of the float64 derivative, the sign of zero included."""
    x = special_values(dtype, device)
    g, _ = first_and_second(act.gelu_tanh, x)
    g = g.cpu()
    g_t, gg_t = elementwise(lambda v: first_and_second(ACTIVATIONS["gelu_tanh"].torch_forward, v), x)
    (form,) = ACTIVATIONS["gelu_tanh"].gradients
    x = x.cpu()
    ones = torch.ones_like(x, dtype=torch.float64)
    expected, scale = form.reference(ones, x), form.scale(ones, x)
    # NaN at NaN and +-inf as torch's, and where float64 math itself overflows (float64's +-max, as torch's too).
    nan = ~x.isfinite() | expected.isnan()
    assert torch.equal(g.isnan(), nan) and g_t.cpu()[nan].isnan().all()
    assert ulp_error(g[~nan], expected[~nan], dtype, scale[~nan]).max() <= form.bound(dtype)
    zero = g == 0
    assert torch.equal(g[zero].signbit(), expected[zero].signbit())
    if dtype != torch.float64:  # where torch's float arithmetic overflows: the limits, 1 and 0
        assert g[x == torch.finfo(dtype).max].item() == 1.0 and g[x == -torch.finfo(dtype).max].item() == 0.0
    # The in-place form and forward mode give the same values, bit for bit (NaN's payload aside: the in-place form's
    # `x * 1` makes every NaN CUDA's canonical one); the second derivative (ATen ops in the dtype, as torch's, which
    # overflow for large |x| in the 16-bit types) is finite wherever torch's is.
    x = x.to(device)
    g_inplace, gg = first_and_second(FORMS["gelu_tanh_"].ours, x)
    _, tangent = jvp(act.gelu_tanh, (x,), (torch.ones_like(x),))
    as_bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[g.element_size()]
    for other in (g_inplace.cpu(), tangent.cpu()):
        assert torch.equal(other.isnan(), g.isnan())
        assert torch.equal(other[~nan].view(as_bits), g[~nan].view(as_bits))
    assert gg.cpu()[gg_t.cpu().isfinite()].isfinite().all()


# --- gradients: as accurate as torch's --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_out_of_place_gradient_as_accurate_as_torchs(device, dtype):
    """From the result, grad * (y + alpha * scale) cancels below x = -2 (off by up to half its value in bfloat16);
    the out-of-place form's gradient comes from the input: over SELU's whole range, subnormals included, its
    largest error is within the catalog's bound and no larger than torch.selu's gradient's."""
    x = whole_range_inputs().to(dtype).unique().to(device)
    g, _ = first_and_second(act.selu, x)
    g_torch, _ = first_and_second(torch.selu, x)
    from_input = ACTIVATIONS["selu"].gradient(is_result=False)
    expected = from_input.reference(torch.ones_like(x, dtype=torch.float64), x).cpu()
    error = ulp_error(g.cpu(), expected, dtype).max().item()
    error_torch = ulp_error(g_torch.cpu(), expected, dtype).max().item()
    assert error <= from_input.bound(dtype), error
    assert error <= error_torch + 1e-3, (error, error_torch)
    # The result-based form (the in-place one, as torch's selu_) is not: this is what the input buys.
    if dtype == torch.bfloat16:
        from_result = act.selu_backward(torch.ones_like(x), act.selu(x))
        assert ulp_error(from_result.cpu(), expected, dtype).max().item() > 100


# --- output layouts, as ATen's ------------------------------------------------------------------------------
def layouts(device: str) -> dict[str, torch.Tensor]:
    base = random_data((2, 3, 4, 5), torch.float32, device)
    return {
        "contiguous": base,
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "permuted": random_data((5, 4, 3, 2), torch.float32, device).permute(3, 2, 1, 0),
        "strided": random_data((2, 3, 4, 10), torch.float32, device)[..., ::2],
        "expanded": random_data((1, 3, 1, 5), torch.float32, device).expand(2, 3, 4, 5),
        "zero_stride": random_data((1,), torch.float32, device).expand(2, 3, 4, 5),
        "transposed_slice": random_data((5, 4, 3, 4), torch.float32, device).permute(3, 2, 1, 0)[:2],
    }


@pytest.mark.parametrize("first", list(layouts("cpu")))
def test_output_strides_follow_aten(device, first):
    shapes = layouts(device)
    x = shapes[first]
    for name, a in ACTIVATIONS.items():
        assert getattr(act, name)(x).stride() == a.torch_forward(x).stride(), (name, first)
        for second, s in shapes.items():
            backward = getattr(act, f"{name}_backward")
            for g in a.gradients:
                assert backward(x, s, is_result=g.is_result).stride() == g.torch_op(x, s).stride(), (
                    name,
                    first,
                    second,
                )
