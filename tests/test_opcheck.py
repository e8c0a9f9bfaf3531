"""torch.library.opcheck for every op and overload: schema, autograd registration, fake tensor, AOT dispatch."""

import pytest
import torch
from conftest import DTYPES, random_data


def cases(device, dtype):
    x = random_data((5, 33), dtype, device)
    for op in ("selu", "relu"):
        packet = getattr(torch.ops.act, op)
        yield packet.default, (x.clone().requires_grad_(),), {}
        yield packet.default, (x.t(),), {}
        yield getattr(torch.ops.act, op + "_").default, (x.clone(),), {}
        yield packet.out, (x,), {"out": torch.empty_like(x)}
        result = packet.default(x)
        grad = random_data((5, 33), dtype, device, seed=3)
        yield getattr(torch.ops.act, op + "_backward").default, (grad.requires_grad_(), result.requires_grad_()), {}


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(device, dtype):
    checked = 0
    for op, args, kwargs in cases(device, dtype):
        torch.library.opcheck(op, args, kwargs)
        checked += 1
    assert checked == 10
