#!/usr/bin/env bash
# Call E: V-first GDN replay at B = 12-16, per-head kernel by rule (-1) against the pipeline forced
# (1), f32 and bf16 state, two alternating rounds (the rule's band was set before the one-word start
# made the pipeline faster at B = 16-24); then test_cuda_pipeline on the final tree (the verify
# pipeline's fold tests through window_tests, k and q through normalise_kq; the per-head and replay
# pipeline kernels' machine code equal to main's). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/N
R=/tmp/v/N/replayssm
C="--device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --batch 12,13,14,15,16"
bn() { local tag=$1; shift; $R bench $C "$@" | awk -v t="$tag" '/staggered/{printf "%-14s %s\n", t, $0; fflush()}'; }
for r in 1 2; do for P in -1 1; do
  bn f32/p$P --cuda-pipeline $P
  bn bf16/p$P --state bf16 --cuda-pipeline $P
done; el "round $r"; done 2>&1 | tee "$O/bench.txt"
/tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tee "$O/checks.txt"; el test
