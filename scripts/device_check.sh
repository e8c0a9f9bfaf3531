#!/usr/bin/env bash
# Build, test and benchmark on a GPU machine in one call; full logs go to $OUT (default: device-logs/).
# Usage: bash scripts/device_check.sh [extra pytest args]
set -uo pipefail
OUT=${OUT:-device-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 ACT_EXPECT_CUDA_BUILD=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv

echo "== build"
if ! MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -v -e . > "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    exit 1
fi
grep "activations_ext:" "$OUT/build.log" | head -1

echo "== SASS: 128-bit global loads/stores and local-memory use of the kernels"
so=$(ls activations_ext/_C*.so)
sass=$(mktemp)
cuobjdump -sass "$so" > "$sass" 2>&1
cuobjdump -res-usage "$so" 2>&1 | grep -E "Function|REG|STACK|LOCAL" > "$OUT/res_usage.txt"
echo "LDG.E.128: $(grep -c 'LDG.E.128' "$sass")  STG.E.128: $(grep -c 'STG.E.128' "$sass")" \
     "local loads/stores (LDL/STL): $(grep -cE '\b(LDL|STL)\b' "$sass")" \
     "kernels with a stack frame: $(grep -c 'STACK:[1-9]' "$OUT/res_usage.txt")"

echo "== tests"
python3 -m pytest -q -rs -p no:cacheprovider tests "$@" 2>&1 | tee "$OUT/tests.log" | grep -vE "^SKIPPED" | tail -15

echo "== compute-sanitizer (our kernels only)"
for tool in memcheck racecheck initcheck; do
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${SANITIZER_TIMEOUT:-100}" compute-sanitizer --tool "$tool" --kernel-name kns=vectorized_elementwise_kernel \
        --error-exitcode 1 python3 scripts/sanitizer_cases.py > "/tmp/sanitizer_$tool.log" 2>&1
    echo "$tool: exit $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitizer cases' "/tmp/sanitizer_$tool.log" | tr '\n' ' ')"
done

echo "== main job"
python3 -m activations_ext 2>&1 | tee "$OUT/main.log"

echo "== benchmark"
python3 -m activations_ext.bench --json "$OUT/bench.json" --plot "$OUT/bench.png" 2> /tmp/bench.err | tee "$OUT/bench.txt"
tail -3 /tmp/bench.err
echo "== benchmark, strided inputs (every other element: no dense kernel takes them as they are)"
python3 -m activations_ext.bench --layouts strided --sizes 2^22 2^24 --dtypes float32 bfloat16 --quiet \
    2>&1 | tee "$OUT/bench_strided.txt"
