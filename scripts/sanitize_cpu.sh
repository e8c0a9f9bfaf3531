#!/usr/bin/env bash
# Builds the CPU kernels with AddressSanitizer and UndefinedBehaviorSanitizer in a scratch copy of the
# repository and runs the CPU tests against that build. Usage: bash scripts/sanitize_cpu.sh [python]
set -euo pipefail
python=${1:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 cp --parents -t "$work")
cd "$work"
ACT_FORCE_CPU=1 MAX_JOBS=2 ACT_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    ACT_LDFLAGS="-fsanitize=address,undefined" "$python" setup.py -q build_ext --inplace > build.log 2>&1 || { tail -30 build.log; exit 1; }
# The ASan runtime must come first in the process; torch itself is not instrumented, and its
# allocations at exit and its own threads' races (asan_torch.supp) are not ours to report.
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:suppressions=$work/scripts/asan_torch.supp UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONPATH="$work"
"$python" -c "import activations_ext as a; assert a.__file__.startswith('$work'), a.__file__; print('sanitized build:', a._C.__file__)"
# grep -c reads all of nm's output: grep -q would stop early and fail the pipeline (pipefail).
[ "$(nm -D activations_ext/_C*.so | grep -c __asan_report)" -gt 0 ] || { echo "the build is not instrumented"; exit 1; }
"$python" -m pytest -q -p no:cacheprovider tests -k "cpu and not compile and not opcheck and not soak" -x
