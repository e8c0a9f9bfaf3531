#!/usr/bin/env bash
# The stable-ABI variant (ACT_STABLE_ABI=1): builds its wheel against the torch of the given Python (with the
# CUDA compiler where there is one), checks that the library binds to no libtorch C++ symbol, then installs it
# into a fresh virtual environment with torch ${ACT_STABLE_TEST_TORCH:-2.11.0}, the release it targets, and runs
# the test suite there on a copy of the checkout without its build. Usage: bash scripts/stable_abi_check.sh [python]
set -euo pipefail
python=${1:-python3}
test_torch=${ACT_STABLE_TEST_TORCH:-2.11.0}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 cp --parents -t "$work")

cd "$work"
ACT_STABLE_ABI=1 MAX_JOBS=2 "$python" -m pip wheel -q --no-build-isolation --no-deps -w wheel . > build.log 2>&1 ||
    { tail -30 build.log; exit 1; }
wheel=$(ls wheel/activations_ext-*.whl)
mkdir lib && (cd lib && "$python" -m zipfile -e "../$wheel" .)
library=$(ls lib/activations_ext/_C*.so)
# Only the stable C shim (aoti_torch_*, torch_*), Python, the C/C++ runtimes and CUDA's: no c10::, at:: or
# torch:: C++ symbol, which would tie the library to the torch it was built with.
nm -D --undefined-only "$library" | c++filt > undefined.txt  # a file, so that a failing nm fails the script
[ -s undefined.txt ] || { echo "nm listed nothing for $library"; exit 1; }
if grep -E "(^|[^A-Za-z0-9_])(c10|at|torch)::" undefined.txt; then echo "the stable-ABI library binds to libtorch's C++ symbols"; exit 1; fi
echo "stable-ABI library: $(grep -cE " (aoti_torch|torch)_" undefined.txt) shim functions, no libtorch C++ symbols"
grep -q "Requires-Dist: torch>=2.11" lib/activations_ext-*.dist-info/METADATA

rm -rf activations_ext/_C* activations_ext/_build_info.py build lib  # the tests must import the installed wheel
"$python" -m venv stable-venv
stable-venv/bin/pip install -q "torch==$test_torch" pytest hypothesis numpy
stable-venv/bin/pip install -q --no-deps "$wheel"
# From outside the checkout, so that neither this check nor the tests' child processes import its stripped copy.
cd stable-venv
bin/python -c "import activations_ext, torch; assert activations_ext.STABLE_ABI; print('torch', torch.__version__, 'loads', activations_ext._C.__file__)"
bin/python -m pytest -q -p no:cacheprovider "$work/tests"
