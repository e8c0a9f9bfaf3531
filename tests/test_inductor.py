"""Fusion under torch.compile: the act ops become Inductor pointwise code that equals the eager kernels."""

import inspect

import fusion
import pytest
import torch
from conftest import DTYPES, random_data
from fusion import kernels_in
from torch._inductor.utils import run_and_get_code

import activations_ext
from activations_ext import _inductor, decompositions
from activations_ext.catalog import ACTIVATIONS, GATED
from activations_ext.numerics import (
    eager_forward,
    eager_gradients,
    max_ulp_errors,
    ulp_error,
    ulp_table_violations,
    whole_range_inputs,
)

# The benchmark's chains, ours (not torch's): name -> fn(x, b, y).
CHAINS = {name: ours for name, (ours, _, _) in fusion.CHAINS.items()}


@pytest.fixture(autouse=True)
def fresh_compiles():
    """Each test compiles anew and leaves the switch to the environment."""
    torch._dynamo.reset()
    yield
    activations_ext.set_inductor_fusion(None)
    torch._dynamo.reset()


def chain_operands(device: str, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    x = random_data((64, 33), dtype, device)
    return x, random_data((33,), dtype, device, seed=1), random_data((64, 33), dtype, device, seed=2)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: equal values with equal signs (-0.0 is not 0.0), or both NaN."""
    a, b = a.double(), b.double()
    return ((a == b) & (a.signbit() == b.signbit())) | (a.isnan() & b.isnan())


@pytest.mark.parametrize("chain", CHAINS)
def test_chain_compiles_to_one_kernel_each_way(device, chain):
    fn = CHAINS[chain]
    x, b, y = chain_operands(device)
    leaf = x.clone().requires_grad_()
    compiled = torch.compile(fn, fullgraph=True)

    def forward_and_backward() -> torch.Tensor:
        out = compiled(leaf, b, y)
        out.backward(y)
        return out

    out, (forward, backward) = run_and_get_code(forward_and_backward)
    assert (kernels_in(forward), kernels_in(backward)) == (1, 1), forward + backward
    assert "torch.ops.act" not in forward + backward
    eager_leaf = x.clone().requires_grad_()
    expected = fn(eager_leaf, b, y)
    expected.backward(y)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=0)
    torch.testing.assert_close(leaf.grad, eager_leaf.grad, rtol=1e-6, atol=0)


def test_switch_changes_the_generated_code_between_compiles(device):
    """Off, on, off again in one process: the compile caches must not serve one state's code to the other."""
    fn, operands = CHAINS["selu"], chain_operands(device)
    for enabled in (False, True, False):
        activations_ext.set_inductor_fusion(enabled)
        torch._dynamo.reset()
        out, code = run_and_get_code(torch.compile(fn, fullgraph=True), *operands)
        code = "\n".join(code)
        assert ("torch.ops.act.selu.default(" in code) == (not enabled), code
        assert kernels_in(code) == (1 if enabled else 2)
        torch.testing.assert_close(out, fn(*operands), rtol=1e-6, atol=0)


def test_environment_variable_keeps_compiled_ops_opaque(device, monkeypatch):
    monkeypatch.setenv(_inductor.ENV_VAR, "0")
    assert not activations_ext.inductor_fusion_enabled()
    _, code = run_and_get_code(torch.compile(CHAINS["selu"], fullgraph=True), *chain_operands(device))
    assert "torch.ops.act.selu.default(" in "\n".join(code)
    activations_ext.set_inductor_fusion(True)  # the call overrides the environment
    assert activations_ext.inductor_fusion_enabled()


def compiled_ops() -> tuple:
    return (
        torch.compile(eager_forward, fullgraph=True, dynamic=False),
        torch.compile(eager_gradients, fullgraph=True, dynamic=False),
    )


def test_compiled_ulp_table_within_bounds(device):
    """The bounds the eager kernels meet (activations_ext.numerics), over SELU's whole range, subnormals too."""
    assert not ulp_table_violations(max_ulp_errors(torch.device(device), *compiled_ops()))


def bitwise(name: str, device: str, dtype: torch.dtype) -> bool:
    """Whether the compiled op (by its table name) can equal the kernel bit for bit: everywhere on the CPU, but on
    CUDA not float32/float64 SELU's (and its gradient from the input), whose generated code calls libdevice's expm1
    and exp where the kernel calls CUDA's, nor SELU's gradient from the input, SiLU's and GELU's in any dtype
    (likewise, or the hardware's exp2 where the kernel keeps a subnormal result). Each is held to the ulp bounds by
    test_compiled_ulp_table_within_bounds. quick GELU's float32 form on CUDA divides and takes libdevice's exp where
    the kernel multiplies by refined_reciprocal's 1 / d and takes exp_by_table (within about 1.3e-12): the two
    doubles could straddle a float32 rounding boundary for about one input in 2^17, and none of these inputs does
    (H200, 2026-11-28); should one, hold it to the bounds instead."""
    if device == "cuda" and name.startswith(("silu", "gelu")):
        return False
    if device == "cuda" and name.startswith("selu") and name != "selu_backward":
        return dtype not in (torch.float32, torch.float64) and name != "selu_backward(x)"
    return True


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_ops_equal_eager(device, dtype):
    x = whole_range_inputs().to(dtype).unique().to(device)
    grad = random_data(x.shape, dtype, device, seed=5)
    forward, gradients = compiled_ops()

    def other_forms(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """In-place, out= and a non-contiguous view, which reach Inductor through functionalization."""
        inplace = t.clone()
        torch.ops.act.selu_(inplace)
        out = torch.empty_like(t)
        torch.ops.act.relu(t, out=out)
        return inplace, out, torch.ops.act.selu(t[1::3]), torch.ops.act.relu(t[::2])

    eager = (*eager_forward(x), *other_forms(x))
    compiled = (*forward(x), *torch.compile(other_forms, fullgraph=True, dynamic=False)(x))
    results = eager[: len(ACTIVATIONS)]
    eager_grads, compiled_grads = eager_gradients(grad, x, *results), gradients(grad, x, *results)
    names = [*ACTIVATIONS, "selu_", "relu.out", "selu strided", "relu strided"]
    names += [a.gradient_name(g) for a in ACTIVATIONS.values() for g in a.gradients]
    for name, ours, theirs in zip(names, (*compiled, *compiled_grads), (*eager, *eager_grads), strict=True):
        assert ours.dtype == theirs.dtype and ours.stride() == theirs.stride(), name
        if not bitwise(name, device, dtype):
            continue  # held to the ulp bounds by test_compiled_ulp_table_within_bounds
        differ = ~same_bits(ours, theirs)
        assert not differ.any(), f"{name}: {int(differ.sum())} differ, e.g. at x={x[differ.nonzero()[0]]}"


def test_decompositions_equal_the_cpu_kernels_run_eagerly():
    """The formulations themselves, with no compiler in between: aten ops on the CPU round as the kernels; an op in
    double arithmetic (Sleef's exp and expm1 in the kernel) stays a call."""
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = whole_range_inputs().to(dtype).unique()
        grad = random_data(x.shape, dtype, "cpu", seed=5)
        for a in ACTIVATIONS.values():
            calls = [(a.ops.forward, (x,), {})]
            calls += [
                (a.ops.backward, (grad, a.ops.forward(x) if g.is_result else x), {"is_result": g.is_result})
                for g in a.gradients
            ]
            for op, args, kwargs in calls:
                decomposed = decompositions.DECOMPOSITIONS[op](*args, **kwargs)
                # In double with Sleef's exp: float32 SiLU, gelu_tanh, quick GELU.
                if a.name in ("silu", "gelu_tanh", "quick_gelu") and dtype == torch.float32:
                    assert decomposed is NotImplemented, (op, kwargs)
                    continue
                assert same_bits(decomposed, op(*args, **kwargs)).all(), (op, dtype, kwargs)
    ones = torch.ones(3, dtype=torch.float64)
    assert decompositions.selu(ones) is NotImplemented
    assert decompositions.selu_backward(ones, ones, is_result=False) is NotImplemented
    assert decompositions.silu(ones) is NotImplemented
    assert decompositions.silu_backward(ones, ones) is NotImplemented
    for name in ("gelu", "gelu_tanh", "quick_gelu"):
        assert getattr(decompositions, name)(ones) is NotImplemented
        assert getattr(decompositions, f"{name}_backward")(ones, ones) is NotImplemented


def decompose_gelu_as_on_cuda(monkeypatch) -> None:
    """The GELU decompositions evaluated on the CPU in CUDA's formulation."""
    monkeypatch.setattr(decompositions, "_kernels_of", lambda x: "cuda")


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "quick_gelu"])
def test_gelu_decompositions_meet_the_kernels_bounds(monkeypatch, name):
    """The CUDA decompositions of GELU, evaluated on the CPU (where they would otherwise stay calls): within the
    kernels' ulp bounds of the float64 references over the whole range (and every value of the 16-bit types, where
    bfloat16's x^3 overflows float), forward and gradient, NaN where the references have it."""
    from test_hardening import every_16_bit_value

    decompose_gelu_as_on_cuda(monkeypatch)
    a = ACTIVATIONS[name]
    (form,) = a.gradients
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = whole_range_inputs().to(dtype).unique()
        if dtype.itemsize == 2:
            x = every_16_bit_value(dtype)
            x = x[x.isfinite()]
        grad = random_data(x.shape, dtype, "cpu", seed=5)
        forward = getattr(decompositions, name)(x)
        gradient = getattr(decompositions, f"{name}_backward")(grad, x)
        expected, expected_gradient = a.reference(x), form.reference(grad, x)
        assert not forward.isnan().any() and not gradient.isnan().any(), dtype
        finite = expected.to(dtype).isfinite() & expected_gradient.to(dtype).isfinite()
        assert ulp_error(forward[finite], expected[finite], dtype, a.scale(x)[finite]).max() <= a.bound(dtype), dtype
        scale = form.scale(grad, x)[finite]
        error = ulp_error(gradient[finite], expected_gradient[finite], dtype, scale)
        assert error.max() <= form.bound(dtype), dtype


def gated_calls(gated, dtype: torch.dtype) -> list:
    """Each of a gated activation's four functional ops on a merged input (halves d = 129, off every vector width) and
    on its halves: (op, args)."""
    x = random_data((4, 2 * 129), dtype, "cpu")
    gate, up = x[:, :129], x[:, 129:]
    grad = random_data((4, 129), dtype, "cpu", seed=5)
    ops = gated.ops
    return [
        (ops.merged, (x,)),
        (ops.merged_backward, (grad, x)),
        (ops.pair, (gate, up)),
        (ops.pair_backward, (grad, gate, up)),
    ]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", GATED)
def test_gated_decompositions_equal_the_cpu_kernels(name, dtype):
    """The gated forms' formulations on the CPU, bit for bit as the kernels; where the activation calls Sleef in double
    (SiLU, gelu_tanh and quick GELU in float32, every float64 form but ReLU's and squared ReLU's) a call."""
    gated = GATED[name]
    activation = gated.activation.name
    in_double = (activation not in ("relu", "squared_relu") and dtype == torch.float64) or (
        activation in ("silu", "gelu_tanh", "quick_gelu") and dtype == torch.float32
    )
    for op, args in gated_calls(gated, dtype):
        decomposed = decompositions.DECOMPOSITIONS[op](*args)
        if in_double:
            assert decomposed is NotImplemented, op
            continue
        for ours, kernel in zip(*(t if isinstance(t, tuple) else (t,) for t in (decomposed, op(*args))), strict=True):
            assert ours.dtype == kernel.dtype and same_bits(ours, kernel).all(), op


@pytest.mark.parametrize("name", GATED)
def test_compiled_gated_ops_keep_the_kernels_layouts(device, name):
    """Under torch.compile each gated op's outputs are laid out as the kernels lay them out (the merged gradient as
    its input, here column-major and permuted), not as the decomposition's concatenation."""
    ops = GATED[name].ops
    for x in (
        random_data((16, 6), torch.bfloat16, device).t(),
        random_data((8, 3, 10), torch.bfloat16, device).permute(1, 2, 0),
    ):
        grad = random_data(x.shape[:-1] + (x.shape[-1] // 2,), torch.bfloat16, device, seed=1)
        d = x.shape[-1] // 2
        for op, args in ((ops.merged_backward, (grad, x)), (ops.merged, (x,)), (ops.pair, (x[..., :d], x[..., d:]))):
            torch._dynamo.reset()
            compiled = torch.compile(lambda *a, op=op: op(*a), fullgraph=True)(*args)
            eager = op(*args)
            assert compiled.stride() == eager.stride(), (op, compiled.stride(), eager.stride())
            torch.testing.assert_close(compiled, eager, rtol=8e-3, atol=0)


@pytest.mark.parametrize("name", ["gelu_and_mul", "gelu_tanh_and_mul"])
def test_gated_gelu_decompositions_meet_the_kernels_bounds(monkeypatch, name):
    """The CUDA decompositions of the gated GELUs, evaluated on the CPU: within the kernels' bounds of float64."""
    decompose_gelu_as_on_cuda(monkeypatch)
    gated = GATED[name]
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        gate = whole_range_inputs().to(dtype).unique()
        up = random_data(gate.shape, dtype, "cpu", seed=3)
        grad = random_data(gate.shape, dtype, "cpu", seed=5)
        result = decompositions.DECOMPOSITIONS[gated.ops.pair](gate, up)
        assert ulp_error(result, gated.reference(gate, up), dtype, gated.scale(gate, up)).max() <= gated.bound(dtype)
        grads = decompositions.DECOMPOSITIONS[gated.ops.pair_backward](grad, gate, up)
        references, scales = gated.gradient_references(grad, gate, up), gated.gradient_scales(grad, gate, up)
        for ours, reference, scale in zip(grads, references, scales, strict=True):
            assert ulp_error(ours, reference, dtype, scale).max() <= gated.gradient_bound(dtype), dtype


@pytest.mark.parametrize("name", GATED)
def test_gated_op_fuses_with_its_neighbours(device, name):
    """``silu_and_mul(x) * 2`` compiles to one generated kernel, forward and backward (bfloat16, where every gated
    activation decomposes on either device), equal to eager."""
    gated = GATED[name]
    x = random_data((64, 2 * 72), torch.bfloat16, device)
    grad = random_data((64, 72), torch.bfloat16, device, seed=1)

    def block(t: torch.Tensor) -> torch.Tensor:
        return gated.ops.merged(t) * 2

    leaf = x.clone().requires_grad_()
    compiled = torch.compile(block, fullgraph=True)

    def forward_and_backward() -> torch.Tensor:
        out = compiled(leaf)
        out.backward(grad)
        return out

    out, (forward, backward) = run_and_get_code(forward_and_backward)
    assert (kernels_in(forward), kernels_in(backward)) == (1, 1), forward + backward
    assert "torch.ops.act" not in forward + backward
    eager_leaf = x.clone().requires_grad_()
    expected = block(eager_leaf)
    expected.backward(grad)
    # About an ulp, and where a result is subnormal one step of bfloat16's subnormals (2^-133) times the block's * 2:
    # the GELUs' generated exp on CUDA is held to the ulp bounds, not to the kernels' bits.
    doubled_subnormal_step = 2 * 2.0**-133
    torch.testing.assert_close(out, expected, rtol=8e-3, atol=doubled_subnormal_step)
    torch.testing.assert_close(leaf.grad, eager_leaf.grad, rtol=8e-3, atol=doubled_subnormal_step)


def test_inductor_internals_this_module_relies_on():
    """activations_ext._inductor's use of Inductor's private state, checked so a torch release that changes
    it fails here by name rather than silently compiling the ops unfused or from stale caches."""
    from torch._inductor import config, decomposition, lowering

    assert isinstance(decomposition.decompositions, dict)
    assert callable(decomposition.fast_random_decomps.cache_clear)
    assert {"layout_constraint", "warn", "override_decomp"} <= set(inspect.signature(lowering.make_fallback).parameters)
    assert isinstance(config.unsafe_marked_cacheable_functions, dict)
    _inductor.prepare()
    table = decomposition.select_decomp_table()
    for op in decompositions.DECOMPOSITIONS:
        assert op in table and op in lowering.lowerings, op
    # The switch's state is part of the configuration that the compile caches key on.
    for enabled in (True, False):
        activations_ext.set_inductor_fusion(enabled)
        saved = config.save_config_portable()["unsafe_marked_cacheable_functions"]
        assert saved[_inductor._CACHE_KEY_ENTRY].startswith("on-" if enabled else "off-")
