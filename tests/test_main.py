"""The main job's command line: help, unknown flags, device choice, the JSON report."""

import json

import pytest
import torch
from conftest import HAS_CUDA

from activations_ext.__main__ import main
from activations_ext.catalog import ACTIVATIONS, GATED
from activations_ext.numerics import ULP_BOUNDS


def test_help_describes_the_options_and_runs_nothing(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    printed = capsys.readouterr().out
    assert all(option in printed for option in ("--device", "--quick", "--json"))
    assert "check cpu" not in printed


@pytest.mark.parametrize("argv", [["--qiuck"], ["--device", "tpu"], ["extra"]])
def test_unknown_or_bad_arguments_are_an_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.skipif(HAS_CUDA, reason="checks the message shown where no GPU is visible")
def test_asking_for_cuda_without_a_gpu_says_so(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--device", "cuda"])
    assert exit_info.value.code == 2
    assert "no CUDA GPU is visible" in capsys.readouterr().err


def test_quick_cpu_report_as_json(tmp_path, capsys):
    path = tmp_path / "report.json"
    assert main(["--device", "cpu", "--quick", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "check cpu" in printed and "check cuda" not in printed and "result: PASS" in printed
    report = json.loads(path.read_text())
    assert report["result"] == "PASS" and report["checks"] == {"cpu": []}
    assert report["environment"]["torch"] == torch.__version__
    assert set(report["max_ulp_error"]) == {"cpu"}
    for dtype, errors in report["max_ulp_error"]["cpu"].items():
        for op, error in errors.items():
            assert error <= ULP_BOUNDS[getattr(torch, dtype)][op], (dtype, op, error)
    assert {(r["op"], r["dtype"]) for r in report["bandwidth"]} == {
        (op, d) for op in [*ACTIVATIONS, *GATED] for d in ("float32", "bfloat16")
    }
    assert all(r["ours_gbps"] > 0 and r["elements"] == 2**18 for r in report["bandwidth"])
    assert [r["requires_grad"] for r in report["per_call_us"]] == [False, True]
