#!/usr/bin/env bash
# Prepared for the next session's first device call (carry [".gpu"]): the checks that have not run on
# CUDA since e836183 (small-batch cases with a bf16 layer, pool/mixed state dtypes), then the usual set.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
gunzip -c .gpu/vec.gz > /tmp/vec.txt 2>/dev/null || true
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON -DRSSM_VECTORS=/tmp/vec.txt > /dev/null && cmake --build build-gpu -j16 ) > "$O/build.log" 2>&1
el built; tail -n1 "$O/build.log"
N=build-gpu/replayssm
{ $N check --suite runtime --device cuda 2>&1 | grep -E "small|mixed|FAIL|passed"; $N check --device cuda 2>&1 | tail -2;
  build-gpu/test_graph_vs_eager 2>&1 | tail -5; build-gpu/test_errors 2>&1 | tail -1; } 2>&1 | tee "$O/checks.txt"
el checks
