#!/usr/bin/env bash
# Build, test and benchmark on a GPU machine; full logs go to $OUT (default: device-logs/).
# Usage: bash scripts/device_check.sh [all|test|sanitize|bench|fusion|snn|gated|compare] [pytest's arguments for test
#        (default: tests); for compare, the tables to compare (default: mid large strided fusion snn)]
# Wheels in .whl/ (carried: pytest-xdist, execnet, pytest-timeout, liger-kernel; CONTRIBUTING says how) are
# installed first.
#   test:     build, SASS check, the test suite (without arguments: its >25-dimension tests and those that need most
#             of the GPU's memory first, alone, under a time limit, then every test but the CPU-only ones, which CI
#             runs; ACT_DEVICE_TESTS=all keeps them), on 12 workers where pytest-xdist is installed
#   sanitize: compute-sanitizer memcheck, racecheck and initcheck over scripts/sanitizer_cases.py
#   bench:    the main job, the benchmark (mid sizes, large sizes, the strided and chunk layouts)
#   fusion:   the torch.compile fusion benchmark
#   snn:      the fused SELU + AlphaDropout benchmark rows (and memory), and the SNN example on the GPU
#   gated:    the gated benchmark (benchmarks/gated.py, with the compiled gated MLP) and the gated-MLP example
#   compare:  the benchmark tables for a reference build and this tree's, alternately in one run, and the rows
#             that moved beyond their spreads (benchmarks/compare.py). The reference is the sources in .reference/
#             (`git archive REV | tar x -C .reference`, carried to the device), built once into /tmp/reference.
#   all:      every stage but compare (longer than one 10-minute device call: run the stages as calls on a warm machine)
# The build is skipped when the extension is newer than every source it is built from.
set -uo pipefail
stage=${1:-all}
[ $# -gt 0 ] && shift
case "$stage" in all|test|sanitize|bench|fusion|snn|gated|compare) ;; *) echo "unknown stage: $stage (all, test, sanitize, bench, fusion, snn, gated or compare)"; exit 2 ;; esac
OUT=${OUT:-device-logs}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 ACT_EXPECT_CUDA_BUILD=1
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/wheels \
        .whl/*.whl && export PYTHONPATH=/tmp/wheels${PYTHONPATH:+:$PYTHONPATH}
fi

build() {
    # Sources are copied afresh for every device call, so their times say nothing: compare their contents.
    sources=$(find setup.py kernels -type f -print0 | sort -z | xargs -0 cat | sha256sum | cut -d" " -f1)
    if [ "$(cat build/device_sources.sha256 2>/dev/null)" = "$sources" ] && python3 -c "import activations_ext" 2>/dev/null; then
        echo "== build: up to date"
        return 0
    fi
    echo "== build"
    if ! MAX_JOBS=16 python3 -m pip install --no-build-isolation --no-deps -v -e . > "$OUT/build.log" 2>&1; then
        tail -40 "$OUT/build.log"
        exit 1
    fi
    mkdir -p build && echo "$sources" > build/device_sources.sha256
    grep "activations_ext:" "$OUT/build.log" | head -1
}

test_stage() {
    echo "== SASS: 128-bit global loads/stores and local-memory use of the kernels"
    so=$(ls activations_ext/_C*.so)
    sass=$(mktemp)
    cuobjdump -sass "$so" > "$sass" 2>&1
    cuobjdump -res-usage "$so" 2>&1 | grep -E "Function|REG|STACK|LOCAL" > "$OUT/res_usage.txt"
    echo "LDG.E.128: $(grep -c 'LDG.E.128' "$sass")  STG.E.128: $(grep -c 'STG.E.128' "$sass")" \
         "local loads/stores (LDL/STL): $(grep -cE '\b(LDL|STL)\b' "$sass")" \
         "kernels with a stack frame: $(grep -c 'STACK:[1-9]' "$OUT/res_usage.txt")"

    # A test stuck past 150 s fails with its traceback instead of taking the call; workers where xdist is there.
    local options=(-q -rfEs -p no:cacheprovider)
    python3 -c "import pytest_timeout" 2> /dev/null && options+=(--timeout 150)
    python3 -c "import xdist" 2> /dev/null && options+=(-n 12)
    # Test files or pytest options given after the stage replace the default of the suite.
    if [ $# -eq 0 ]; then
        # Views of more dimensions than one launch takes once kept an earlier form of this path busy for
        # minutes on the GPU: they run first, alone, under a time limit, so that a hang cannot take the call.
        many_dims="more_dimensions_than_one_launch or more_than_25_dimensions"
        echo "== tests of more than 25 dimensions (limit 240 s)"
        timeout 240 python3 -m pytest -q -rs -p no:cacheprovider --durations=5 tests/test_layouts.py \
            tests/test_alpha_dropout.py -k "$many_dims" > "$OUT/tests_many_dims.log" 2>&1
        echo "exit $? | $(tail -1 "$OUT/tests_many_dims.log")"
        # Tests that take most of the GPU's memory run alone too: beside 11 other workers on the H100 the
        # 2^31-element one ran out of memory.
        echo "== tests that need most of the GPU's memory (limit 240 s)"
        timeout 240 python3 -m pytest -q -rs -p no:cacheprovider --durations=5 -m whole_gpu tests \
            > "$OUT/tests_whole_gpu.log" 2>&1
        echo "exit $? | $(tail -1 "$OUT/tests_whole_gpu.log")"
        # CI runs the CPU-only tests (a cpu device id or the cpu_only mark); on 12 workers on the H200 their Inductor
        # CPU compiles and gloo ranks outlasted 150 s.
        set -- -k "not ($many_dims)" -m "not whole_gpu" tests
        [ "${ACT_DEVICE_TESTS:-}" = all ] ||
            set -- -k "not ($many_dims) and not cpu" -m "not cpu_only and not whole_gpu" tests
    fi
    echo "== tests"
    python3 -m pytest "${options[@]}" "$@" 2>&1 | tee "$OUT/tests.log" | grep -vE "^SKIPPED" | tail -15
}

sanitize_stage() {
    echo "== compute-sanitizer (our kernels only)"
    # initcheck leaves host copies unchecked: they read memory that torch's own (uninstrumented) kernels wrote,
    # which it counts as uninitialized, and checking them took it past 150 s; our kernels' reads stay checked.
    for tool in memcheck racecheck initcheck; do
        local options=()
        [ "$tool" = initcheck ] && options=(--check-api-memory-access no)
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${SANITIZER_TIMEOUT:-150}" compute-sanitizer --tool "$tool" \
            "${options[@]}" --kernel-name kns=strided_activation_kernel --error-exitcode 1 \
            python3 scripts/sanitizer_cases.py > "/tmp/sanitizer_$tool.log" 2>&1
        echo "$tool: exit $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitizer cases' "/tmp/sanitizer_$tool.log" | tr '\n' ' ')"
    done
}

bench_stage() {
    echo "== main job"
    python3 -m activations_ext 2>&1 | tee "$OUT/main.log"

    # Three parts, so that each fits a device call beside the build: mid sizes (every op and dtype), large
    # sizes with the torch.compile column, then the strided and chunk layouts.
    echo "== benchmark, mid sizes"
    python3 benchmarks/bench.py --sizes 2^16 2^18 2^20 2^22 --no-compile --quiet --json "$OUT/bench_mid.json" \
        2>&1 | tee "$OUT/bench_mid.txt"
    echo "== benchmark, large sizes"
    python3 benchmarks/bench.py --sizes 2^24 2^26 4096x393216 --ops selu relu selu_backward relu_backward \
        --quiet --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
    echo "== benchmark, strided and chunk layouts (no dense kernel takes them as they are)"
    python3 benchmarks/bench.py --layouts strided chunk --sizes 2^22 2^24 --dtypes float32 bfloat16 --no-compile \
        --quiet --json "$OUT/bench_strided.json" 2>&1 | tee "$OUT/bench_strided.txt"
}

fusion_stage() {
    echo "== benchmark under torch.compile: fused, opaque (fusion off), torch's ops"
    python3 benchmarks/fusion.py --json "$OUT/bench_fusion.json" 2> /tmp/bench_fusion.err \
        | tee "$OUT/bench_fusion.txt"
    tail -3 /tmp/bench_fusion.err
}

snn_stage() {
    echo "== benchmark: selu_alpha_dropout (train, p = 0.1) against alpha_dropout(selu(x)), eager and compiled"
    python3 benchmarks/bench.py --ops selu_alpha_dropout selu_alpha_dropout+bwd --sizes 2^24 2^28 \
        --dtypes bfloat16 float32 --quiet --json "$OUT/bench_snn.json" 2>&1 | tee "$OUT/bench_snn.txt"
    echo "== examples/snn.py on the GPU"
    python3 examples/snn.py --device cuda --check 2>&1 | tail -30
}

gated_stage() {
    echo "== benchmark: gated ops against eager, torch.compile, Liger-Kernel (where installed) and a copy"
    python3 benchmarks/gated.py --mlp --json "$OUT/bench_gated.json" 2> /tmp/bench_gated.err \
        | tee "$OUT/bench_gated.txt"
    tail -3 /tmp/bench_gated.err
    echo "== examples/gated_mlp.py on the GPU"
    python3 examples/gated_mlp.py --device cuda --dtype bfloat16 --compile --check 2>&1 | tail -4
}

# One benchmark table, as the stages above run it, its rows as JSON to $2, on the ops a reference before SiLU has.
# With $3 = reference, the reference's own benchmarks run it (its benchmarks/, or before they moved there its
# package's modules), from /tmp, so that the repository root does not shadow the reference package.
bench_table() (
    bench=(python3 benchmarks/bench.py) fusion=(python3 benchmarks/fusion.py)
    json=$(realpath -m "$2")
    if [ "${3:-}" = reference ]; then
        if [ -f .reference/benchmarks/bench.py ]; then
            bench=(python3 "$PWD/.reference/benchmarks/bench.py") fusion=(python3 "$PWD/.reference/benchmarks/fusion.py")
        else
            bench=(python3 -m activations_ext.bench) fusion=(python3 -m activations_ext.bench_fusion)
        fi
        cd /tmp || exit 1
    fi
    mid_ops=(selu relu selu_ relu_ selu.out relu.out selu_backward relu_backward)
    case "$1" in
        mid) "${bench[@]}" --ops "${mid_ops[@]}" --sizes 2^16 2^18 2^20 2^22 --no-compile --quiet --json "$json" ;;
        large) "${bench[@]}" --sizes 2^24 2^26 4096x393216 --ops selu relu selu_backward relu_backward \
            --no-compile --quiet --json "$json" ;;
        strided) "${bench[@]}" --layouts strided chunk --sizes 2^22 2^24 --dtypes float32 bfloat16 \
            --ops "${mid_ops[@]}" --no-compile --quiet --json "$json" ;;
        fusion) "${fusion[@]}" --no-models --json "$json" 2> /dev/null ;;
        snn) "${bench[@]}" --ops selu_alpha_dropout selu_alpha_dropout+bwd --sizes 2^24 2^28 \
            --dtypes bfloat16 float32 --no-compile --quiet --json "$json" ;;
        *) echo "unknown table: $1"; exit 2 ;;
    esac > /dev/null
)

# The reference builds beside this tree's build (each is mostly one long nvcc job).
build_reference() {
    [ -f /tmp/reference/activations_ext/__init__.py ] && return 0
    MAX_JOBS=8 python3 -m pip install --no-build-isolation --no-deps --target /tmp/reference ./.reference \
        > "$OUT/build_reference.log" 2>&1 || { tail -20 "$OUT/build_reference.log"; return 1; }
}

compare_stage() {
    wait "$reference_build" || exit 1
    echo "reference: $(cd /tmp && PYTHONPATH=/tmp/reference python3 -c 'import activations_ext; print(activations_ext.__file__)')"
    mkdir -p /tmp/compare
    for table in "${@:-mid large strided fusion snn}"; do
        for t in $table; do
            echo "== $t: reference, this tree"
            PYTHONPATH=/tmp/reference bench_table "$t" "/tmp/compare/${t}_reference.json" reference || return 1
            bench_table "$t" "/tmp/compare/${t}_tree.json" || return 1
            cp "/tmp/compare/${t}_reference.json" "/tmp/compare/${t}_tree.json" "$OUT/"
            python3 benchmarks/compare.py "/tmp/compare/${t}_reference.json" "/tmp/compare/${t}_tree.json" \
                | tee -a "$OUT/compare.txt"
        done
    done
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
if [ "$stage" = compare ]; then
    [ -d .reference ] || { echo "no .reference/: git archive REV | tar x -C .reference, and carry it"; exit 2; }
    build_reference &
    reference_build=$!
    trap 'kill "$reference_build" 2> /dev/null' EXIT  # a failed build of this tree leaves no build behind it
fi
build
case "$stage" in
    test) test_stage "$@" ;;
    sanitize) sanitize_stage ;;
    bench) bench_stage ;;
    fusion) fusion_stage ;;
    snn) snn_stage ;;
    gated) gated_stage ;;
    compare) compare_stage "$@" ;;
    all) test_stage "$@"; sanitize_stage; bench_stage; fusion_stage; snn_stage; gated_stage ;;
esac
