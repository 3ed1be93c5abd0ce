#!/usr/bin/env bash
# A faster program for long runs and sweeps: g++ profile-guided optimisation (PGO).
# 1. Builds the program instrumented (-fprofile-generate) in BUILD_DIR.
# 2. Trains it: the op-log identity cases (every workload, timing and data mode) and
#    three longer timing runs whose steady state is what sweeps spend their time in.
# 3. Rebuilds BUILD_DIR from that profile (-fprofile-use; the same directory, so the
#    profile's per-object file names match).
# 4. Checks the result against tests/sc_main/op_log_hashes.json: the same op logs, bit
#    for bit, as the Release build (optimisation moves no simulated cycle).
# The profile belongs to the source it was taken from: after changing the source, run
# this again (a plain rebuild of BUILD_DIR still builds, warning of the stale profile).
#
# usage: scripts/build_pgo.sh [BUILD_DIR]   (build/fast)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/fast}
profile=$(realpath -m "$build/profile")
jobs=${JOBS:-2}

configure() {  # $1: the compile flags, $2: the link flags (none by default)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKERNBENCH_BUILD_TESTS=OFF \
    "-DCMAKE_CXX_FLAGS=$1 -fprofile-dir=$profile" "-DCMAKE_EXE_LINKER_FLAGS=${2:-}" >/dev/null
}

rm -rf "$profile"
echo "build_pgo: instrumented build in $build"
configure "-fprofile-generate -fprofile-update=single" "-fprofile-generate"
cmake --build "$build" -j "$jobs" --target kernbench >/dev/null

echo "build_pgo: training"
python3 scripts/op_log_hashes.py --run "$build"
for args in "--seq-len 131072" "--kernel gqa_prefill --seq-len 4096" "--kernel hbm_stream --bytes 4MiB"; do
  # shellcheck disable=SC2086
  "$build/kernbench" run $args >/dev/null
done

echo "build_pgo: optimised build in $build"
configure "-fprofile-use -fprofile-partial-training -Wno-missing-profile -Wno-error=coverage-mismatch"
cmake --build "$build" -j "$jobs" --target kernbench >/dev/null

python3 scripts/op_log_hashes.py --check "$build"
echo "build_pgo: $build/kernbench"
