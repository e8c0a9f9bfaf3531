"""The gated activations (act(gate) * up, catalog.GATED): results and gradients against float64 on every layout,
the out= forms, special values against torch's composition, bad input, the functional forms and GatedMLP.

Their transforms (gradcheck, torch.func, vmap) are test_transforms' FORMS; opcheck and fake kernels test_opcheck's.
"""

import pytest
import torch
from conftest import DTYPES, inside_guarded_storage, random_data

import activations_ext
from activations_ext.catalog import GATED, Gated
from activations_ext.numerics import ulp_error, whole_range_inputs

SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, -8.0]


def merged_input(layout: str, dtype: torch.dtype, device: str) -> torch.Tensor:
    """A [..., 2d] input whose halves are strided views: d = 129 (no vector width divides it) or 136."""
    if layout == "contiguous":
        return random_data((37, 2 * 129), dtype, device)
    if layout == "aligned":  # each half's rows start on 16-byte boundaries
        return random_data((37, 2 * 136), dtype, device)
    if layout == "transposed":
        return random_data((2 * 129, 37), dtype, device).t()
    if layout == "strided":
        return random_data((37, 4 * 129), dtype, device)[:, ::2]
    if layout == "batched":  # three dimensions, a slice of a larger last dimension
        return random_data((3, 7, 2 * 130 + 3), dtype, device)[..., 3:]
    if layout == "one_row":
        return random_data((2 * 1025,), dtype, device)
    if layout == "empty":
        return random_data((0, 8), dtype, device)
    raise ValueError(layout)


LAYOUTS = ["contiguous", "aligned", "transposed", "strided", "batched", "one_row", "empty"]


def halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:]


def assert_within(actual: torch.Tensor, expected: torch.Tensor, bound: float, scale: torch.Tensor | None = None):
    """``actual`` within ``bound`` ulps of the float64 ``expected`` (NaN where it is NaN, +-inf where it rounds to
    that in ``actual``'s dtype: squared ReGLU's products overflow float16)."""
    actual, expected = actual.cpu(), expected.cpu()
    assert torch.equal(actual.isnan(), expected.isnan())
    rounded = expected.to(actual.dtype)
    infinite = rounded.isinf()
    assert torch.equal(actual[infinite], rounded[infinite])
    finite = rounded.isfinite()
    if finite.any():
        scale = None if scale is None else scale.cpu()[finite]
        error = ulp_error(actual[finite], expected[finite], actual.dtype, scale).max().item()
        assert error <= bound, f"{error:.3f} ulp > {bound}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", GATED)
def test_forward_matches_reference(device, name, dtype, layout):
    gated = GATED[name]
    x = merged_input(layout, dtype, device)
    gate, up = halves(x)
    expected = gated.reference(gate.cpu(), up.cpu())
    scale = gated.scale(gate.cpu(), up.cpu())
    merged = gated.ops.merged(x)
    assert merged.shape == gate.shape and merged.dtype == dtype
    assert_within(merged, expected, gated.bound(dtype), scale)
    # The two-tensor form on the same halves, and on contiguous copies: the same bits.
    assert torch.equal(gated.ops.pair(gate, up), merged)
    assert torch.equal(gated.ops.pair(gate.contiguous(), up.contiguous()), merged)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", GATED)
def test_gradients_match_reference(device, name, dtype, layout):
    gated = GATED[name]
    x = merged_input(layout, dtype, device)
    gate, up = halves(x)
    grad = random_data(tuple(gate.shape), dtype, device, seed=5)
    grad_x = gated.ops.merged_backward(grad, x)
    assert grad_x.shape == x.shape
    grad_gate, grad_up = gated.ops.pair_backward(grad, gate, up)
    assert torch.equal(grad_x, torch.cat([grad_gate, grad_up], -1))
    expected_gate, expected_up = gated.gradient_references(grad.cpu(), gate.cpu(), up.cpu())
    scale_gate, scale_up = gated.gradient_scales(grad.cpu(), gate.cpu(), up.cpu())
    assert_within(grad_gate, expected_gate, gated.gradient_bound(dtype), scale_gate)
    assert_within(grad_up, expected_up, gated.gradient_bound(dtype), scale_up)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", GATED)
def test_whole_range_within_bounds(device, name, dtype):
    """Over SELU's whole range for the gate (saturation, tiny values, subnormals) and ups of both signs and many
    binades: each result and gradient within its bound."""
    gated = GATED[name]
    gate = whole_range_inputs().to(dtype).unique()
    g = torch.Generator().manual_seed(0)
    up = (torch.randn(gate.shape, generator=g) * torch.exp2(torch.randint(-8, 8, gate.shape, generator=g))).to(dtype)
    grad = torch.rand(gate.shape, generator=g).add(0.5).to(dtype)
    result = gated.ops.pair(gate.to(device), up.to(device))
    assert_within(result, gated.reference(gate, up), gated.bound(dtype), gated.scale(gate, up))
    grad_gate, grad_up = gated.ops.pair_backward(grad.to(device), gate.to(device), up.to(device))
    (expected_gate, expected_up), (scale_gate, scale_up) = (
        gated.gradient_references(grad, gate, up),
        gated.gradient_scales(grad, gate, up),
    )
    assert_within(grad_gate, expected_gate, gated.gradient_bound(dtype), scale_gate)
    assert_within(grad_up, expected_up, gated.gradient_bound(dtype), scale_up)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_results_round_once_where_torchs_composition_rounds_twice(device, dtype):
    """torch rounds act(gate) to the dtype, then the product: over many inputs some of its results are off by more
    than half an ulp; ours are rounded once from float32 math (within half an ulp and float32's error)."""
    gated = GATED["silu_and_mul"]
    gate, up = random_data((1 << 16,), dtype, device), random_data((1 << 16,), dtype, device, seed=1)
    expected = gated.reference(gate.cpu(), up.cpu())
    ours = ulp_error(gated.ops.pair(gate, up).cpu(), expected, dtype).max().item()
    theirs = ulp_error(gated.torch_composition(gate, up).cpu(), expected, dtype).max().item()
    assert ours <= 0.5 + 1e-3 and theirs > 0.5, (ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", GATED)
def test_special_values_like_torchs_composition(device, name, dtype):
    """Every pair of NaN, +-inf, +-0 and ordinary values: NaN and infinity where float64 math in torch's order of
    operations (the catalog's references) has them, for the result and both gradients, the rest within the bounds;
    for ReLU and SiLU, torch's composition in float64 too (its GELU cancels to 0 from x = -12 in float64, where
    0 * inf is NaN)."""
    gated = GATED[name]
    values = torch.tensor(SPECIAL, dtype=torch.float64)
    gate64, up64 = (t.flatten().to(dtype).double() for t in torch.meshgrid(values, values, indexing="ij"))
    gate, up = gate64.to(dtype).to(device), up64.to(dtype).to(device)
    grad = torch.full_like(gate, 1.5)
    expected = (gated.reference(gate64, up64), *gated.gradient_references(grad.cpu(), gate64, up64))
    scales = (gated.scale(gate64, up64), *gated.gradient_scales(grad.cpu(), gate64, up64))
    bounds = (gated.bound(dtype), gated.gradient_bound(dtype), gated.gradient_bound(dtype))
    ours = (gated.ops.pair(gate, up), *gated.ops.pair_backward(grad, gate, up))
    for mine, reference, scale, bound in zip(ours, expected, scales, bounds, strict=True):
        assert_within(mine, reference, bound, scale)
    if name in ("relu_and_mul", "silu_and_mul"):  # torch's own activation is exact here: its composition agrees
        leaves = [gate64.clone().requires_grad_(), up64.clone().requires_grad_()]
        theirs = gated.torch_composition(*leaves)
        their_grads = torch.autograd.grad(theirs, leaves, torch.full_like(theirs, 1.5))
        for mine, torchs in zip(ours, (theirs.detach(), *their_grads), strict=True):
            assert torch.equal(mine.cpu().double().isnan(), torchs.isnan())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", GATED)
def test_out_forms_write_exactly_their_target(device, name, dtype):
    """out= into a poisoned view inside a larger buffer: every element of the view written (no NaN left), the same
    bits as the functional form, and nothing outside it touched."""
    gated = GATED[name]
    x = merged_input("batched", dtype, device)
    gate, up = halves(x)
    expected = gated.ops.merged(x)
    for call in (
        lambda out: gated.ops.merged_out(x, out=out),
        lambda out: gated.ops.pair_out(gate, up, out=out),
    ):
        rows, cols, d = gate.shape
        target = torch.full((cols, rows, d), float("nan"), dtype=dtype, device=device).transpose(0, 1)
        buffer, out = inside_guarded_storage(target)
        before = buffer.clone()
        out.fill_(float("nan"))
        inside = torch.zeros_like(buffer, dtype=torch.bool)
        inside.as_strided(out.shape, out.stride(), out.storage_offset() - buffer.storage_offset()).fill_(True)
        assert call(out) is out
        assert torch.equal(out, expected)
        assert torch.equal(buffer[~inside], before[~inside])


@pytest.mark.parametrize("name", GATED)
def test_out_may_overwrite_its_gate_but_not_part_of_it(device, name):
    """out= may be gate or up itself (elementwise, as an in-place op), in both forms; not a part of either."""
    gated = GATED[name]
    gate, up = random_data((6, 40), torch.float32, device), random_data((6, 40), torch.float32, device, seed=1)
    expected = gated.ops.pair(gate, up)
    assert torch.equal(gated.ops.pair_out(gate, up, out=gate), expected)
    x = random_data((80,), torch.float32, device)
    expected = gated.ops.merged(x)
    assert torch.equal(gated.ops.merged_out(x, out=x[:40]), expected)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        gated.ops.merged_out(x, out=x[1:41])
    with pytest.raises(RuntimeError, match="unsupported operation"):
        gated.ops.pair_out(x[:40], x[40:], out=x[20:60])


@pytest.mark.parametrize("name", GATED)
def test_bad_input_names_the_problem(device, name):
    gated = GATED[name]
    merged, pair = gated.name, gated.pair_name
    x = random_data((4, 10), torch.float32, device)
    with pytest.raises(RuntimeError, match=rf"act\.{merged}: expected x of shape \[\.\.\., 2d\] .* but got \[4, 9\]"):
        gated.ops.merged(x[:, :9])
    with pytest.raises(RuntimeError, match=r"expected x of shape \[\.\.\., 2d\] .* but got \[\]"):
        gated.ops.merged(x[0, 0])
    with pytest.raises(TypeError, match=rf"act\.{merged}: expected x of dtype .* but got torch\.int64"):
        gated.ops.merged(torch.ones(4, 10, dtype=torch.int64, device=device))
    with pytest.raises(RuntimeError, match=r"expected out of the shape of x\[\.\.\., :d\] \[4, 5\], but got \[4, 10\]"):
        gated.ops.merged_out(x, out=torch.empty_like(x))
    with pytest.raises(TypeError, match=r"expected out of the dtype of x\[\.\.\., :d\]"):
        gated.ops.merged_out(x, out=torch.empty(4, 5, dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match=r"grad_output of the shape of x\[\.\.\., :d\] \[4, 5\], but got \[4, 10\]"):
        gated.ops.merged_backward(x, x)
    with pytest.raises(
        RuntimeError, match=rf"act\.{pair}: expected up of the shape of gate \[4, 5\], but got \[4, 4\]"
    ):
        gated.ops.pair(x[:, :5], x[:, :4])
    with pytest.raises(TypeError, match=rf"act\.{pair}: expected up of the dtype of gate"):
        gated.ops.pair(x[:, :5], x[:, :5].double())
    with pytest.raises(RuntimeError, match=r"expected out of the shape of gate"):
        gated.ops.pair_out(x[:, :5], x[:, 5:], out=x.clone())
    with pytest.raises(RuntimeError, match="internal overlap|unsupported operation"):
        gated.ops.pair_out(x[:, :5], x[:, 5:], out=torch.empty(1, 5, device=device).expand(4, 5))
    with pytest.raises(RuntimeError, match=r"expected grad_output of the shape of gate"):
        gated.ops.pair_backward(x, x[:, :5], x[:, 5:])


@pytest.mark.parametrize("name", GATED)
def test_compile_rejects_bad_input_with_the_same_words(name):
    gated = GATED[name]
    x = random_data((4, 9), torch.float32, "cpu")
    with pytest.raises(RuntimeError) as eager:
        gated.ops.merged(x)
    torch.compiler.reset()
    with pytest.raises(Exception) as compiled:
        torch.compile(gated.ops.merged, backend="eager", fullgraph=True)(x)
    assert str(eager.value) in str(compiled.value)


def test_merged_gradient_comes_from_one_backward_op(device):
    """The [..., 2d] gradient of x is the backward op's output: no slicing, concatenation or zero-filling after."""
    for gated in GATED.values():
        x = random_data((5, 16), torch.float32, device).requires_grad_()
        y = gated.ops.merged(x)
        assert y.grad_fn.name() == f"act::{gated.ops.names[2]}"
        ((accumulate, _),) = y.grad_fn.next_functions
        assert type(accumulate).__name__ == "AccumulateGrad"
        y.backward(torch.ones_like(y))
        assert torch.equal(x.grad, gated.ops.merged_backward(torch.ones_like(y), x.detach()))


def test_functional_forms(device):
    x = random_data((3, 8), torch.float32, device)
    gate, up = halves(x)
    for gated in GATED.values():
        if not gated.activation.drop_in:
            continue
        merged, pair = getattr(activations_ext, gated.name), getattr(activations_ext, gated.pair_name)
        assert torch.equal(merged(x), gated.ops.merged(x)) and torch.equal(pair(gate, up), gated.ops.merged(x))
        out = torch.empty_like(gate)
        assert merged(x, out=out) is out and torch.equal(out, gated.ops.merged(x))
        assert pair(gate, up, out=out) is out and torch.equal(out, gated.ops.merged(x))
    for approximate, name in (("none", "gelu_and_mul"), ("tanh", "gelu_tanh_and_mul")):
        expected = GATED[name].ops.merged(x)
        assert torch.equal(activations_ext.gelu_and_mul(x, approximate), expected)
        assert torch.equal(activations_ext.gelu_mul(gate, up, approximate=approximate), expected)
    with pytest.raises(ValueError, match='act.gelu_and_mul: expected approximate "none" or "tanh", but got "erf"'):
        activations_ext.gelu_and_mul(x, "erf")
    with pytest.raises(TypeError, match="argument 'input' must be Tensor"):
        activations_ext.silu_and_mul([1.0, 2.0])


@pytest.mark.parametrize("activation", sorted({g.activation.name for g in GATED.values()}))
def test_gated_mlp_is_the_usual_block(device, activation):
    """GatedMLP: down(act(gate) * up) with gate and up the halves of one projection, as model code writes it with
    torch's own activation; its gradients too."""
    gated = next(g for g in GATED.values() if g.activation.name == activation)
    torch.manual_seed(0)
    block = activations_ext.GatedMLP(16, 24, activation=activation, device=device, dtype=torch.float64)
    assert block.gate_up.weight.shape == (48, 16) and block.down.weight.shape == (16, 24)
    x = random_data((5, 16), torch.float64, device).requires_grad_()
    ours = block(x)
    gate, up = block.gate_up(x).chunk(2, dim=-1)
    theirs = block.down(gated.torch_composition(gate, up))
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    grads = torch.autograd.grad(ours.sum(), [x, *block.parameters()])
    expected = torch.autograd.grad(theirs.sum(), [x, *block.parameters()])
    for a, b in zip(grads, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert f"activation={activation!r}" in repr(block)


def test_gated_mlp_refuses_an_unknown_activation():
    names = r"\['gelu', 'gelu_tanh', 'quick_gelu', 'relu', 'silu', 'squared_relu'\]"
    with pytest.raises(ValueError, match=r"GatedMLP: activation must be one of " + names):
        activations_ext.GatedMLP(4, 8, activation="swish")


def test_catalog_lists_the_builds_gated_ops():
    assert tuple(g.activation.name for g in GATED.values()) == tuple(n for n, _ in activations_ext._C.gated())
    for gated in GATED.values():
        assert isinstance(gated, Gated) and gated.name == f"{gated.activation.name}_and_mul"
