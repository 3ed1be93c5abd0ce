#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build/fuzz and runs each for
# SECONDS (default 30) from the seed corpus in fuzz/corpus/ (and topologies/). New inputs go to a
# scratch folder, never into the repository; a crash leaves its input in
# build/fuzz/artifacts/ and makes the script fail.
#   scripts/fuzz.sh [SECONDS] [TARGET ...]      targets: topology set npy
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(topology set npy)
scripts/setup.sh clang libclang-rt-dev
cmake -S . -B build/fuzz -DKERNBENCH_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j "${JOBS:-2}" >/dev/null
mkdir -p build/fuzz/artifacts
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  echo "fuzz: $t for ${seconds} s"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: a huge allocation
  # attempt is a failure too.
  rc=0
  build/fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/"$t"- \
    "$scratch/$t" fuzz/corpus/"$t" $([ "$t" = topology ] && echo topologies) >"$scratch/$t.log" 2>&1 || rc=$?
  grep -E "^(stat::number_of_executed_runs|stat::new_units_added|stat::peak_rss_mb)|DONE|ERROR|SUMMARY|written" \
    "$scratch/$t.log" || true
  if [ $rc -ne 0 ]; then
    tail -40 "$scratch/$t.log"
    echo "fuzz: $t FAILED; the input is in build/fuzz/artifacts/"
    exit 1
  fi
done
