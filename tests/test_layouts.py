"""The one-pass strided path: no staging buffers, and views whose offsets or sizes need 64 bits (CUDA)."""

import collections

import pytest
import torch
from conftest import FORWARD, STRIDED_LAYOUTS, assert_matches, make_layout, random_data, requires_cuda
from torch.profiler import ProfilerActivity, profile

from activations_ext.catalog import ACTIVATIONS, GATED

ALLOCATING_OPS = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::clone", "aten::contiguous"}


def aten_calls(fn: callable) -> collections.Counter:
    """The aten ops that run inside ``fn`` (ours call them through the dispatcher, so the profiler sees them),
    counting an allocation once: not the ops an allocating op calls in turn."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return collections.Counter(
        e.name
        for e in prof.events()
        if e.name.startswith("aten::") and not (e.cpu_parent and e.cpu_parent.name in ALLOCATING_OPS)
    )


def forms(op: str, x: torch.Tensor) -> dict:
    """Each form of ``op`` on ``x``, and how many tensors it must allocate (the result only)."""
    out = torch.empty_like(x)
    result = getattr(torch.ops.act, op)(x)
    grad = torch.randn_like(result)
    return {
        "functional": (lambda: getattr(torch.ops.act, op)(x), 1),
        "inplace": (lambda: getattr(torch.ops.act, op + "_")(x), 0),
        "out": (lambda: getattr(torch.ops.act, op)(x, out=out), 0),
        "backward": (lambda: getattr(torch.ops.act, op + "_backward")(grad, result), 1),
    }


@pytest.mark.parametrize("op", list(ACTIVATIONS))
@pytest.mark.parametrize("layout", STRIDED_LAYOUTS)
def test_strided_calls_allocate_only_their_result(device, op, layout):
    x = make_layout(layout, torch.float32, device)
    assert not x.is_contiguous()
    for form, (call, allocations) in forms(op, x).items():
        calls = aten_calls(call)
        assert calls["aten::copy_"] == 0, f"{form}: {dict(calls)}"
        assert sum(calls[name] for name in ALLOCATING_OPS) <= allocations, f"{form}: {dict(calls)}"
        if device == "cuda":
            torch.cuda.synchronize()
            before = torch.cuda.memory_stats()["allocation.all.allocated"]
            call()
            assert torch.cuda.memory_stats()["allocation.all.allocated"] - before == allocations, form


def many_dimensions(dtype: torch.dtype, device: str) -> torch.Tensor:
    """26 dimensions of size 2, laid out in reverse: more than one CUDA launch describes (25)."""
    return random_data((2,) * 26, dtype, device).permute(*range(25, -1, -1))


def test_dense_in_any_order_is_one_dimension(device):
    # 26 dimensions that merge into one: a dense tensor in any order is one run of memory.
    x = many_dimensions(torch.float32, device)
    expected = torch.relu(x)
    functional_equal = torch.equal(torch.ops.act.relu(x), expected)
    torch.ops.act.relu_(x)
    in_place_equal = torch.equal(x, expected)
    assert functional_equal and in_place_equal  # (not the tensors: pytest would print all 2^26 elements)


@pytest.mark.parametrize("name", FORWARD)
def test_more_dimensions_than_one_launch_takes_unmerged(device, name):
    """A contiguous out= target for a reversed input: 26 dimensions that no two merge, read and written where they
    lie (CUDA: in launches of at most 25), with no copy and no allocation."""
    forward, _, reference = FORWARD[name]
    x = many_dimensions(torch.bfloat16, device)
    out = torch.full(x.shape, float("nan"), dtype=x.dtype, device=device)
    calls = aten_calls(lambda: forward(x, out=out))
    assert calls["aten::copy_"] == 0 and sum(calls[op] for op in ALLOCATING_OPS) == 0, dict(calls)
    # Compared on the CPU, whose elementwise loops take any number of dimensions.
    assert_matches(out.cpu(), reference(x.cpu().double()).contiguous(), torch.bfloat16)


@requires_cuda
def test_strided_view_with_offsets_past_2_to_the_31():
    # Storage of 2^31 + 2^21 float16 elements (4 GiB); the view reads every other one of each row, so its
    # last elements sit past 2^31 elements from the start.
    storage = torch.empty((2**16 + 64, 2**15), dtype=torch.float16, device="cuda")
    storage.normal_(generator=torch.Generator("cuda").manual_seed(0))
    x = storage[:, 1::2]
    assert x.storage_offset() + (x.shape[0] - 1) * x.stride(0) + (x.shape[1] - 1) * x.stride(1) > 2**31
    assert torch.equal(torch.ops.act.relu(x), torch.relu(x))
    tail = x[-3:]  # checked against the float64 reference where it is cheap
    torch.testing.assert_close(torch.ops.act.selu(x)[-3:].double(), torch.selu(tail.double()), rtol=1e-3, atol=0)
    del storage, x


@requires_cuda
@pytest.mark.parametrize("layout", ["dense", "rows"])
def test_views_of_more_than_2_to_the_31_elements_go_in_parts(layout):
    # More elements than one launch indexes in 32 bits: the launcher splits along the outermost dimension.
    if layout == "dense":
        x = torch.empty(2**31 + 2**10 + 5, dtype=torch.float16, device="cuda")[3:]
    else:
        x = torch.empty((2**16 + 3, 2**15 + 8), dtype=torch.float16, device="cuda")[:, 8:]
    assert x.numel() > 2**31
    x.normal_(generator=torch.Generator("cuda").manual_seed(1))
    y = torch.ops.act.relu(x)
    assert torch.equal(y, torch.relu(x))
    del y
    expected = torch.selu(x)
    torch.ops.act.selu_(x)
    torch.testing.assert_close(x, expected, rtol=1e-3, atol=1e-6)


@pytest.mark.cpu_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cpu_rows_past_the_prefetch_size_give_the_rows_bits(dtype):
    """A CPU row of more than 16 MiB of operands takes the loop that prefetches (cpu_kernels.cpp, prefetched_row):
    its results equal those of the same elements in shorter rows, for one, two and three inputs and two outputs,
    wherever the steps of 128 elements and the row's tail fall. One thread: the whole row is one chunk."""
    n = (32 << 20) // (2 * dtype.itemsize) + 77  # one input and one output past 16 MiB
    part = 1 << 16
    generator = torch.Generator().manual_seed(3)
    grad, gate, up = (4 * torch.randn(n, dtype=dtype, generator=generator) for _ in range(3))
    cases = {
        "selu": lambda *t: (torch.ops.act.selu(t[1]),),
        "silu_backward": lambda *t: (torch.ops.act.silu_backward(t[0], t[1]),),
        "silu_mul backward": GATED["silu_and_mul"].ops.pair_backward,
    }
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, op in cases.items():
            whole = op(grad, gate, up)
            parts = [op(grad[i : i + part], gate[i : i + part], up[i : i + part]) for i in range(0, n, part)]
            for k, result in enumerate(whole):
                assert torch.equal(result, torch.cat([p[k] for p in parts])), (name, k)
    finally:
        torch.set_num_threads(threads)
