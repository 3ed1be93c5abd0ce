#!/usr/bin/env bash
# Builds targets of a configured build folder quietly: one line of progress per build,
# the compiler's lines kept in BUILD/build.log. A failed build shows the command that
# failed and its output: the build is run again from where it stopped, verbose and one
# file at a time, and its last lines are printed. V=1 prints everything as make does.
#   scripts/build.sh BUILD JOBS [TARGET ...]      no target: all
set -euo pipefail
build=$1
jobs=$2
shift 2
targets=()
for t in "$@"; do targets+=(--target "$t"); done
if [ "${V:-0}" = 1 ]; then
  exec cmake --build "$build" -j "$jobs" "${targets[@]}"
fi
log="$build/build.log"
what=${*:-all}
printf 'build: %s' "$what"
# CMake's makefiles print "[ 42%] ..." as they go: a dot per tenth done, on this line.
set +e
cmake --build "$build" -j "$jobs" "${targets[@]}" 2>&1 | tee "$log" |
  awk '/^\[ *[0-9]+%\]/ { p = substr($0, 2) + 0; while (shown < int(p / 10)) { printf "."; shown++; fflush() } }'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -eq 0 ]; then
  echo " done ($log)"
  exit 0
fi
echo " FAILED. The failing command and its output:"
# From the last step make began (what failed) on.
{ cmake --build "$build" -j 1 "${targets[@]}" -- VERBOSE=1 --no-print-directory 2>&1 || true; } |
  awk '/^\[ *[0-9]+%\]/ { n = 0 } { line[n++] = $0 } END { for (i = 0; i < n; i++) print line[i] }' | tail -n 80
exit 1
