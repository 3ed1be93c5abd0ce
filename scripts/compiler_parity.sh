#!/usr/bin/env bash
# The same simulation whatever the compiler: builds the program with clang (build/clang)
# and requires its op logs, latencies and energy (every cause's joules, to the bit, and
# the counts they were priced from) to equal those of the g++ build (build/release)
# for the headline decode, prefills, data-mode decodes, a ring all-reduce, a decoder layer and a model step, decode and prefill. C++ leaves the order of
# function arguments unspecified (g++ evaluates them right to left, clang left to
# right), so a statement that issued two tl ops inside one call would differ here.
#   scripts/compiler_parity.sh [GCC_BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
gcc_build=${1:-build/release}
scripts/setup.sh clang
cmake -S . -B build/clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release -DKERNBENCH_BUILD_TESTS=OFF >/dev/null
cmake --build build/clang -j "${JOBS:-2}" --target kernbench >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cases=(
  "headline decode|run"
  "prefill|run --kernel gqa_prefill --seq-len 4096 --heads-q 16 --heads-kv 2 --devices 0"
  "chunked prefill, pass-Q|run --kernel gqa_prefill --seq-len 8192 --q-len 512 --heads-q 16 --heads-kv 2 --devices 0"
  "data-mode decode|run --data --check --q-len 16 --seq-len 4096"
  "data-mode batched decode|run --kernel gqa_decode_batch --data --check --q-len 2 --batch random:24:2-3000:5"
  "ring all-reduce over the links|run --kernel collective --bytes 1MiB --algorithm ring"
  "data-mode decoder layer|run --kernel decoder_layer --model tiny --batch 5,9,33 --devices 0-1 --data --check"
  "model step|run --kernel model_step --model llama3-8b --batch 1024,3000 --devices 0 --layers 2"
  "data-mode prefill layer|run --kernel decoder_layer --model tiny --phase prefill --batch 40,23 --q-len 9 --devices 0 --data --check"
  "prefill model step|run --kernel model_step --model tiny --phase prefill --batch 40,17 --devices 0-1 --layers 2"
)
status=0
for c in "${cases[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  for compiler in gcc clang; do
    bin=$gcc_build/kernbench
    [ "$compiler" = clang ] && bin=build/clang/kernbench
    # shellcheck disable=SC2086
    "$bin" $args --op-log "$out/$compiler.jsonl" --json "$out/$compiler.json" |
      grep -E "^  (simulated|numerics)" >"$out/$compiler.txt"
    python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(repr(j["energy"]), j["activity"])' \
      "$out/$compiler.json" >>"$out/$compiler.txt"
  done
  if cmp -s "$out/gcc.jsonl" "$out/clang.jsonl" && cmp -s "$out/gcc.txt" "$out/clang.txt"; then
    echo "compiler parity: $name: same op log ($(wc -l <"$out/gcc.jsonl") records) and $(head -1 "$out/gcc.txt" | tr -s ' ')"
  else
    echo "compiler parity: $name: g++ and clang differ"
    diff "$out/gcc.txt" "$out/clang.txt" || true
    cmp "$out/gcc.jsonl" "$out/clang.jsonl" || true
    status=1
  fi
done
exit $status
