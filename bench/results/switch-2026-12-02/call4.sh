#!/usr/bin/env bash
# Call 4: the kept library's full CUDA checks (every case, per-head kernels and the pipeline forced on), and
# compute-sanitizer's racecheck and memcheck on test_cuda_pipeline (the pipeline's orders, many heads per CTA).
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs8.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/final
N=/tmp/final/replayssm
{ $N check --device cuda 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
{ timeout 240 compute-sanitizer --tool racecheck --racecheck-report hazard /tmp/final/test_cuda_pipeline 2>&1 | tail -n 6
  el racecheck
  timeout 120 compute-sanitizer --tool memcheck /tmp/final/test_cuda_pipeline 2>&1 | tail -n 4
  el memcheck; } 2>&1 | tee "$O/sanitizer.txt"
