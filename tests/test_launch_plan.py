"""The CUDA launch plan (kernels/launch_plan.h), as pure host code: every rule on the CPU-only build.

Views are given as the launcher receives them: sizes and strides innermost first, strides in elements, one
data address per operand (the output first). Devices: an H100's and an H200's limits (132 SMs of 2048 threads;
12.8 and 18.4 DRAM bytes per SM cycle, the random op's memory- and issue-bound sides).
"""

import random

import pytest

from activations_ext import _C

H100 = (132, 132 * 2048, 12.8)
H200 = (132, 132 * 2048, 18.4)
RESIDENT = 132 * 2048
ALIGNED = 1 << 20  # a 16-byte-aligned address; operands sit 1 GiB apart
FULL_OCCUPANCY = (0, 16, 16, 0, 16)  # blocks of 128 threads per SM at 0..4 packs a thread: all 2048 threads
MAX_ELEMENTS = 2**31 - 1


def plans(
    sizes,
    strides=None,
    offsets=None,
    item_size=4,
    random_op=False,
    gpu=H100,
    resident_blocks=FULL_OCCUPANCY,
    operands=2,
):
    """The launches of a view; ``strides`` default to a dense view's, ``offsets`` (bytes from an aligned
    address, per operand) to 0."""
    if strides is None:
        dense, step = [], 1
        for size in sizes:
            dense.append(step)
            step *= size
        strides = [dense] * operands
    offsets = offsets or [0] * len(strides)
    addresses = [ALIGNED + (k << 30) + offset for k, offset in enumerate(offsets)]
    return _C.launch_plans(sizes, strides, addresses, item_size, random_op, *gpu, resident_blocks)


def only(launches):
    assert len(launches) == 1, launches
    return launches[0]


def test_launch_plan_dense():
    plan = only(plans([2**20]))
    assert (plan["dims"], plan["vec"], plan["unroll"]) == (0, 4, 1)
    assert (plan["head"], plan["row_packs"], plan["n_packs"], plan["n_singles"]) == (0, 2**18, 2**18, 0)
    assert plan["blocks"] == 2**18 // 128
    # 16 bytes a pack in every dtype: 8 16-bit elements, 2 doubles at 2 packs a thread (4 elements)
    assert (only(plans([2**20], item_size=2))["vec"], only(plans([2**20], item_size=2))["n_packs"]) == (8, 2**17)
    double = only(plans([2**20], item_size=8))
    assert (double["vec"], double["unroll"], double["blocks"]) == (2, 2, 2**19 // 256)


def test_launch_plan_dense_head_and_tail():
    # An output 4 bytes past a 16-byte boundary (a slice x[1:]): 3 single elements, then packs, then the rest.
    plan = only(plans([1_000_003], offsets=[4, 4]))
    assert (plan["vec"], plan["head"], plan["row_packs"], plan["tail"], plan["row_singles"]) == (
        4,
        3,
        250_000,
        1_000_003,
        3,
    )
    assert (plan["n_packs"], plan["n_singles"], plan["blocks"]) == (250_000, 3, 1954)
    plan = only(plans([1001]))
    assert (plan["head"], plan["row_packs"], plan["tail"], plan["row_singles"]) == (0, 250, 1000, 1)


@pytest.mark.parametrize(
    "why, sizes, strides, offsets",
    [
        ("the operands' 16-byte phases differ", [4096], [[1], [1]], [0, 4]),
        ("an operand's innermost stride is not 1", [64, 64], [[1, 64], [64, 1]], [0, 0]),
        ("a row stride is not a multiple of 16 bytes", [1001, 64], [[1, 1001], [1, 2002]], [0, 0]),
        ("rows shorter than two packs", [7, 4096], [[1, 7], [1, 7]], [0, 0]),
    ],
)
def test_launch_plan_single_elements(why, sizes, strides, offsets):
    plan = only(plans(sizes, strides, offsets))
    numel = sizes[0] * (sizes[1] if len(sizes) > 1 else 1)
    assert (plan["vec"], plan["unroll"], plan["n_packs"], plan["n_singles"]) == (1, 4, numel, 0), why
    assert plan["blocks"] == -(-numel // 512)


def test_launch_plan_rows():
    # The second half of x.chunk(2, -1) for x of shape (64, 2000): rows of 1000 with a row stride of 2000.
    plan = only(plans([1000, 64], [[1, 1000], [1, 2000]], [0, 4000]))
    assert (plan["dims"], plan["vec"], plan["row_packs"], plan["n_packs"], plan["n_singles"]) == (1, 4, 250, 16_000, 0)
    assert plan["unroll"] == 1  # no one-wave rule for rows
    # every dimension count takes the smallest row description that holds it
    assert only(plans([8, 8, 8]))["dims"] == 24
    assert only(plans([2] * 25))["dims"] == 24


def test_launch_plan_more_than_2_31_elements():
    # One dimension: parts of a multiple of 16 elements, each at its 16-byte phase.
    launches = plans([2**32])
    step = MAX_ELEMENTS - MAX_ELEMENTS % 16
    assert [p["index_base"] for p in launches] == [0, step, 2 * step]
    assert [p["sizes"] for p in launches] == [(step,), (step,), (2**32 - 2 * step,)]
    assert all(p["head"] == 0 and p["vec"] == 4 for p in launches)
    # Rows: as many whole rows as a launch takes.
    launches = plans([2**20, 2**12])
    assert [p["sizes"] for p in launches] == [(2**20, 2047), (2**20, 2047), (2**20, 2)]
    assert [p["index_base"] for p in launches] == [0, 2047 * 2**20, 4094 * 2**20]
    # Rows longer than a launch takes: one row at a time, each in parts.
    launches = plans([2**31, 3], operands=1)
    assert len(launches) == 6 and all(p["dims"] == 0 for p in launches)
    assert [p["index_base"] for p in launches[:3]] == [0, step, 2**31]
    assert sum(p["n_packs"] * p["vec"] + p["n_singles"] for p in launches) == 3 * 2**31


def test_launch_plan_many_dimensions():
    # 26 dimensions of size 2 that do not merge: 2 parts of 25, one per index of the outermost (the smallest
    # dimension other than the innermost, ties to the outer).
    strides = [2 ** (d + 1) for d in range(26)]
    launches = plans([2] * 26, [strides, strides])
    assert len(launches) == 2
    assert [p["index_base"] for p in launches] == [0, 2**26]
    assert all(p["dims"] == 24 and len(p["sizes"]) == 25 and p["vec"] == 1 for p in launches)
    # The smallest dimension goes first: with a size-3 outermost dimension, 27 dimensions lose the two outermost
    # of size 2, in 4 parts.
    sizes = [2] * 26 + [3]
    dense = [2**d for d in range(27)]
    launches = plans(sizes, [dense, dense])
    assert [p["index_base"] for p in launches] == [0, 2**24, 2**25, 2**25 + 2**24]
    assert all(p["sizes"] == (2,) * 24 + (3,) for p in launches)


def test_launch_plan_one_wave():
    # float32, dense: one pack a thread up to one full wave of resident threads (270,336), then the fewest of 2
    # or 4 packs a thread at which one wave takes the view, where registers admit every thread.
    def unroll(packs, item_size=4, resident_blocks=FULL_OCCUPANCY):
        return only(plans([packs * 16 // item_size], item_size=item_size, resident_blocks=resident_blocks))["unroll"]

    assert unroll(RESIDENT) == 1
    assert unroll(RESIDENT + 1) == 2
    assert unroll(2 * RESIDENT) == 2
    assert unroll(2 * RESIDENT + 1) == 4
    assert unroll(2**20) == 4 and only(plans([2**22]))["blocks"] == 2048
    assert unroll(4 * RESIDENT + 1) == 1  # past one wave at 4 packs: the usual shape
    assert unroll(2**20, resident_blocks=(0, 16, 16, 0, 15)) == 1  # 4 packs a thread leave threads out
    assert unroll(RESIDENT + 1, resident_blocks=(0, 16, 15, 0, 16)) == 1  # and 2 packs: no larger tried
    # float64 starts at 2 packs a thread (4 elements), so only 4 is left to try
    assert unroll(2 * RESIDENT, item_size=8) == 2
    assert unroll(2 * RESIDENT + 1, item_size=8) == 4
    # only for dense views of packs
    assert only(plans([2**12, 2**10], [[1, 2**12], [1, 2**13]]))["unroll"] == 1


def test_launch_plan_random_op():
    # bfloat16 SELU + AlphaDropout: 32-byte packs (16 elements, two Philox blocks). Bound by memory on an H100 (2
    # packs a thread from 2^21 packs, grid uncapped), by issue on an H200 (one pack an iteration over 4 waves of
    # resident blocks, or 8 Philox blocks a thread where that grid is larger), never the one-wave rule.
    def plan(numel, gpu, offsets=None):
        return only(plans([numel], offsets=offsets, item_size=2, random_op=True, gpu=gpu))

    assert plan(2**20, H100)["vec"] == 16
    assert (plan(2**25 - 8, H100)["unroll"], plan(2**25 - 8, H100)["blocks"]) == (1, -(-(2**21 - 1) // 128))
    assert (plan(2**25, H100)["unroll"], plan(2**25, H100)["blocks"]) == (2, 2**21 // 256)
    assert (plan(2**20, H100)["unroll"], plan(2**20, H100)["blocks"]) == (1, 512)  # one wave's rule is not for it
    cap = 4 * RESIDENT // 128
    assert (plan(2**26, H200)["unroll"], plan(2**26, H200)["blocks"]) == (1, cap)  # 2^22 packs: 3.9 a thread
    assert (plan(2**28, H200)["unroll"], plan(2**28, H200)["blocks"]) == (1, 2**24 // (4 * 128))  # 4 packs a thread
    assert plan(2**16, H200)["blocks"] == 32
    # A pack starts a Philox block: the output's first pack must start at a word number divisible by 8.
    assert plan(4096, H100, offsets=[2, 2])["vec"] == 1
    assert plan(4096, H100, offsets=[16, 16])["vec"] == 16  # 16-byte aligned, word 0 first
    launches = plans([2**31 + 64], item_size=2, random_op=True)  # part 2 starts at a multiple of 16 elements
    assert all(p["vec"] == 16 for p in launches)
    # float32: 8 elements, two blocks of 4 words; a plain op's pack is 4.
    assert only(plans([2**20], random_op=True))["vec"] == 8
    assert only(plans([64, 64], [[1, 68], [1, 68]], random_op=True))["vec"] == 8  # rows start at blocks
    # On an H200, 8 Philox blocks a thread where 4 waves would give more: 4 packs of float32, 8 of float64.
    assert only(plans([2**28], item_size=4, random_op=True, gpu=H200))["blocks"] == 2**25 // (4 * 128)
    assert only(plans([2**28], item_size=8, random_op=True, gpu=H200))["blocks"] == 2**26 // (8 * 128)
    # float64: 4 doubles, one block of 4 words (a plain op's pack is 2), starting at a word number divisible by 4 in
    # every row.
    double = only(plans([2**20], item_size=8, random_op=True))
    assert (double["vec"], double["unroll"], double["n_packs"]) == (4, 1, 2**18)
    assert only(plans([2**20], item_size=8))["vec"] == 2
    assert only(plans([4096], offsets=[16, 16], item_size=8, random_op=True))["vec"] == 4  # word 0 starts a pack
    assert only(plans([4096], offsets=[8, 8], item_size=8, random_op=True))["vec"] == 1  # word 1 would
    assert only(plans([4096], offsets=[8, 8], item_size=8))["vec"] == 2
    assert only(plans([64, 64], [[1, 68], [1, 68]], item_size=8, random_op=True))["vec"] == 4
    assert only(plans([64, 64], [[1, 66], [1, 66]], item_size=8, random_op=True))["vec"] == 1
    assert only(plans([64, 64], [[1, 66], [1, 66]], item_size=8))["vec"] == 2
    assert only(plans([2**25], item_size=8, random_op=True))["unroll"] == 2  # H100: from 2^21 packs


def test_launch_plan_one_element_and_shapes_compiled():
    plan = only(plans([1]))
    assert (plan["vec"], plan["n_packs"], plan["blocks"]) == (1, 1, 1)
    # Every plan names a compiled kernel and covers its part exactly, over random views.
    rng = random.Random(0)
    for _ in range(300):
        ndim = rng.randint(1, 4)
        sizes = [rng.choice([1, 2, 3, 7, 8, 9, 64, 1000, 4099]) for _ in range(ndim)]
        strides = [[rng.choice([1, 2]) * s for s in ([1] + [rng.choice([8, 16, 4098, 4100]) for _ in range(ndim - 1)])]]
        strides.append(strides[0] if rng.random() < 0.5 else [1] * ndim)
        item_size = rng.choice([2, 4, 8])
        offsets = [rng.choice([0, item_size, 8]) for _ in range(2)]
        random_op = rng.random() < 0.3
        for launch in plans(sizes, strides, offsets, item_size, random_op, rng.choice([H100, H200])):
            numel = 1
            for size in launch["sizes"]:
                numel *= size
            assert launch["compiled"], launch
            if random_op and launch["vec"] > 1:  # every pack starts a Philox block, in every row of the output
                block = 8 if item_size == 2 else 4
                assert (launch["index_base"] + launch["head"]) % block == 0, launch
                assert all(s % block == 0 for s in strides[0][1:]), (strides, launch)
            assert launch["n_packs"] * launch["vec"] + launch["n_singles"] == numel, launch
            assert launch["head"] + launch["row_packs"] * launch["vec"] == launch["tail"] <= launch["cols"], launch
            assert 1 <= launch["blocks"] <= -(-max(launch["n_packs"], launch["n_singles"], 1) // 128)


def test_launch_plan_rejects_bad_arguments():
    with pytest.raises(ValueError, match="one stride per dimension"):
        _C.launch_plans([4, 4], [[1], [1]], [0, 0], 4, False, *H100, FULL_OCCUPANCY)
    with pytest.raises(ValueError, match="out of range"):
        _C.launch_plans([], [], [], 4, False, *H100, FULL_OCCUPANCY)
