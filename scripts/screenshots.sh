#!/usr/bin/env bash
# Regenerates the pictures of traces/README.md from the project's own outputs: the
# headline decode's waveform (one cube's engines and links, opened in GTKWave under a
# virtual X server) and its timeline (drawn by scripts/plot_timeline.py).
# usage: scripts/screenshots.sh [OUTDIR]   (default docs/img)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/img}
scripts/setup.sh gtkwave xvfb imagemagick python3-matplotlib
make -s build
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${xvfb:-}" ] && kill "$xvfb" 2>/dev/null || true' EXIT
build/release/kernbench run --vcd "$work/decode.vcd" --timeline "$work/decode.json" \
  --vcd-filter 'sip0.cube5.pe0.*,sip0.cube5.pe1.*,sip0.cube5.fabric.pe0.*,sip0.cube5.fabric.pe1.*,sip0.cube5.hbm0.*,sip0.noc.router5.*' \
  > "$work/report.txt"
mkdir -p "$out"

# GTKWave: every signal, full hierarchical names, the whole run in view.
cat > "$work/show.tcl" <<'TCL'
set sigs {}
for {set i 0} {$i < [gtkwave::getNumFacs]} {incr i} { lappend sigs [gtkwave::getFacName $i] }
gtkwave::addSignalsFromList $sigs
gtkwave::/Edit/Toggle_Trace_Hier
gtkwave::/Time/Zoom/Zoom_Full
TCL
display=:$((90 + RANDOM % 100))
Xvfb "$display" -screen 0 1600x900x24 >/dev/null 2>&1 &
xvfb=$!
sleep 2
DISPLAY=$display gtkwave --rcvar 'initial_window_x 1500' --rcvar 'initial_window_y 880' --rcvar 'hide_sst on' \
  -S "$work/show.tcl" "$work/decode.vcd" >/dev/null 2>&1 &
gtk=$!
sleep 6
DISPLAY=$display import -window root "$work/screen.png"
kill "$gtk" 2>/dev/null || true
convert "$work/screen.png" -crop 1500x880+0+0 +repage "$out/decode_waveform.png"

# The timeline (Debian's python3, which has python3-matplotlib) of two PEs of the group-root cube (1,1) and of a neighbour cube.
/usr/bin/python3 scripts/plot_timeline.py "$work/decode.json" "$out/decode_timeline.png" \
  --tracks 'cube(1,1).pe0' --tracks 'cube(1,1).pe1' --tracks 'cube(2,1).pe0'
echo "screenshots: wrote $out/decode_waveform.png and $out/decode_timeline.png"
