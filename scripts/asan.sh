#!/usr/bin/env bash
# Builds the asan preset (AddressSanitizer + UndefinedBehaviorSanitizer) and runs the
# whole test suite under it. Any sanitizer report fails its test: UBSan does not
# recover, ASan aborts on the first error. Extra arguments go to ctest (e.g. -R Npy).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset asan >/dev/null
cmake --build --preset asan
# Debian's SystemC runs each SC_THREAD on a coroutine stack of its own, switches stacks
# without telling ASan and write-protects guard pages (mprotect). So the preset leaves
# stack redzones out (asan-stack=0), and LeakSanitizer is off: at exit it faults
# scanning the memory SystemC protected. Heap and global overflows, use after
# free and double free, and undefined behaviour are all checked.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
ctest --preset asan "$@"
