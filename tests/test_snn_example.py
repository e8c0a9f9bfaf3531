"""examples/snn.py runs, and its deep network stays normalized and learns (the script's own --check)."""

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "snn.py"
LAYERS = 16


def test_snn_example_stays_normalized_and_learns():
    # Smaller than the example's defaults, to run in seconds on two CPU cores; --check's bounds still apply.
    argv = ["--check", "--layers", str(LAYERS), "--width", "128", "--steps", "300"]
    result = subprocess.run([sys.executable, str(EXAMPLE), *argv], capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "mean before" in result.stdout and "var after" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert [int(row[0]) for row in rows] == list(range(1, LAYERS + 1)), output[-4000:]
    assert all(len(row) == 5 for row in rows)
