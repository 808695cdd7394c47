#!/usr/bin/env bash
# Call A: the FP64 tensor-core shapes' rate, latency and bits (bench/dmma_rate.cu); then
# test_cuda_pipeline and the verify timings (T = 4, per-head kernel -1 against the verify pipeline 1)
# on 462efd7's tree, whose last two verify-pipeline changes never ran on the device. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/N
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$O/gpu.txt"
/tmp/v/N/bench_dmma_rate 2>&1 | tee "$O/dmma.txt"; el dmma
R=/tmp/v/N/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --verify 4 --batch 8,128"
bn() { local tag=$1; shift; $R bench $C "$@" | awk -v t="$tag" '/staggered/{printf "%-14s %s\n", t, $0; fflush()}'; }
for P in -1 1; do
  bn gdn/p$P --model qwen3-next --cuda-pipeline $P
  bn kda/p$P --model kimi-linear --cuda-pipeline $P
done 2>&1 | tee "$O/bench.txt"; el bench
/tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tee "$O/checks.txt"; el test
