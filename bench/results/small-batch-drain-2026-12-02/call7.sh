#!/usr/bin/env bash
# The review fixes (drain barrier, early-fold bases in the small-batch tests) on CUDA: build, runtime suite, graphs.
set -uo pipefail
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null 2>&1
cmake --build build-gpu -j16 --target replayssm_cli test_graph_vs_eager > /tmp/build.log 2>&1; el built; tail -n1 /tmp/build.log
build-gpu/replayssm check --suite runtime --device cuda 2>&1 | grep -E "k128 small|FAIL|passed"
build-gpu/test_graph_vs_eager 2>&1 | tail -3; el done
