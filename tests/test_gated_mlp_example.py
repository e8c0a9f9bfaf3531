"""examples/gated_mlp.py runs, its model equals the same blocks in torch ops, and it learns (its own --check)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "gated_mlp.py"


@pytest.mark.cpu_only
@pytest.mark.parametrize("argv", [["--activation", "silu"], ["--activation", "gelu", "--compile"]])
def test_gated_mlp_example_matches_torch_and_learns(argv):
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--check", "--steps", "200", *argv], capture_output=True, text=True, timeout=300
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    (difference,) = re.findall(r"largest relative difference (\S+)", result.stdout)
    assert float(difference) < 1e-10
    (start, end) = (float(v) for v in re.findall(r"loss: (\S+) over the first 10 steps, (\S+)", result.stdout)[0])
    assert end < start / 5, output[-2000:]
