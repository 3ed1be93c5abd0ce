#!/usr/bin/env bash
# The speed-up of `kernbench run --jobs N` over one process: the same run both ways, whole
# process, in alternating pairs (so that both see the same machine; a shared host's speed
# drifts), with the results checked equal apart from the wall-time fields. Prints each
# pair's wall seconds and the median ratio serial / split, the figure BENCHMARKS.md records.
#
# usage: scripts/jobs_speedup.sh [BUILD_DIR [PAIRS [JOBS]]] -- RUN_FLAGS...
#   e.g. scripts/jobs_speedup.sh build/release 8 2 -- --kernel collective --bytes 256MiB --algorithm ring
set -euo pipefail
build=build/release pairs=5 jobs=2
for v in build pairs jobs; do
  [ $# -gt 0 ] && [ "$1" != "--" ] || break
  printf -v "$v" '%s' "$1"
  shift
done
[ "${1:-}" = "--" ] || { echo "usage: $0 [BUILD_DIR [PAIRS [JOBS]]] -- RUN_FLAGS..." >&2; exit 2; }
shift
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
wall() {  # runs kernbench run "$@", prints its wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$build/kernbench" run "$@" >/dev/null
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}
same() {  # the two results, wall-time fields aside
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for r in (a, b):
    r.pop("wall", None)
sys.exit(0 if a == b else 1)
PY
}
ratios=()
for i in $(seq 1 "$pairs"); do
  serial=$(wall "$@" --json "$scratch/serial.json")
  split=$(wall "$@" --jobs "$jobs" --json "$scratch/split.json")
  same "$scratch/serial.json" "$scratch/split.json" ||
    { echo "jobs_speedup: --jobs $jobs gave another result than one process" >&2; exit 1; }
  ratio=$(python3 -c "print(f'{$serial / $split:.2f}')")
  ratios+=("$ratio")
  echo "pair $i: one process ${serial} s, --jobs $jobs ${split} s: ${ratio}x"
done
python3 -c 'import statistics,sys; r=[float(x) for x in sys.argv[1:]]; print(f"median speed-up {statistics.median(r):.2f}x (range {min(r):.2f}-{max(r):.2f}) over {len(r)} pairs")' "${ratios[@]}"
