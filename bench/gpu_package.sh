#!/usr/bin/env bash
# bench/gpu_package.sh PKG [BUILD_DIR]: builds here, for sm_90, what the device calls run (the library,
# the replayssm command, test_cuda_stream, test_launch_rules and bench_latency_floor) and packs it
# into PKG, an xz tarball with one folder M, for a call's carry (bench/results/*/call*.sh: PKG=... ;
# bench/call_lib.sh's call_unpack). About 5 minutes from an empty BUILD_DIR (default build-gpu). Put PKG under a folder
# that .gitignore names (/.gpz*/), so that it travels only when a call carries it.
set -euo pipefail
pkg=${1:?usage: bench/gpu_package.sh PKG [BUILD_DIR]}
build=${2:-build-gpu}
cmake -S . -B "$build" -DRSSM_CUDA=ON -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j "$(nproc)" --target replayssm replayssm_cli test_cuda_stream test_launch_rules \
  bench_latency_floor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/M"
cp -a "$build"/libreplayssm.so* "$build/replayssm" "$build/test_cuda_stream" "$build/test_launch_rules" \
  "$build/bench_latency_floor" "$tmp/M/"
mkdir -p "$(dirname "$pkg")"
tar cJf "$pkg" -C "$tmp" M
echo "$pkg: $(du -h "$pkg" | cut -f1), $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (with local changes)')"
