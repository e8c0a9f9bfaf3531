"""Forward ops and backward ops against float64 references, over dtypes and layouts."""

import os
import re

import pytest
import torch
from conftest import (
    BACKWARD,
    DTYPES,
    FORWARD,
    LAYOUTS,
    STRIDED_LAYOUTS,
    assert_matches,
    inside_guarded_storage,
    make_layout,
    odd_sizes,
    python_outside_checkout,
    random_data,
    requires_cuda,
)

import activations_ext
from activations_ext.catalog import ACTIVATIONS, GATED
from activations_ext.numerics import ulp_error


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward_matches_reference(device, op, dtype, layout):
    functional, _, ref = FORWARD[op]
    x = make_layout(layout, dtype, device)
    before = x.clone()
    y = functional(x)
    assert y.shape == x.shape and y.device == x.device
    assert y.stride() == torch.empty_like(x).stride()  # what the fake kernel promises
    assert_matches(y.cpu(), ref(before.cpu()), dtype)
    assert torch.equal(x, before)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_sizes_and_offsets(device, op, dtype, offset):
    functional, inplace, ref = FORWARD[op]
    for n in odd_sizes():
        x = random_data((n + offset,), dtype, device, seed=n)[offset:]
        assert_matches(functional(x).cpu(), ref(x.cpu()), dtype)
        expected = ref(x.cpu())
        assert_matches(inplace(x).cpu(), expected, dtype)


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "offset", "channels_last", "scalar", *STRIDED_LAYOUTS])
def test_inplace_writes_that_view_only(device, op, dtype, layout):
    _, inplace, ref = FORWARD[op]
    buffer, x = inside_guarded_storage(make_layout(layout, dtype, device))
    buffer_before = buffer.clone()
    expected = ref(x.cpu())
    returned = inplace(x)
    assert returned is x
    assert_matches(x.cpu(), expected, dtype)
    # Everything in the storage outside the view is untouched.
    outside = torch.ones_like(buffer, dtype=torch.bool)
    outside.as_strided(x.shape, x.stride(), x.storage_offset()).fill_(False)
    assert outside.sum() >= 2 * 64
    assert torch.equal(buffer[outside], buffer_before[outside])


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("out_layout", ["contiguous", "transposed", "strided", "offset", "chunk"])
@pytest.mark.parametrize("x_layout", ["contiguous", "strided", "narrow"])
def test_out_writes_poisoned_out(device, op, dtype, out_layout, x_layout):
    functional, _, ref = FORWARD[op]
    x = make_layout(x_layout, dtype, device)
    if out_layout == "contiguous":
        buffer = torch.full((x.numel() + 16,), float("nan"), dtype=dtype, device=device)
        out = buffer[: x.numel()].view(x.shape)
    elif out_layout == "offset":
        buffer = torch.full((x.numel() + 16,), float("nan"), dtype=dtype, device=device)
        out = buffer[3 : 3 + x.numel()].view(x.shape)
    elif out_layout == "transposed":
        buffer = torch.full((x.shape[1], x.shape[0]), float("nan"), dtype=dtype, device=device)
        out = buffer.t()
    elif out_layout == "chunk":
        buffer = torch.full((x.shape[0], 2 * x.shape[1]), float("nan"), dtype=dtype, device=device)
        out = buffer.chunk(2, dim=-1)[0]
    else:
        buffer = torch.full((x.shape[0], 2 * x.shape[1] + 1), float("nan"), dtype=dtype, device=device)
        out = buffer[:, 1::2]
    returned = getattr(torch.ops.act, op)(x, out=out)
    assert returned is out
    assert_matches(out.cpu(), ref(x.cpu()), dtype)
    assert int(torch.isnan(buffer).sum()) == buffer.numel() - out.numel()


@pytest.mark.parametrize("form", list(BACKWARD))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "grad_layout",
    ["contiguous", "expanded", "transposed", "scalar", "empty", "summed", "row_values", *STRIDED_LAYOUTS],
)
def test_backward_ops_match_reference(device, form, dtype, grad_layout):
    backward, ref, saved_of, torch_op = BACKWARD[form]
    if grad_layout == "summed":  # what .sum().backward() passes: one value, stride 0 everywhere
        grad = random_data((), dtype, device).expand(37, 129)
    else:
        grad = make_layout(grad_layout, dtype, device)
    saved = saved_of(random_data(tuple(grad.shape), dtype, device, seed=1))
    grad_input = backward(grad, saved)
    assert grad_input.shape == saved.shape
    assert grad_input.stride() == torch_op(grad, saved).stride()  # ATen's layout rule
    assert_matches(grad_input.cpu(), ref(grad.cpu(), saved.cpu()), dtype, abs_scale=2 * grad.cpu())


def test_relu_propagates_nan_like_torch(device):
    x = torch.tensor([float("nan"), -1.0, 2.0, float("-inf"), float("inf")], device=device)
    torch.testing.assert_close(torch.ops.act.relu(x), torch.relu(x), equal_nan=True)
    torch.testing.assert_close(torch.ops.act.selu(x), torch.selu(x), equal_nan=True)


def test_selu_keeps_precision_near_zero(device):
    # exp(x) - 1 would return 0 or 1-ulp garbage here; expm1 keeps every digit.
    x = -torch.logspace(-12, -3, 101, dtype=torch.float32, device=device)
    assert_matches(torch.ops.act.selu(x).cpu(), FORWARD["selu"][2](x.cpu()), torch.float32)


def test_cpu_float32_selu_rounds_its_negative_branch_once():
    # The CPU kernel's alpha * scale * expm1(x) for float32 is rounded once (0.72 ulp at worst over every negative
    # float); torch's rounds expm1f's result and then the product with a float constant (1.60 ulps). A formula
    # that loses a term of its compensated sums, or rounds twice, exceeds 0.75 ulp or is farther than torch's on
    # more than its near-ties. Every 97th negative float above -20, and the tiny ones.
    bits = torch.arange(0x80000001, 0xC1A00000, 97, dtype=torch.int64).to(torch.int32)
    x = torch.cat([bits.view(torch.float32), -torch.logspace(-44, -20, 2001)])
    ours, theirs, reference = torch.ops.act.selu(x), torch.selu(x), FORWARD["selu"][2](x)
    assert float(ulp_error(ours, reference, torch.float32).max()) <= 0.75
    farther = (ours.double() - reference).abs() > (theirs.double() - reference).abs()
    assert float(farther.double().mean()) < 2e-4


def spaced(t: torch.Tensor) -> torch.Tensor:
    """The values of a 1-d ``t`` in a view with a step of 2, which the CPU loop computes rather than looks up."""
    return torch.stack([t, torch.zeros_like(t)], dim=1)[:, 0]


def every_16_bit_pattern(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Every bit pattern of a 16-bit ``dtype``, contiguous and spaced."""
    x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)
    return x, spaced(x)


def assert_same_numbers(actual: torch.Tensor, computed: torch.Tensor, name: str) -> None:
    """NaN where ``computed`` has NaN (the computing loop's float16 conversions quiet a payload one way, F16C's
    another), the same bits elsewhere."""
    assert torch.equal(actual.isnan(), computed.isnan()), name
    numbers = ~computed.isnan()
    assert torch.equal(actual[numbers].view(torch.int16), computed[numbers].view(torch.int16)), name


def with_specials(t: torch.Tensor) -> torch.Tensor:
    """``t`` with inf, NaN and 0 at every 97th element, as a gradient or a gated op's ``up``."""
    t[::97], t[1::97], t[2::97] = float("inf"), float("nan"), 0.0
    return t


# Rows whose start and length are not multiples of 16 elements, the vector width of the table loops.
ODD_ROW = slice(5, -6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cpu_16_bit_lookups_equal_the_arithmetic(dtype):
    # Contiguous 16-bit rows look their results up in a table that the op's own loop fills once; rows of other
    # steps compute them. Every bit pattern both ways, out of place, in place and into out=, and an odd row.
    x, x_spaced = every_16_bit_pattern(dtype)
    for name, (functional, inplace, _) in FORWARD.items():
        computed = functional(x_spaced).contiguous()
        for looked_up in (functional(x), inplace(x.clone()), functional(x, out=torch.empty_like(x))):
            assert_same_numbers(looked_up, computed, name)
        assert_same_numbers(functional(x[ODD_ROW]), computed[ODD_ROW], name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cpu_16_bit_slope_lookups_equal_the_arithmetic(dtype):
    # SiLU's and GELU's gradients on contiguous 16-bit rows take the slope from a table of op(1, x) and multiply;
    # rows of other steps compute them. Every bit pattern, against gradients of mixed signs, infinities and NaN.
    x, x_spaced = every_16_bit_pattern(dtype)
    grad = with_specials(random_data(x.shape, dtype, "cpu", seed=3))
    for name in ("silu", "gelu", "gelu_tanh", "quick_gelu"):
        backward = getattr(torch.ops.act, f"{name}_backward")
        computed = backward(spaced(grad), x_spaced).contiguous()
        assert_same_numbers(backward(grad, x), computed, name)
        assert_same_numbers(backward(grad[ODD_ROW], x[ODD_ROW]), computed[ODD_ROW], name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cpu_16_bit_gate_lookups_equal_the_arithmetic(dtype):
    # Gated forwards on contiguous 16-bit rows take act(gate) from a table of floats and multiply by up; rows of
    # other steps compute it. Every bit pattern as the gate, on two tensors and on the merged layout, into out=
    # (a fresh tensor, the gate, the up), and an odd row.
    gate, gate_spaced = every_16_bit_pattern(dtype)
    up = with_specials(random_data(gate.shape, dtype, "cpu", seed=4))
    for gated in GATED.values():
        computed = gated.ops.pair(gate_spaced, spaced(up)).contiguous()
        merged = torch.cat([gate.view(256, 256), up.view(256, 256)], dim=1)
        gate_out, up_out = gate.clone(), up.clone()
        for looked_up in (
            gated.ops.pair(gate, up),
            gated.ops.pair_out(gate, up, out=torch.empty_like(gate)),
            gated.ops.pair_out(gate_out, up, out=gate_out),
            gated.ops.pair_out(gate, up_out, out=up_out),
            gated.ops.merged(merged).flatten(),
        ):
            assert_same_numbers(looked_up, computed, gated.name)
        assert_same_numbers(gated.ops.pair(gate[ODD_ROW], up[ODD_ROW]), computed[ODD_ROW], gated.name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cpu_16_bit_gated_gradient_lookups_equal_the_arithmetic(dtype):
    # Gated backwards of SiLU and GELU on contiguous 16-bit rows take act(gate) and its slope from tables of floats:
    # (grad * up) * slope(gate) and grad * act(gate); rows of other steps compute them. Every bit pattern as the
    # gate, with infinities, NaN and 0 in grad and up, on two tensors, the merged layout and an odd row.
    gate, gate_spaced = every_16_bit_pattern(dtype)
    up = with_specials(random_data(gate.shape, dtype, "cpu", seed=5))
    grad = with_specials(random_data(gate.shape, dtype, "cpu", seed=6).roll(1))
    for gated in GATED.values():
        computed = [g.contiguous() for g in gated.ops.pair_backward(spaced(grad), gate_spaced, spaced(up))]
        merged = torch.cat([gate.view(256, 256), up.view(256, 256)], dim=1)
        merged_gradient = gated.ops.merged_backward(grad.view(256, 256), merged)
        looked_up = {
            "pair": gated.ops.pair_backward(grad, gate, up),
            "merged": (merged_gradient[:, :256].flatten(), merged_gradient[:, 256:].flatten()),
            "odd row": gated.ops.pair_backward(grad[ODD_ROW], gate[ODD_ROW], up[ODD_ROW]),
        }
        for form, (grad_gate, grad_up) in looked_up.items():
            rows = ODD_ROW if form == "odd row" else slice(None)
            assert_same_numbers(grad_gate, computed[0][rows], f"{gated.name} {form}: gate's gradient")
            assert_same_numbers(grad_up, computed[1][rows], f"{gated.name} {form}: up's gradient")


@pytest.mark.parametrize("requested", ["default", "avx2"])
def test_cpu_16_bit_lookups_on_the_narrower_loops(requested, tmp_path):
    """The lookup tests above in the copies of the CPU loop for CPUs without AVX-512 or AVX2 (one load an element,
    and gathers of 8), which this machine would otherwise not run."""
    if requested == "avx2" and activations_ext._C.cpu_loop() == "baseline":
        pytest.skip("this CPU has no AVX2")
    env = dict(os.environ, ATEN_CPU_CAPABILITY=requested)
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "lookups_equal"]
    result = python_outside_checkout(command, tmp_path, env)
    assert result.returncode == 0 and "8 passed," in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]


FILL_TABLES_WHILE_FLUSHING = """
import sys, pytest, torch, activations_ext
torch.set_num_threads(1)  # the tables are filled on this thread, the one that flushes
if not torch.set_flush_denormal(True):
    sys.exit(77)
for dtype in (torch.float16, torch.bfloat16):
    x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)
    for name in ("silu", "gelu", "gelu_tanh", "quick_gelu", "selu", "relu", "squared_relu"):
        getattr(torch.ops.act, name)(x)
    for name in ("silu", "gelu", "gelu_tanh", "quick_gelu"):
        getattr(torch.ops.act, f"{name}_backward")(x, x)
        getattr(torch.ops.act, f"{name}_mul")(x, x)
        getattr(torch.ops.act, f"{name}_mul_backward")(x, x, x)
torch.set_flush_denormal(False)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1], "-k", "lookups_equal"]))
"""


def test_cpu_16_bit_tables_filled_while_flushing_subnormals_hold_them(tmp_path):
    """A table filled on a thread that flushes subnormals (torch.set_flush_denormal) still holds the op's results:
    a fresh process fills every table with flushing on, turns it off and reruns the lookup tests."""
    result = python_outside_checkout(["-c", FILL_TABLES_WHILE_FLUSHING, __file__], tmp_path)
    if result.returncode == 77:
        pytest.skip("torch.set_flush_denormal is not supported on this CPU")
    passed = re.search(r"(?<!\d)8 passed", result.stdout)
    assert result.returncode == 0 and passed, result.stdout[-3000:] + result.stderr[-3000:]


def assert_gelu_saturates(big: torch.Tensor) -> None:
    """At these large x and their negatives, gelu(x) is x and -0 (plain and gated), its slope 1 and +0 (plain and the
    gated gate's)."""
    x = torch.cat([big, -big])
    ones = torch.ones_like(x)
    expected = torch.cat([big, torch.full_like(big, -0.0)])
    for value in (torch.ops.act.gelu(x), torch.ops.act.gelu_and_mul(torch.stack([x, ones], 1)).flatten()):
        assert value.tolist() == expected.tolist() and torch.equal(value.signbit(), expected.signbit())
    for gradient in (torch.ops.act.gelu_backward(ones, x), torch.ops.act.gelu_mul_backward(ones, x, ones)[0]):
        assert gradient.tolist() == [1.0] * len(big) + [0.0] * len(big) and not gradient.signbit().any()


def test_float64_gelu_at_the_largest_values():
    # Past |x| = 1e150 exp(-x^2 / 2) drops x^2's rounding error (x^2 overflows) and erfc's scaled part is clamped:
    # the values and slopes are torch's up to the largest finite value.
    assert_gelu_saturates(
        torch.tensor([9e149, 1e150, 1.5e150, 1e200, 1e300, torch.finfo(torch.float64).max], dtype=torch.float64)
    )


def test_float32_gelu_at_the_largest_values(device):
    # exp(-x^2 / 2), which value and slope share, is 0 from |x| = 39 up (x^2 exact in double) up to the largest float
    # (torch's float32 GELU overflows to inf near the top).
    assert_gelu_saturates(torch.tensor([39.0, 1e19, 2e19, 1e30, 3e38, torch.finfo(torch.float32).max], device=device))


@requires_cuda
def test_float32_selu_has_torchs_bits_for_every_float():
    # The kernel's expm1 for x < 0 is CUDA's expm1f step for step, less its branches for x >= 0; torch.selu
    # calls expm1f itself. Every float32 bit pattern, 2^28 at a time (negative zero, subnormals, inf, NaN too).
    chunk = 1 << 28
    for start in range(-(1 << 31), 1 << 31, chunk):
        x = torch.arange(start, start + chunk, dtype=torch.int32, device="cuda").view(torch.float32)
        ours, theirs = torch.ops.act.selu(x), torch.selu(x)
        nan = theirs.isnan()
        assert torch.equal(ours.isnan(), nan), f"NaNs not where torch has them, in the chunk from {start:#x}"
        differ = (ours.view(torch.int32) != theirs.view(torch.int32)) & ~nan
        assert not differ.any(), f"{int(differ.sum())} differ, e.g. selu({x[differ][0].item()!r})"


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_large_tensors_with_a_head_and_a_tail(dtype):
    # 2^22 16-byte packs and more, the input one element past a 16-byte boundary: the forward (into a fresh,
    # aligned result) element by element, the backward (gradient and result aligned alike) in packs and a tail.
    n = (1 << 22) * (16 // torch.empty((), dtype=dtype).element_size()) + 13
    x = random_data((n + 1,), dtype, "cuda")[1:]
    assert_matches(torch.ops.act.selu(x).cpu(), FORWARD["selu"][2](x.cpu()), dtype)
    g = random_data((n,), dtype, "cuda", seed=2)
    result = torch.ops.act.selu(x)
    expected = BACKWARD["selu_backward"].reference(g.cpu(), result.cpu())
    assert_matches(torch.ops.act.selu_backward(g, result).cpu(), expected, dtype, abs_scale=2 * g.cpu())


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_sizes_that_one_wave_holds_at_more_packs_a_thread(dtype):
    # Dense tensors of 1 to 4 times as many 16-byte packs as the GPU's resident threads, each with a tail of
    # single elements: one full wave takes them at 2 or 4 packs a thread, which every op whose kernel's registers
    # admit every thread then launches.
    props = torch.cuda.get_device_properties(0)
    resident = props.multi_processor_count * props.max_threads_per_multi_processor
    per_pack = 16 // torch.empty((), dtype=dtype).element_size()
    for packs in (resident + 1, 2 * resident - 3, 2 * resident + 5, 3 * resident, 4 * resident - 7, 4 * resident + 3):
        n = packs * per_pack + 5
        x, g = random_data((n,), dtype, "cuda", seed=packs), random_data((n,), dtype, "cuda", seed=1)
        assert torch.equal(torch.ops.act.relu(x), torch.relu(x))
        assert torch.equal(torch.ops.act.relu_backward(g, x), torch.ops.aten.threshold_backward(g, x, 0.0))
        inplace = x.clone()
        torch.ops.act.relu_(inplace)
        assert torch.equal(inplace, torch.relu(x))
        result = torch.ops.act.selu(x)
        assert_matches(result.cpu(), FORWARD["selu"][2](x.cpu()), dtype)
        expected = BACKWARD["selu_backward"].reference(g.cpu(), result.cpu())
        assert_matches(torch.ops.act.selu_backward(g, result).cpu(), expected, dtype, abs_scale=2 * g.cpu())
