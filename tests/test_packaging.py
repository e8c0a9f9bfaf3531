"""Packaging: the sdist carries every source it needs and installs into a fresh virtual environment."""

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
NEEDED_IN_SDIST = [
    "setup.py",
    "pyproject.toml",
    "README.md",
    "MANIFEST.in",
    "activations_ext/__init__.py",
    "activations_ext/py.typed",
    "kernels/activations.h",
    "kernels/elementwise.cuh",
    "kernels/cuda_kernels.cu",
    "kernels/ops.cpp",
    "tests/conftest.py",
    "tests/test_forward.py",
]

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs the source checkout"
)


def run(*args: object, **kwargs: object) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    # --skip-dependency-check: build-system.requires pins the torch of isolated builds (`pip install .`);
    # this build, like `pip install --no-build-isolation`, uses the torch installed here, whichever it is.
    run(sys.executable, "-m", "build", "--sdist", "--no-isolation", "--skip-dependency-check", "--outdir", out, REPO)
    (path,) = out.glob("activations_ext-*.tar.gz")
    return path


def test_sdist_holds_every_source(sdist):
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    missing = [n for n in NEEDED_IN_SDIST if n not in names]
    assert not missing, f"missing from the sdist: {missing}"
    assert {n for n in names if n.startswith("kernels/")} >= {
        str(p.relative_to(REPO)) for p in (REPO / "kernels").iterdir()
    }


# A CPU build (ACT_FORCE_CPU) on 2 jobs: beside the GPU check's 12 test workers it outlasted their 150 s limit.
@pytest.mark.cpu_only
def test_sdist_installs_into_a_fresh_venv_and_runs(sdist, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    # The new environment sees this one's torch, pip and build tools through a .pth file (no multi-GB
    # reinstall); the sdist installs into the new environment's own site-packages.
    Path(site, "_outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = dict(os.environ, ACT_FORCE_CPU="1", MAX_JOBS="2")  # the CPU build: what matters here is the sdist
    run(python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", sdist, env=env)
    check = (
        "import importlib.metadata, torch, activations_ext, os; "
        "from activations_ext._build_info import TORCH_VERSION; "
        "assert os.path.dirname(activations_ext.__file__).startswith(os.environ['VENV']); "
        "x = torch.randn(1000, dtype=torch.float64); "
        "torch.testing.assert_close(activations_ext.selu(x), torch.selu(x)); "
        "torch.testing.assert_close(activations_ext.relu(x), torch.relu(x)); "
        "print(TORCH_VERSION); print(importlib.metadata.requires('activations_ext'))"
    )
    result = run(python, "-c", check, cwd=tmp_path, env=dict(env, VENV=str(env_dir)))
    built_against, requires = result.stdout.strip().splitlines()
    # Built against this environment's torch, and pinned to that release.
    assert built_against == torch.__version__
    assert f"torch=={torch.__version__.split('+')[0]}" in ast.literal_eval(requires)
