#!/usr/bin/env bash
# Installs the Debian packages kernbench needs, only those that are missing. Extra
# package names given as arguments are installed the same way (scripts use this).
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libsystemc-dev libyaml-cpp-dev libboost-program-options-dev
  libgtest-dev nlohmann-json3-dev libeigen3-dev libcsv-dev
  libopenmpi-dev openmpi-bin python3-matplotlib
  "$@"
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: the Debian packages are installed"
  exit 0
fi
# apt's and dpkg's lines go to a log; a failure prints its end.
echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { "${sudo_cmd[@]}" apt-get update -qq &&
       DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
     > "$log" 2>&1; then
  tail -n 40 "$log"
  echo "setup: installing failed"
  exit 1
fi
echo "setup: done"
