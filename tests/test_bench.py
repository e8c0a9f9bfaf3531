"""The benchmark report, run small on the CPU: its rows, byte counts, layouts, JSON round trip and plot."""

import json
from collections import Counter

import bench
import pytest
import torch

from activations_ext import catalog
from activations_ext.timing import interleaved_median_seconds


def test_operands_are_random_in_the_asked_layout():
    case = bench.make_case("selu.out")
    x, out = bench.operands(case, "selu.out", (64, 33), torch.float32, torch.device("cpu"), "strided")
    assert x.shape == (64, 33) and x.stride() == (66, 2) and not x.is_contiguous()
    assert (x < 0).any() and (x > 0).any(), "operands must cover both branches"
    assert out.is_contiguous() and out.isnan().all(), "the out= tensor is poisoned"
    cpu = torch.device("cpu")
    g, r = bench.operands(bench.make_case("selu_backward"), "selu_backward", (7,), torch.bfloat16, cpu, "contiguous")
    assert g.is_contiguous() and not torch.equal(g, r)
    # The first half of a chunk(2, -1): rows of 4096 contiguous elements, 8192 apart.
    (x,) = bench.operands(bench.make_case("relu"), "relu", (2**14,), torch.float32, cpu, "chunk")
    assert x.shape == (4, 4096) and x.stride() == (8192, 1)


@pytest.mark.parametrize("op", ["selu.out", "relu.out"])
def test_out_forms_are_timed_against_torch_writing_the_same_tensor(op):
    case = bench.make_case(op)
    x, out = bench.operands(case, op, (4099,), torch.float32, torch.device("cpu"), "contiguous")
    returned = case.torch(x, out)
    assert returned.data_ptr() == out.data_ptr(), "torch's form must write the out= tensor, as ours does"
    torch.testing.assert_close(out, catalog.ACTIVATIONS[op.split(".")[0]].torch_forward(x), rtol=0, atol=0)
    ours = torch.full_like(out, float("nan"))
    case.ours(x, ours)
    torch.testing.assert_close(ours, out, rtol=1e-6, atol=1e-7)


def test_each_repeat_runs_on_operands_at_new_addresses(monkeypatch):
    made = []

    def recording_operands(*args, **kwargs):
        made.append(bench_operands(*args, **kwargs))
        return made[-1]

    bench_operands = bench.operands
    monkeypatch.setattr(bench, "operands", recording_operands)
    row = bench.measure("relu.out", "2^10", torch.float32, torch.device("cpu"), False, repeats=3)
    assert len(made) == 3 and row.spread is not None
    addresses = {t.data_ptr() for tensors in made for t in tensors}
    assert len(addresses) == 6, "the operands of every repeat stay alive, each at an address of its own"


def test_interleaved_rounds_put_each_function_after_each_other_alike():
    calls: list[str] = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    interleaved_median_seconds(fns, torch.device("cpu"), rounds=6, warmup=0)
    rounds = [calls[i : i + 3] for i in range(0, len(calls), 3)]
    assert len(rounds) == 6 and all(sorted(r) == ["a", "b", "c"] for r in rounds)
    followed = Counter((r[i], r[i + 1]) for r in rounds for i in range(2))
    assert followed == {(x, y): 2 for x in "abc" for y in "abc" if x != y}, "each function follows each other twice"


def test_summary_takes_the_geometric_mean_and_the_lowest_row():
    def row(size: str, ours_us: float) -> bench.Row:
        return bench.Row("cuda", "relu", "float32", size, 1, 8, ours_us, 10.0, None, 1.0, 8)

    lines = bench.format_summary([row("2^16", 5.0), row("2^18", 20.0), row("2^20", 10.0)]).splitlines()
    assert len(lines) == 3
    assert "1.000x" in lines[2] and "0.50x (2^18)" in lines[2]


def test_report_rows_json_and_table(tmp_path, capsys):
    path = tmp_path / "bench.json"
    argv = ["--ops", "selu", "selu.out", "relu_backward", "--dtypes", "float32", "bfloat16", "--sizes", "2^10", "3x5"]
    argv += ["--layouts", *bench.LAYOUTS, "--device", "cpu", "--no-compile", "--quiet", "--json", str(path)]
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    saved = json.loads(path.read_text())
    rows = [bench.Row(**r) for r in saved["rows"]]
    assert len(rows) == 3 * 2 * 2 * 3
    assert {(r.op, r.dtype, r.size, r.layout) for r in rows} == {
        (op, d, s, layout)
        for op in ("selu", "selu.out", "relu_backward")
        for d in ("float32", "bfloat16")
        for s in ("2^10", "3x5")
        for layout in ("contiguous", "strided", "chunk")
    }
    for r in rows:
        itemsize = 4 if r.dtype == "float32" else 2
        assert r.elements == (1024 if r.size == "2^10" else 15)
        assert r.bytes == (3 if r.op == "relu_backward" else 2) * r.elements * itemsize
        assert r.copy_bytes == 2 * r.elements * itemsize
        assert r.ours_us > 0 and r.torch_us > 0 and r.copy_us > 0 and r.compile_us is None
        assert r.spread[0] == r.spread[1] == pytest.approx(r.torch_us / r.ours_us)  # one run: its own ratio
    groups = 3 * 2 * 3
    assert len(printed.splitlines()) == 3 + len(rows) + 2 + groups

    assert bench.main(["--from-json", str(path)]) == 0
    assert capsys.readouterr().out == printed, "a saved report prints the same table"


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib draws the plot")
    rows = bench.run(["relu"], ["float32"], ["2^8", "2^10"], torch.device("cpu"), False, False, bench.LAYOUTS)
    png = tmp_path / "bench.png"
    bench.plot(rows, str(png), "test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.cpu_only
def test_fusion_report_counts_kernels_and_times_every_variant():
    import fusion

    rows = fusion.chain_rows("selu", torch.float32, "2^10", torch.device("cpu"))
    assert [(r.case, r.mode) for r in rows] == [("chain selu", "fwd"), ("chain selu", "fwd+bwd")]
    # Fused, the chain is one kernel each way. Opaque, the act op is a call between kernels: x * 2 and + 1
    # forward, and backward only the * 2 after selu_backward.
    assert (rows[0].kernels_fused, rows[1].kernels_fused) == ("1", "1/1")
    assert (rows[0].kernels_opaque, rows[1].kernels_opaque) == ("2", "2/1")
    for r in rows:
        assert r.fused_us > 0 and r.opaque_us > 0 and r.torch_us > 0
    assert rows[0].copy_us > 0 and rows[1].copy_us is None
    table = fusion.format_table(rows).splitlines()
    assert len(table) == 2 + len(rows) and "1/1|2/1" in table[-1]


def test_figures_past_the_copy_roofline_are_flagged_not_reported():
    # 8 bytes in 1 us against a copy of 8 bytes in 2 us: 200% of the roofline, impossible for a contiguous op.
    fast = bench.Row("cpu", "relu", "float32", "2^8", 1, 8, 1.0, 2.0, None, 2.0, 8)
    fine = bench.Row("cpu", "relu", "float32", "2^9", 1, 8, 2.0, 2.0, None, 2.0, 8)
    table = bench.format_table([fast, fine]).splitlines()
    assert "200.0%?" in table[2] and "100.0% " in table[3]
    assert table[-1].startswith("? above 110% of the copy: suspect")
    assert "suspect" not in bench.format_table([fine])


@pytest.mark.parametrize("name", list(catalog.ACTIVATIONS))
def test_forward_and_backward_rows_time_torchs_gradient_through_autograd(name):
    op = f"{name}+bwd"
    assert op in bench.OPS
    case = bench.make_case(op)
    x, g = bench.operands(case, op, (4099,), torch.float32, torch.device("cpu"), "contiguous")
    assert x.requires_grad and not g.requires_grad
    (ours,) = case.ours(x, g)
    (theirs,) = case.torch(x, g)
    (expected,) = torch.autograd.grad(catalog.ACTIVATIONS[name].torch_forward(x), x, g)
    torch.testing.assert_close(theirs, expected, rtol=0, atol=0)
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-6)
    row = bench.measure(op, "2^10", torch.float32, torch.device("cpu"), False, repeats=1)
    assert row.bytes == 5 * 4 * 2**10, "five passes: the forward's read and write, the backward's two reads and a write"


@pytest.mark.cpu_only
def test_gated_report_has_every_op_layout_mode_and_the_mlp(tmp_path, capsys):
    """benchmarks/gated.py on the CPU, small: a row per op, layout, mode and dtype with every variant timed and the
    bytes of each mode's copy; the MLP row; JSON of the same rows."""
    import gated

    path = tmp_path / "gated.json"
    assert gated.main(["--device", "cpu", "--shapes", "8x64", "--dtypes", "float32", "--mlp", "--json", str(path)]) == 0
    saved = json.loads(path.read_text())
    assert {(r["op"], r["layout"], r["mode"]) for r in saved["rows"]} == {
        (op, layout, mode) for op in catalog.GATED for layout in ("merged", "pair") for mode in ("fwd", "fwd+bwd")
    }
    for r in saved["rows"]:
        assert min(r["ours_us"], r["eager_us"], r["compile_us"], r["copy_us"], r["ours_wall_us"]) > 0
    (mlp,) = saved["mlp"]
    assert mlp["ours_us"] > 0 and mlp["torch_us"] > 0
    printed = capsys.readouterr().out
    assert "silu_and_mul" in printed and "gated MLP fwd+bwd" in printed


def test_gated_forward_and_backward_rows_time_the_gradient():
    """A fwd+bwd variant returns its inputs' gradients through autograd: the op's backward, not the forward alone,
    for the merged layout and for the pair."""
    import gated

    ops = catalog.GATED["silu_and_mul"].ops
    x = torch.randn(4, 16, requires_grad=True)
    grad = torch.randn(4, 8)
    (ours,) = gated.forward_and_backward(ops.merged, grad)(x)
    torch.testing.assert_close(ours, ops.merged_backward(grad, x.detach()))
    gate, up = torch.randn(4, 8, requires_grad=True), torch.randn(4, 8, requires_grad=True)  # contiguous, as the rows'
    ours = gated.forward_and_backward(ops.pair, grad)(gate, up)
    for got, expected in zip(ours, ops.pair_backward(grad, gate.detach(), up.detach()), strict=True):
        torch.testing.assert_close(got, expected)
