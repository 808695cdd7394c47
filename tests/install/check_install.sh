#!/bin/sh
# usage: check_install.sh BUILD_DIR SOURCE_DIR CC CMAKE
# Installs BUILD_DIR into a temporary prefix and uses it as another project would: the example
# built with pkg-config's flags and with find_package(replayssm), both run without
# LD_LIBRARY_PATH, and the installed command. Exits non-zero at the first step that fails.
set -eu
build=$1 src=$2 cc=$3 cmake=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH

"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
echo "installed into a temporary prefix:"
(cd "$tmp/prefix" && find . -type f -o -type l | sort | sed 's/^/  /')

pc=$(dirname "$(find "$tmp/prefix" -name replayssm.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs replayssm)
echo "pkg-config --cflags --libs replayssm: $flags"
"$cc" -std=c11 -O2 -o "$tmp/example_pc" "$src/examples/decode_step.c" $flags -lm
"$tmp/example_pc" >"$tmp/pc.out"
echo "example built with pkg-config: $(tail -n 1 "$tmp/pc.out")"

mkdir "$tmp/consumer"
cat >"$tmp/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(consumer LANGUAGES C)
find_package(replayssm $(grep -o 'project(replayssm VERSION [0-9]*\.[0-9]*' "$src/CMakeLists.txt" | grep -o '[0-9]*\.[0-9]*$') REQUIRED)
add_executable(example_fp "$src/examples/decode_step.c")
target_link_libraries(example_fp PRIVATE replayssm::replayssm m)
message(STATUS "replayssm \${replayssm_VERSION}, CUDA back end: \${replayssm_HAS_CUDA}")
CMAKE
"$cmake" -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_COMPILER="$cc" \
    >"$tmp/consumer.log" || { cat "$tmp/consumer.log"; exit 1; }
grep "CUDA back end" "$tmp/consumer.log"
"$cmake" --build "$tmp/consumer/build" >"$tmp/consumer-build.log" || { cat "$tmp/consumer-build.log"; exit 1; }
"$tmp/consumer/build/example_fp" >"$tmp/fp.out"
echo "example built with find_package: $(tail -n 1 "$tmp/fp.out")"

"$tmp/prefix/bin/replayssm" version
readelf -d "$(find "$tmp/prefix" -name 'libreplayssm.so.*' -type f | head -n 1)" | grep SONAME
echo "install: ok"
