#!/usr/bin/env bash
# Simulator speed against a yardstick: kernbench's hbm_stream and the plain tlm_utils
# model of the same traffic (bench/tlm_reference/hbm_stream.cpp), run in alternating
# pairs in one go, so that both see the same machine. Both must simulate the same
# cycles; the script prints each pair's simulation seconds (sc_start to its return) and
# the median ratio kernbench / reference, the figure BENCHMARKS.md records.
#
# usage: scripts/sim_speed.sh [BUILD_DIR [PAIRS [BYTES_PER_PE]]]   (build/release, 5, 16MiB)
set -euo pipefail
build=${1:-build/release}
pairs=${2:-5}
bytes=${3:-16MiB}
cmake --build "$build" -j 2 --target kernbench tlm_reference_hbm_stream >/dev/null
bytes_n=$(numfmt --from=iec-i --suffix=B --invalid=fail "$bytes" 2>/dev/null | sed 's/B$//') ||
  { echo "sim_speed: '$bytes' is not a size (e.g. 16MiB)" >&2; exit 2; }
# The machine's numbers from the topology kernbench runs (the default one).
topo=$("$build/kernbench" topology show topologies/llama70b_4sip.yaml)
field() {  # the first group of regex $1 in the topology text, or fail naming it
  local v
  v=$(sed -n "s|$1|\1|p" <<<"$topo" | head -1)
  [ -n "$v" ] || { echo "sim_speed: cannot read $2 from 'kernbench topology show'" >&2; exit 1; }
  echo "$v"
}
pes=$(field '.*PEs *[0-9]* per SIP, \([0-9]*\) total.*' "the PE count")
bw=$(field '.*per PE channel \([0-9]*\)B/cycle.*' "the HBM bandwidth")
latency=$(field '.*per PE channel .*latency \([0-9]*\) cycles.*' "the HBM latency")
burst=$(numfmt --from=iec-i --suffix=B "$(field '.*dma *burst \([0-9]*[KMG]*i*B\),.*' "the DMA burst")" | sed 's/B$//')
window=$(field '.*dma .*, \([0-9]*\) outstanding.*' "the DMA window")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
ratios=()
for i in $(seq 1 "$pairs"); do
  "$build/tlm_reference_hbm_stream" "$pes" "$bytes_n" "$burst" "$window" "$bw" "$latency" >"$scratch/ref.txt"
  "$build/kernbench" run --kernel hbm_stream --bytes "$bytes" --json "$scratch/kb.json" >/dev/null
  read -r ref_cycles ref_s < <(awk '/^simulated_cycles/{c=$2} /^simulation_seconds/{s=$2} END{print c, s}' "$scratch/ref.txt")
  read -r kb_cycles kb_s < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["simulated_cycles"], r["wall"]["simulation_seconds"])' "$scratch/kb.json")
  if [ "$ref_cycles" != "$kb_cycles" ]; then
    echo "sim_speed: the models disagree: reference $ref_cycles cycles, kernbench $kb_cycles" >&2
    exit 1
  fi
  ratio=$(python3 -c "print(f'{$kb_s / $ref_s:.2f}')")
  ratios+=("$ratio")
  echo "pair $i: $kb_cycles cycles; kernbench ${kb_s} s, reference ${ref_s} s: ${ratio}x"
done
python3 -c 'import statistics,sys; r=[float(x) for x in sys.argv[1:]]; print(f"median ratio {statistics.median(r):.2f}x (range {min(r):.2f}-{max(r):.2f}) over {len(r)} pairs")' "${ratios[@]}"
