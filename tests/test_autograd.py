"""Autograd: gradients from the C++ autograd kernels, in-place rules, double backward."""

import pytest
import torch
from conftest import BACKWARD, FORWARD, random_data
from torch.autograd import gradcheck, gradgradcheck

from activations_ext.catalog import ACTIVATIONS, GATED


def away_from_kink(shape, device, seed=0):
    """float64 data kept off relu's kink at 0, where finite differences are meaningless."""
    x = random_data(shape, torch.float64, device, seed)
    return torch.where(x.abs() < 1e-3, 0.5, x)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_gradcheck_and_gradgradcheck(device, op):
    functional, inplace, _ = FORWARD[op]
    x = away_from_kink((4, 7), device).requires_grad_()
    assert gradcheck(functional, (x,))
    assert gradgradcheck(functional, (x,))
    # In place on a non-leaf, and on a view of one.
    assert gradcheck(lambda t: inplace(t * 1), (x,))
    assert gradgradcheck(lambda t: inplace(t * 1), (x,))
    assert gradcheck(lambda t: inplace((t * 1)[:, 1::2]), (x,))


@pytest.mark.parametrize("form", list(BACKWARD))
def test_backward_ops_are_differentiable(device, form):
    backward = BACKWARD[form].op
    grad = away_from_kink((3, 5), device, seed=1).requires_grad_()
    saved = away_from_kink((3, 5), device, seed=2).requires_grad_()  # any value off the kink
    assert gradcheck(backward, (grad, saved))
    assert gradgradcheck(backward, (grad, saved))


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_grads_equal_torch(device, op, dtype):
    """Each form's gradient against torch's same form: out of place from the input (ReLU: the result), in place
    from the result, as torch's own forms take theirs."""
    a = ACTIVATIONS[op]
    forward, inplace = getattr(torch.ops.act, op), getattr(torch.ops.act, f"{op}_")
    x = random_data((33, 17), dtype, device).requires_grad_()
    # .sum().backward() hands the backward a stride-0 expanded gradient.
    (g_ours,) = torch.autograd.grad(forward(x).sum(), x)
    (g_theirs,) = torch.autograd.grad(a.torch_forward(x).sum(), x)
    torch.testing.assert_close(g_ours, g_theirs)
    # From the result, a result one ulp apart (the 16-bit GPU path rounds its own float math) moves the gradient
    # by about one ulp of alpha * scale.
    (g_ours,) = torch.autograd.grad(inplace(x * 1).sum(), x)
    (g_theirs,) = torch.autograd.grad(a.torch_inplace(x * 1).sum(), x)
    atol = 4 * torch.finfo(dtype).eps if dtype == torch.bfloat16 else None
    torch.testing.assert_close(g_ours, g_theirs, atol=atol, rtol=atol)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_inplace_on_leaf_requiring_grad_raises_and_leaves_it(device, op):
    _, inplace, _ = FORWARD[op]
    x = random_data((5,), torch.float32, device).requires_grad_()
    before = x.detach().clone()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        inplace(x)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        inplace(x[1:])
    assert torch.equal(x.detach(), before)
    with torch.no_grad():  # allowed without grad, as for torch's in-place ops
        inplace(x)
    assert not torch.equal(x.detach(), before)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_inplace_bumps_version_so_stale_saves_are_caught(device, op):
    _, inplace, _ = FORWARD[op]
    a = random_data((6,), torch.float32, device).requires_grad_()
    b = a * 1
    c = b * b  # saves b
    version = b._version
    inplace(b)
    assert b._version == version + 1  # once, as torch's in-place ops
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


@pytest.mark.parametrize("op", list(ACTIVATIONS))
def test_out_with_grad_raises(device, op):
    x = random_data((4,), torch.float32, device).requires_grad_()
    out = torch.empty(4, device=device)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        getattr(torch.ops.act, op)(x, out=out)
    with torch.no_grad():
        getattr(torch.ops.act, op)(x, out=out)
    assert out._version == 1
    torch.testing.assert_close(out, ACTIVATIONS[op].torch_forward(x.detach()))


def _writes() -> dict:
    """Every op that writes its argument, as ``write(w)`` for a ``[4, 6]`` tensor ``w``: the in-place and out= forms of
    each activation, the out= forms of each gated one."""
    act = torch.ops.act
    writes = {}
    for op in ACTIVATIONS:
        writes[f"{op}_"] = getattr(act, f"{op}_")
        writes[f"{op}.out"] = lambda w, op=op: getattr(act, op)(w.detach().clone(), out=w)
    for gated in GATED.values():
        ops = gated.ops
        writes[ops.names[1]] = lambda w, ops=ops: ops.merged_out(torch.cat([w, w], -1).detach(), out=w)
        writes[ops.names[4]] = lambda w, ops=ops: ops.pair_out(w.detach().clone(), w.detach().clone(), out=w)
    return writes


WRITES = _writes()


@pytest.mark.parametrize("form", list(WRITES))
def test_writes_under_inference_mode_bump_the_version_as_torchs(device, form):
    """torch.inference_mode skips autograd, not the version counter: a tensor that autograd saved, overwritten there,
    makes the backward raise, as after torch's own in-place ops (not a gradient from the new values)."""
    a = random_data((4, 6), torch.float32, device).requires_grad_()
    w = a.exp()  # saves its result
    with torch.inference_mode():
        WRITES[form](w)
    assert w._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


@pytest.mark.parametrize("form", list(WRITES))
def test_writes_to_inference_tensors_outside_inference_mode_raise_as_torchs(device, form):
    with torch.inference_mode():
        w = random_data((4, 6), torch.float32, device)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        WRITES[form](w)


@pytest.mark.parametrize("op, order", [("relu", 2), ("squared_relu", 3), ("relu_mul", 2), ("squared_relu_mul", 3)])
def test_piecewise_derivatives_are_torchs_zeros(device, op, order):
    """ReLU's second derivative and squared ReLU's third are zeros, as torch's threshold_backward gives them (not a
    graph that lost x, which autograd reports as an input it did not use)."""
    up = random_data((6,), torch.float64, device, seed=3)
    if op.endswith("_mul"):
        activation = next(g.activation for g in GATED.values() if g.pair_name == op)
        ours, theirs = (lambda t: getattr(torch.ops.act, op)(t, up)), (lambda t: activation.torch_forward(t) * up)
    else:
        ours, theirs = getattr(torch.ops.act, op), ACTIVATIONS[op].torch_forward
    x = away_from_kink((6,), device).requires_grad_()

    def derivative(f):
        value = f(x * 1).sum()
        for k in range(order):
            (value,) = torch.autograd.grad(value, x, create_graph=k < order - 1)
            value = value.sum() if k < order - 1 else value
        return value

    ours_value, theirs_value = derivative(ours), derivative(theirs)
    torch.testing.assert_close(ours_value, theirs_value)
    assert not ours_value.any()


def test_no_graph_without_grad(device):
    x = random_data((4,), torch.float32, device)
    assert torch.ops.act.selu(x).grad_fn is None
    x.requires_grad_()
    with torch.no_grad():
        assert torch.ops.act.selu(x).grad_fn is None
    assert torch.ops.act.selu(x).grad_fn is not None


def test_gradient_from_the_result_is_refused_where_it_needs_the_input(device):
    """silu has a minimum, so its result does not determine its input, nor its gradient: the backward op refuses
    is_result=True, eagerly and when traced, and its in-place form keeps a copy of the input for autograd."""
    x = random_data((5,), torch.float32, device)
    backward = torch.ops.act.silu_backward
    for fn in (backward, torch.compile(backward, fullgraph=True)):
        with pytest.raises(RuntimeError, match="silu's gradient is taken from its input"):
            fn(x, x, is_result=True)
    leaf = x.clone().requires_grad_()
    (grad,) = torch.autograd.grad(torch.ops.act.silu_(leaf * 1).sum(), leaf)
    torch.testing.assert_close(grad, backward(torch.ones_like(x), x), rtol=0, atol=0)
