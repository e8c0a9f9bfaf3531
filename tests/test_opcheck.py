"""torch.library.opcheck for every op and overload: schema, autograd registration, fake tensor, AOT dispatch."""

import pytest
import torch
from conftest import DTYPES, random_data

from activations_ext.catalog import ACTIVATIONS, GATED


def cases(device, dtype):
    x = random_data((5, 33), dtype, device)
    for op in ACTIVATIONS:
        packet = getattr(torch.ops.act, op)
        yield packet.default, (x.clone().requires_grad_(),), {}
        yield packet.default, (x.t(),), {}
        yield getattr(torch.ops.act, op + "_").default, (x.clone(),), {}
        yield packet.out, (x,), {"out": torch.empty_like(x)}
        result = packet.default(x)
        grad = random_data((5, 33), dtype, device, seed=3)
        yield getattr(torch.ops.act, op + "_backward").default, (grad.requires_grad_(), result.requires_grad_()), {}
    # The gated forms, on a merged input (its halves strided views, d = 33 off every vector width) and two tensors.
    merged = random_data((5, 66), dtype, device, seed=1)
    gate, up = merged[:, :33], random_data((5, 33), dtype, device, seed=2)
    for gated in GATED.values():
        ops = gated.ops
        grad = random_data((5, 33), dtype, device, seed=3)
        yield ops.merged, (merged.clone().requires_grad_(),), {}
        yield ops.merged, (merged.t().contiguous().t(),), {}
        yield ops.merged_out, (merged,), {"out": torch.empty_like(gate)}
        yield ops.merged_backward, (grad.clone().requires_grad_(), merged.clone().requires_grad_()), {}
        yield ops.pair, (gate.clone().requires_grad_(), up.clone().requires_grad_()), {}
        yield ops.pair_out, (gate, up), {"out": torch.empty_like(up)}
        pair_inputs = (grad.clone().requires_grad_(), gate.clone().requires_grad_(), up.clone().requires_grad_())
        yield ops.pair_backward, pair_inputs, {}
    act = torch.ops.act
    # torch's gelu signatures, each the gelu or gelu_tanh ops above.
    for approximate in ("none", "tanh"):
        kwargs = {"approximate": approximate}
        yield act.gelu.approximate, (x.clone().requires_grad_(),), kwargs
        yield act.gelu_.approximate, (x.clone(),), kwargs
        yield act.gelu.approximate_out, (x,), {**kwargs, "out": torch.empty_like(x)}
        grad = random_data((5, 33), dtype, device, seed=3).requires_grad_()
        yield act.gelu_backward.approximate, (grad, x.clone().requires_grad_()), kwargs
    for train in (True, False):
        yield act.selu_alpha_dropout.default, (x.clone().requires_grad_(), 0.2, train), {}
    yield act._selu_alpha_dropout.default, (x.clone().requires_grad_(), 0.2), {}
    yield act._selu_alpha_dropout.default, (x.t(), 0.5), {}
    _, rng_state = act._selu_alpha_dropout(x, 0.2)
    grad = random_data((5, 33), dtype, device, seed=3)
    yield (
        act.selu_alpha_dropout_backward.default,
        (grad.requires_grad_(), x.clone().requires_grad_(), rng_state, 0.2),
        {},
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(device, dtype):
    checked = set()
    for op, args, kwargs in cases(device, dtype):
        torch.library.opcheck(op, args, kwargs)
        checked.add(op.name())
    # Every overload the extension registers, so an op added later cannot go unchecked.
    registered = {name for name in torch._C._dispatch_get_all_op_names() if name.startswith("act::")}
    assert checked == registered


@pytest.mark.parametrize("dtype", DTYPES)
def test_fake_kernels_give_the_real_outputs_metadata(device, dtype):
    """What torch.compile plans with: each fake kernel's output has the dtype, shape, strides and device of
    the real kernel's, for a transposed input (strides that empty_like keeps)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = random_data((6, 10), dtype, device).t()
    grad = random_data((10, 6), dtype, device, seed=1)
    for op in ACTIVATIONS:
        forward, inplace, backward = (getattr(torch.ops.act, op + suffix) for suffix in ("", "_", "_backward"))
        calls = {
            "forward": lambda t, g, forward=forward: forward(t),
            "inplace": lambda t, g, inplace=inplace: inplace(t.clone()),
            "out": lambda t, g, forward=forward: forward(t, out=torch.empty_like(t)),
            "backward": lambda t, g, backward=backward: backward(g, t),
        }
        for name, call in calls.items():
            real = call(x, grad)
            with FakeTensorMode() as mode:
                fake = call(mode.from_tensor(x), mode.from_tensor(grad))
            assert (fake.dtype, fake.shape, fake.stride(), fake.device) == (
                real.dtype,
                real.shape,
                real.stride(),
                real.device,
            ), f"{op} {name}"
            assert fake.dtype == dtype


def _as_tuple(t: torch.Tensor | tuple) -> tuple:
    return t if isinstance(t, tuple) else (t,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_fake_kernels_give_the_real_outputs_metadata(device, dtype):
    """As above for the gated forms, on a merged input laid out column-major (its halves too) and a transposed
    pair of inputs."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = random_data((12, 6), dtype, device).t()
    gate, up = x[:, :6], x[:, 6:]
    grad = random_data((6, 6), dtype, device, seed=1).t()
    for gated in GATED.values():
        ops = gated.ops
        calls = {
            "merged": lambda x, gate, up, grad, ops=ops: ops.merged(x),
            "merged.out": lambda x, gate, up, grad, ops=ops: ops.merged_out(x, out=torch.empty_like(gate)),
            "merged_backward": lambda x, gate, up, grad, ops=ops: ops.merged_backward(grad, x),
            "pair": lambda x, gate, up, grad, ops=ops: ops.pair(gate, up),
            "pair.out": lambda x, gate, up, grad, ops=ops: ops.pair_out(gate, up, out=torch.empty_like(gate)),
            "pair_backward": lambda x, gate, up, grad, ops=ops: ops.pair_backward(grad, gate, up),
        }
        for name, call in calls.items():
            real = call(x, gate, up, grad)
            with FakeTensorMode() as mode:
                fake = call(*(mode.from_tensor(t) for t in (x, gate, up, grad)))
            for r, f in zip(_as_tuple(real), _as_tuple(fake), strict=True):
                assert (f.dtype, f.shape, f.stride(), f.device) == (r.dtype, r.shape, r.stride(), r.device), (
                    f"{gated.name} {name}"
                )
