#!/usr/bin/env bash
# Installs kernbench from BUILD_DIR into a temporary prefix, then builds consumers in
# C++17 outside the source tree against that installed copy: examples/vp through
# find_package(kernbench), a one-file program through pkg-config (both must run and
# succeed), and a file that includes every installed header as <kernbench/...> with
# nothing but <prefix>/include on its path.
#   consumer.sh BUILD_DIR SOURCE_DIR [CXX_FLAGS]
# CXX_FLAGS: the flags BUILD_DIR was compiled with (e.g. sanitizers), which its
# libraries need from their consumers too.
set -euo pipefail
build=$1
src=$2
flags=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

cp -r "$src/examples/vp" "$tmp/vp"
cmake -S "$tmp/vp" -B "$tmp/vp-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$tmp/vp-build" >/dev/null
"$tmp/vp-build/vp_platform" | tee "$tmp/vp.out"
grep -qx "all checks: ok" "$tmp/vp.out"

pc="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046,SC2086
g++ -std=c++17 -O1 $flags -o "$tmp/pc_consumer" "$src/tests/install/pkg_config_consumer.cpp" \
  $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs kernbench)
"$tmp/pc_consumer" "$(PKG_CONFIG_PATH="$pc" pkg-config --variable=datadir kernbench)/topologies/small_1sip_2x2x2.yaml"

find "$tmp/prefix/include/kernbench" -name '*.h' | sort |
  sed "s|^$tmp/prefix/include/\(.*\)$|#include <\1>|" >"$tmp/every_header.cpp"
# shellcheck disable=SC2046,SC2086
g++ -std=c++17 -fsyntax-only -Wall -Wextra -Wpedantic -Werror $flags "$tmp/every_header.cpp" \
  $(PKG_CONFIG_PATH="$pc" pkg-config --cflags kernbench)
echo "every installed header: $(wc -l <"$tmp/every_header.cpp") compile as C++17 with -I$tmp/prefix/include alone"
