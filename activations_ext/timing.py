"""Timing helpers shared by the main job and the benchmark: medians, CUDA events, cold L2."""

import itertools
import math
import statistics
import time
from collections.abc import Callable

import torch

# Larger than any current GPU's L2 (H100: 50 MB), so writing it evicts what the last run left there.
L2_FLUSH_BYTES = 256 * 1024 * 1024
# The shortest CPU sample: calls are repeated within a sample to last this long.
CPU_SAMPLE_SECONDS = 2e-4


def median_seconds(fn: Callable[[], object], device: torch.device, reps: int = 20, warmup: int = 3) -> float:
    """Median run time of ``fn`` in seconds.

    On CUDA each run is timed with CUDA events, with the L2 cache flushed before it; on the CPU
    with ``time.perf_counter``.
    """
    for _ in range(warmup):
        fn()
    times = []
    if device.type == "cuda":
        flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device)
        for _ in range(reps):
            flush.fill_(1)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(reps):
            begin = time.perf_counter()
            fn()
            times.append(time.perf_counter() - begin)
    return statistics.median(times)


def per_call_seconds(
    fns: dict[str, Callable[[], object]], device: torch.device, calls: int = 500, rounds: int = 31
) -> dict[str, float]:
    """Host time per call of each function: the median over rounds of ``calls`` back-to-back calls.

    Rounds of the functions alternate, so drift in clocks or machine load reaches them alike.
    """

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    samples: dict[str, list[float]] = {name: [] for name in fns}
    for round_index in range(rounds + 1):
        for name, fn in fns.items():
            sync()
            begin = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            if round_index:  # the first round warms up
                samples[name].append((time.perf_counter() - begin) / calls)
    return {name: statistics.median(times) for name, times in samples.items()}


def cold_l2_seconds(fn: Callable[[], object], flush: Callable[[], object]) -> float:
    """Device time of one CUDA call of ``fn`` in seconds, by CUDA events, after ``flush`` (which empties the L2) and
    behind a sleep kernel of about a millisecond, during which the host queues the whole call (dispatch, guards,
    autograd): what is timed is then the device's work, not the host's."""
    flush()
    torch.cuda._sleep(2_000_000)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def interleaved_median_seconds(
    fns: dict[str, Callable[[], object]], device: torch.device, rounds: int = 25, warmup: int = 2
) -> dict[str, float]:
    """Median run time of each function, the functions run in turns so drift in clocks or load reaches them alike.

    On CUDA each run starts on a cold L2 (see ``median_seconds``), timed by ``cold_l2_seconds``. On the CPU: wall
    clock, each sample repeating the call enough times to last ``CPU_SAMPLE_SECONDS`` (a single microsecond call
    would time the clock and the scheduler, not the op). The rounds take the functions in each order in turn, so
    each follows each other equally often: on the CPU an op that followed the copy ran up to 1.4x slower at 2^20
    float64 elements than one that followed the other op (its output's memory no longer in cache), whichever op it
    was.
    """
    calls = {name: 1 for name in fns}
    for _ in range(warmup):
        for name, fn in fns.items():
            begin = time.perf_counter()
            fn()
            calls[name] = max(1, math.ceil(CPU_SAMPLE_SECONDS / max(time.perf_counter() - begin, 1e-9)))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device) if device.type == "cuda" else None
    orders = list(itertools.permutations(fns))
    for round_index in range(rounds):
        for name in orders[round_index % len(orders)]:
            fn = fns[name]
            if flush is None:
                begin = time.perf_counter()
                for _ in range(calls[name]):
                    fn()
                samples[name].append((time.perf_counter() - begin) / calls[name])
                continue
            samples[name].append(cold_l2_seconds(fn, lambda: flush.fill_(1)))
    return {name: statistics.median(times) for name, times in samples.items()}
