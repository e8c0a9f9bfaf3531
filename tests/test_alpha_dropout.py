"""selu_alpha_dropout: statistics, exactness against torch's composition for the mask it drew, gradients, the
random stream (seeds, successive calls, CUDA graphs, layouts), torch.compile, bad input, the nn.Module."""

import math

import pytest
import torch
from bench import saved_bytes
from conftest import DTYPES, HAS_CUDA, random_data, requires_cuda

import activations_ext
from activations_ext import decompositions
from activations_ext.catalog import (
    SELU_ALPHA_DROPOUT_ULP_BOUNDS,
    SELU_SCALE,
    alpha_dropout_constants,
    alpha_dropout_dropped_value,
    alpha_dropout_kept,
    selu_alpha_dropout_backward_reference,
    selu_alpha_dropout_reference,
    selu_reference,
)
from activations_ext.numerics import ulp_error, whole_range_inputs

act = torch.ops.act


def generator(device: str, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def exactness_inputs(dtype: torch.dtype, device: str) -> torch.Tensor:
    """SELU's range above saturation (there a kept value would round to the dropped one and hide the mask),
    tiny and subnormal inputs included."""
    x = whole_range_inputs().to(dtype).unique()
    return x[x > (-4 if dtype.itemsize == 2 else -15)].to(device)


@pytest.mark.parametrize("p", [0.05, 0.1, 0.2])
def test_self_normalizing_statistics(device, p):
    """On 2^24 standard-normal inputs: the kept fraction within 5 sigma of 1 - p, and mean and variance within
    0.01 of SELU's fixed point (0, 1)."""
    n = 1 << 24
    dtypes = [torch.float32, torch.bfloat16] if device == "cuda" else [torch.float32]
    for dtype in dtypes:
        x = torch.randn(n, generator=generator("cpu", 1), dtype=torch.float32).to(device=device, dtype=dtype)
        y = act.selu_alpha_dropout(x, p, True, generator=generator(device, 2))
        kept = alpha_dropout_kept(y, p).double().mean().item()
        assert abs(kept - (1 - p)) <= 5 * math.sqrt(p * (1 - p) / n), (dtype, kept)
        y = y.double()
        assert abs(y.mean().item()) <= 0.01 and abs(y.var().item() - 1) <= 0.01, (dtype, y.mean(), y.var())


def assert_equals_the_composition_for_its_mask(x: torch.Tensor, p: float) -> None:
    """Forward and gradient within the ulp bounds of float64 math for the mask recovered from the output."""
    dtype = x.dtype
    leaf = x.detach().requires_grad_()  # x's own layout: a clone would be dense and 16-byte aligned
    y = act.selu_alpha_dropout(leaf, p, True)
    kept = alpha_dropout_kept(y, p).cpu()
    assert 0.3 < kept.double().mean().item() < 0.99
    a, _, _ = alpha_dropout_constants(p)
    scale = torch.where(kept, a * selu_reference(x.cpu()).abs(), 0.0)
    bound_16, bound = SELU_ALPHA_DROPOUT_ULP_BOUNDS["forward"]
    error = ulp_error(y.detach().cpu(), selu_alpha_dropout_reference(x.cpu(), kept, p), dtype, scale).max().item()
    assert error <= (bound_16 if dtype.itemsize == 2 else bound), error
    grad = torch.rand(x.shape, generator=generator("cpu", 3), dtype=torch.float64).add(0.5).to(dtype).to(x.device)
    y.backward(grad)
    expected = selu_alpha_dropout_backward_reference(grad.cpu(), x.cpu(), kept, p)
    bound_16, bound = SELU_ALPHA_DROPOUT_ULP_BOUNDS["backward"]
    error = ulp_error(leaf.grad.cpu(), expected, dtype).max().item()
    assert error <= (bound_16 if dtype.itemsize == 2 else bound), error
    assert (leaf.grad.cpu()[~kept] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_equals_the_composition_for_its_mask(device, dtype, p):
    assert_equals_the_composition_for_its_mask(exactness_inputs(dtype, device), p)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_several_packs_a_thread_equal_the_composition(dtype):
    """From 2^21 32-byte packs the CUDA launcher gives each thread several packs: 2 at once where the GPU's DRAM is
    slow against its SMs (H100), one after another over a grid of at most 4 waves where it is fast (H200), so a GPU
    runs one of the two. Here with a tail of single elements, and in a view one element past a 16-byte boundary
    (whose fresh result is not: element by element, 4 a thread). Inputs above -3 keep every kept value apart from
    the dropped one."""
    n = (1 << 22) * (16 // torch.empty((), dtype=dtype).element_size()) + 13
    x = torch.randn(n + 1, generator=generator("cpu", 4)).clamp_(min=-3).to(device="cuda", dtype=dtype)
    assert_equals_the_composition_for_its_mask(x[:-1], 0.1)
    assert_equals_the_composition_for_its_mask(x[1:], 0.1)


def test_gradcheck_and_gradgradcheck(device):
    x = random_data((7, 19), torch.float64, device).requires_grad_()

    def fn(t: torch.Tensor) -> torch.Tensor:  # the same mask on every call
        return act.selu_alpha_dropout(t, 0.3, True, generator=generator(device, 7))

    assert not torch.equal(alpha_dropout_kept(fn(x), 0.3), torch.ones_like(x, dtype=torch.bool))
    assert torch.autograd.gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


def test_seeds_and_successive_calls(device):
    x = random_data((513, 67), torch.float32, device)
    torch.manual_seed(11)
    first, second = act.selu_alpha_dropout(x, 0.2, True), act.selu_alpha_dropout(x, 0.2, True)
    torch.manual_seed(11)
    assert torch.equal(act.selu_alpha_dropout(x, 0.2, True), first)  # torch.manual_seed reproduces it
    assert not torch.equal(alpha_dropout_kept(first, 0.2), alpha_dropout_kept(second, 0.2))  # each call draws anew
    one, other = (act.selu_alpha_dropout(x, 0.2, True, generator=generator(device, s)) for s in (1, 2))
    assert not torch.equal(alpha_dropout_kept(one, 0.2), alpha_dropout_kept(other, 0.2))
    assert torch.equal(one, act.selu_alpha_dropout(x, 0.2, True, generator=generator(device, 1)))


LAYOUTS = ["contiguous", "transposed", "chunk", "strided", "expanded", "offset", "permuted"]


def layout(name: str, device: str) -> torch.Tensor:
    base = random_data((64, 2 * 136), torch.float32, device, seed=4)
    return {
        "contiguous": base,
        "transposed": base.t(),
        "chunk": base.chunk(2, dim=-1)[1],
        "strided": base[:, 1::2],
        "expanded": base[:1].expand(64, -1),
        "offset": base.flatten()[3:],
        "permuted": base.view(4, 16, 2, 136).permute(3, 0, 2, 1),
    }[name]


@pytest.mark.parametrize("name", LAYOUTS)
def test_any_layout_backward_replays_the_forwards_mask(device, name):
    """Whatever the input's layout, the gradient is zero exactly where the forward dropped, and the values equal
    those of a contiguous copy of the input drawn with the same seed where both lay the result out alike."""
    x = layout(name, device).requires_grad_()
    y = act.selu_alpha_dropout(x, 0.4, True, generator=generator(device, 5))
    kept = alpha_dropout_kept(y, 0.4)
    assert y.shape == x.shape and 0.4 < kept.double().mean().item() < 0.8
    (grad,) = torch.autograd.grad(y, x, torch.ones_like(y))
    if name != "expanded":  # an expanded input's gradient sums over the rows that share an element
        assert torch.equal(grad == 0, ~kept)
    expected = selu_alpha_dropout_reference(x.detach().cpu(), kept.cpu(), 0.4)
    torch.testing.assert_close(y.detach().cpu().double(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_packs_and_single_elements_draw_the_same_words(device, dtype):
    """The CUDA launcher's packs (32 bytes, whole Philox blocks) and its single elements number words alike: an input
    with every other column, whose elements go one by one into a contiguous result, draws the mask and values that
    its contiguous copy draws in packs, for the same seed; and each backward replays its forward's mask."""
    base = torch.randn(37, 2 * 203, generator=generator("cpu", 8)).clamp_(min=-3).to(device=device, dtype=dtype)
    results = []
    for x in (base[:, ::2], base[:, ::2].contiguous()):
        x = x.detach().requires_grad_()
        y = act.selu_alpha_dropout(x, 0.4, True, generator=generator(device, 11))
        assert y.is_contiguous()
        (grad,) = torch.autograd.grad(y, x, torch.ones_like(y))
        assert torch.equal(grad == 0, ~alpha_dropout_kept(y, 0.4))
        results.append(y)
    assert 0.4 < alpha_dropout_kept(results[1], 0.4).double().mean().item() < 0.8
    assert torch.equal(results[0], results[1])


def test_more_than_25_dimensions_replay_the_mask(device):
    """26 dimensions that no two merge (a reversed input, a contiguous gradient): the backward reads each operand
    where it lies, in launches of at most 25 dimensions on CUDA, and its words stay numbered by offsets in the
    result, laid out as the forward's, so it replays the forward's mask."""
    # Standard normal: scaled further, kept elements saturate to the dropped value in bfloat16, and the output no
    # longer tells which were kept.
    x = torch.randn((2,) * 26, generator=torch.Generator().manual_seed(0), dtype=torch.bfloat16)
    x = x.to(device).permute(*reversed(range(26))).requires_grad_()
    y = act.selu_alpha_dropout(x, 0.3, True)
    (grad,) = torch.autograd.grad(y, x, torch.ones(x.shape, dtype=x.dtype, device=device))
    replayed = torch.equal(grad == 0, ~alpha_dropout_kept(y, 0.3))
    assert replayed  # (not the tensors themselves: pytest would print all 2^26 elements)


def test_saved_tensor_hooks_that_lay_out_anew_keep_the_mask(device):
    """A pack hook may hand x back contiguous (as save_on_cpu's pinned copies are): the backward still replays."""
    x = random_data((64, 96), torch.float32, device).t().requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.contiguous(), lambda t: t):
        y = act.selu_alpha_dropout(x, 0.4, True)
        (grad,) = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)
    kept = alpha_dropout_kept(y, 0.4)
    assert torch.equal(grad == 0, ~kept)
    (grad2,) = torch.autograd.grad(grad.sum(), x)  # double backward through the same node
    assert torch.equal(grad2[~kept], torch.zeros_like(grad2[~kept]))


def test_recomputing_partitioner_settings_are_refused():
    """Settings under which torch.compile's partitioner would recompute the op in the backward (a new mask)."""
    import torch._dynamo
    from torch._functorch import config

    x = random_data((8, 16), torch.float32, "cpu").requires_grad_()
    for setting in ({"activation_memory_budget": 0.5}, {"aggressive_recomputation": True}):
        torch._dynamo.reset()
        with config.patch(setting), pytest.raises(Exception, match="would let torch.compile recompute"):
            torch.compile(lambda t: act.selu_alpha_dropout(t, 0.2, True).sum(), fullgraph=True)(x).backward()


@pytest.mark.parametrize("dtype", DTYPES)
def test_p_zero_one_and_eval(device, dtype):
    x = random_data((33, 17), dtype, device).requires_grad_()
    for p, train in ((0.0, True), (0.3, False)):
        torch.testing.assert_close(act.selu_alpha_dropout(x, p, train), act.selu(x), rtol=0, atol=0)
    # The train-mode op itself at p = 0 keeps every element (a = 1, b = -0.0, so -0.0 stays -0.0): SELU, bit for
    # bit but where the GPU's 16-bit path folds the dropout into SELU's constants, there within its ulp bound.
    signed_zeros = torch.cat([x.detach().flatten(), torch.tensor([0.0, -0.0], dtype=dtype, device=device)])
    y, selu = act._selu_alpha_dropout(signed_zeros, 0.0)[0], act.selu(signed_zeros)
    assert torch.equal(y.signbit(), selu.signbit())
    if device == "cuda" and dtype.itemsize == 2:
        error = ulp_error(y.cpu(), selu_reference(signed_zeros.cpu()), dtype).max().item()
        assert error <= SELU_ALPHA_DROPOUT_ULP_BOUNDS["forward"][0], error
    else:
        torch.testing.assert_close(y, selu, rtol=0, atol=0)
    y = act.selu_alpha_dropout(x, 1.0, True)
    expected = torch.nn.functional.alpha_dropout(torch.selu(x), 1.0, True)  # torch: input * 0
    assert torch.equal(y, expected) and torch.equal(y.signbit(), expected.signbit())
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert torch.equal(grad, torch.zeros_like(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values(device, dtype):
    """As torch composes them, selu(v) * (kept ? a : 0) + b: a NaN stays NaN, an inf is inf where kept and
    inf * 0 = NaN where dropped, -inf saturates to b_drop either way, and 0 becomes b_keep or b_drop."""
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0], dtype=dtype, device=device).repeat(400)
    for p in (0.3, 1.0):
        y = act.selu_alpha_dropout(x, p, True).view(400, 5).cpu()
        a, b_keep, b_drop = alpha_dropout_constants(p) if p < 1 else (0.0, 0.0, -0.0)
        assert y[:, 0].isnan().all()
        inf_kept = y[:, 1] == math.inf
        assert (inf_kept | y[:, 1].isnan()).all() and inf_kept.any() == (p < 1) and (~inf_kept).any()
        torch.testing.assert_close(y[:, 2], torch.full((400,), b_drop, dtype=torch.float64).to(dtype))
        assert y[:, 2].signbit().all()
        kept_zero = torch.tensor(b_keep, dtype=decompositions._compute_dtype(dtype)).to(dtype)  # rounded as acc_t
        for zeros in (y[:, 3], y[:, 4]):
            assert ((zeros == kept_zero) | (zeros == alpha_dropout_dropped_value(p, dtype))).all()


@pytest.mark.parametrize("p", [0.3, 0.9])
def test_huge_bfloat16_inputs(device, p):
    """bfloat16 reaches 3.39e38, where a * scale * x can overflow float. A finite input becomes NaN only where
    torch's own composition makes it NaN (scale * x overflows float, then inf * 0 where dropped); otherwise it is
    b_drop where dropped and a * selu(x) + b_keep where kept, within a rounding, or inf where that or torch's
    intermediate overflows."""
    x = torch.linspace(1e38, 3.3895e38, 4001, dtype=torch.float64).to(torch.bfloat16).to(device)
    y = act.selu_alpha_dropout(x, p, True).cpu().double()
    x = x.cpu()
    a, b_keep, _ = alpha_dropout_constants(p)
    torch_overflows = (x.float() * torch.tensor(SELU_SCALE, dtype=torch.float32)).isinf()
    kept_exact = (a * selu_reference(x) + b_keep).to(torch.bfloat16).double()
    dropped = y == alpha_dropout_dropped_value(p, torch.bfloat16).double()
    kept = ~dropped & ~y.isnan()
    assert not (y.isnan() & ~torch_overflows).any()
    close = (y - kept_exact).abs() <= kept_exact.abs() * torch.finfo(torch.bfloat16).eps
    assert (close | (y.isinf() & (kept_exact.isinf() | torch_overflows)))[kept].all()
    assert dropped[~torch_overflows].any() and kept[~torch_overflows].any()
    assert kept_exact.isinf().any() == (p > 0.5)  # a > 1 takes the largest inputs past bfloat16's range


def test_bad_input(device):
    x = random_data((4, 5), torch.float32, device)
    with pytest.raises(ValueError, match=r"act\.selu_alpha_dropout: expected p in \[0, 1\], but got 1\.5"):
        act.selu_alpha_dropout(x, 1.5, True)
    with pytest.raises(ValueError, match=r"expected p in \[0, 1\], but got -0\.1"):
        act.selu_alpha_dropout(x, -0.1, False)
    with pytest.raises(ValueError, match=r"expected p in \[0, 1\], but got nan"):
        act.selu_alpha_dropout(x, math.nan, True)
    with pytest.raises(ValueError, match=r"but got 1\.0000001$"):  # every digit, as under torch.compile
        act.selu_alpha_dropout(x, 1.0000001, True)
    for bad in (x.long(), x.int(), x.bool()):
        with pytest.raises(TypeError, match=rf"act\.selu_alpha_dropout: expected x of dtype .* but got {bad.dtype}"):
            act.selu_alpha_dropout(bad, 0.1, True)
    _, state = act._selu_alpha_dropout(x, 0.1)
    assert state.dtype == torch.int64 and state.shape == (2,) and state.device == x.device
    with pytest.raises(RuntimeError, match=r"selu_alpha_dropout_backward: expected rng_state as the forward"):
        act.selu_alpha_dropout_backward(x, x, state.float(), 0.1)
    with pytest.raises(RuntimeError, match=r"but got non-contiguous torch\.int64 of shape \[2\]"):
        act.selu_alpha_dropout_backward(x, x, torch.stack([state, state], 1)[:, 0], 0.1)
    with pytest.raises(RuntimeError, match=r"expected grad_output of the shape of x \[4, 5\], but got \[5, 4\]"):
        act.selu_alpha_dropout_backward(x.t(), x, state, 0.1)
    with pytest.raises(TypeError, match="argument 'input' must be Tensor, not list"):
        activations_ext.selu_alpha_dropout([1.0], 0.1, True)
    other = "cpu" if device == "cuda" else ("cuda" if HAS_CUDA else None)
    if other:
        with pytest.raises(RuntimeError, match="generator"):
            act.selu_alpha_dropout(x, 0.1, True, generator=torch.Generator(device=other))


def test_saves_the_input_and_two_integers():
    """What the backward keeps: x and the (seed, offset) pair; eager torch keeps x and a full-size mask."""

    for dtype in (torch.float32, torch.bfloat16):
        x = random_data((256, 512), dtype, "cpu").requires_grad_()
        ours = saved_bytes(lambda x=x: activations_ext.selu_alpha_dropout(x, 0.1, True))
        theirs = saved_bytes(lambda x=x: torch.nn.functional.alpha_dropout(torch.selu(x), 0.1, True))
        assert ours == x.numel() * x.element_size() + 16
        assert theirs >= 2 * x.numel() * x.element_size()


def test_fake_kernels_match_the_real_ones(device):
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = random_data((6, 10), torch.bfloat16, device).t()
    real, state = act._selu_alpha_dropout(x, 0.2)
    with FakeTensorMode() as mode:
        fake, fake_state = act._selu_alpha_dropout(mode.from_tensor(x), 0.2)
        fake_grad = act.selu_alpha_dropout_backward(mode.from_tensor(x), mode.from_tensor(x), fake_state, 0.2)
    grad = act.selu_alpha_dropout_backward(x, x, state, 0.2)
    for f, r in ((fake, real), (fake_state, state), (fake_grad, grad)):
        assert (f.dtype, f.shape, f.stride(), f.device) == (r.dtype, r.shape, r.stride(), r.device)


def compiled_step(fn, x: torch.Tensor) -> tuple:
    step = torch.compile(fn, fullgraph=True)
    leaf = x.clone().requires_grad_()
    y = step(leaf)
    y.backward(torch.ones_like(y))
    return y.detach(), leaf.grad


@pytest.mark.parametrize("mode", ["default", "dynamic", "reduce-overhead"])
def test_compiled_fullgraph(device, mode):
    """No graph break; each call draws a new mask (CUDA-graph replays too), and the gradient that reaches the
    Linear's bias is the one for the mask the forward drew."""
    if mode == "reduce-overhead" and device != "cuda":
        pytest.skip("CUDA graphs need a GPU")
    import torch._dynamo

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    block = torch.nn.Sequential(torch.nn.Linear(64, 64), activations_ext.SELUAlphaDropout(0.2)).to(device).train()
    kwargs = {"dynamic": True} if mode == "dynamic" else {"mode": mode} if mode == "reduce-overhead" else {}
    step = torch.compile(block, fullgraph=True, **kwargs)
    x = random_data((128, 64), torch.float32, device)
    masks = []
    for _ in range(3):  # reduce-overhead records, then replays
        block.zero_grad()
        y = step(x)
        y.backward(torch.ones_like(y))
        kept = alpha_dropout_kept(y.detach(), 0.2)
        masks.append(kept)
        assert 0.7 < kept.double().mean().item() < 0.9
        z = block[0](x).detach()
        expected = selu_alpha_dropout_backward_reference(torch.ones_like(z), z, kept, 0.2).sum(0)
        torch.testing.assert_close(block[0].bias.grad.double(), expected, rtol=1e-4, atol=1e-4)
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])
    assert torch._dynamo.utils.counters["graph_break"] == {}


def test_compiled_gradient_matches_its_mask(device):
    import torch._dynamo

    torch._dynamo.reset()
    x = random_data((64, 96), torch.float32, device)

    def block(t: torch.Tensor) -> torch.Tensor:
        return activations_ext.selu_alpha_dropout(t * 2, 0.25, True) + 1

    y, grad = compiled_step(block, x)
    kept = alpha_dropout_kept(y - 1, 0.25)
    expected = selu_alpha_dropout_backward_reference(torch.ones_like(x), x * 2, kept, 0.25) * 2
    torch.testing.assert_close(grad.double(), expected.to(x.device), rtol=1e-5, atol=1e-6)


@requires_cuda
def test_cuda_graph_replay_draws_new_masks():
    x = random_data((1024, 33), torch.float32, "cuda")
    static_out = torch.empty_like(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        static_out.copy_(act.selu_alpha_dropout(x, 0.3, True))  # warm-up outside the graph
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out.copy_(act.selu_alpha_dropout(x, 0.3, True))
    masks = []
    for _ in range(3):
        graph.replay()
        masks.append(alpha_dropout_kept(static_out, 0.3).clone())
        assert 0.6 < masks[-1].double().mean().item() < 0.8
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])


@requires_cuda
def test_cuda_graph_forward_and_backward_agree():
    """Captured forward and backward: each replay's gradient is zero exactly where that replay dropped."""
    x = random_data((512, 40), torch.float32, "cuda").requires_grad_()
    grad_out = torch.ones_like(x)

    def step() -> tuple[torch.Tensor, torch.Tensor]:
        y = act.selu_alpha_dropout(x, 0.3, True)
        (g,) = torch.autograd.grad(y, x, grad_out)
        return y, g

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y, g = step()
    previous = None
    for _ in range(3):
        graph.replay()
        kept = alpha_dropout_kept(y, 0.3)
        assert torch.equal(g == 0, ~kept)
        assert previous is None or not torch.equal(kept, previous)
        previous = kept.clone()


@requires_cuda
@pytest.mark.whole_gpu  # 13 GiB: beside 11 workers on an H100 it ran out of memory
def test_more_than_2_pow_31_elements():
    """A launch indexes 32 bits, so this goes in parts: each part draws its own words (a part repeating the
    first would show as equal masks), and the backward replays them."""
    n = (1 << 31) + 4099
    x = torch.full((n,), 0.5, dtype=torch.bfloat16, device="cuda")
    y = act.selu_alpha_dropout(x, 0.5, True, generator=generator("cuda", 3))
    kept = alpha_dropout_kept(y, 0.5)
    head, tail = kept[: 1 << 20], kept[1 << 31 : (1 << 31) + (1 << 20)]
    assert not torch.equal(head, tail) and 0.45 < tail.float().mean().item() < 0.55
    del y
    _, state = act._selu_alpha_dropout(x[:1], 0.5, generator=generator("cuda", 3))
    grad = act.selu_alpha_dropout_backward(x, x, state, 0.5)
    assert torch.equal(grad == 0, ~kept)


def test_module():
    module = activations_ext.SELUAlphaDropout(0.1)
    assert repr(module) == "SELUAlphaDropout(p=0.1)"
    x = random_data((4096, 64), torch.float32, "cpu")
    module.eval()
    assert torch.equal(module(x), act.selu(x))
    module.train()
    y = module(x)
    assert 0.88 < alpha_dropout_kept(y, 0.1).double().mean().item() < 0.92
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.2"):
        activations_ext.SELUAlphaDropout(1.2)
    # A drop-in for nn.SELU + nn.AlphaDropout: the same statistics on standard-normal input.
    z = torch.randn(1 << 20, generator=generator("cpu", 0))
    ours = activations_ext.SELUAlphaDropout(0.2).train()(z)
    theirs = torch.nn.Sequential(torch.nn.SELU(), torch.nn.AlphaDropout(0.2)).train()(z)
    for stat in (torch.mean, torch.var):
        assert abs(stat(ours).item() - stat(theirs).item()) < 0.01
