#!/usr/bin/env bash
# Call C: the one-word start for KDA as well (X: its BAL_WORD kernels, V-first and K-first; the
# K-first ones spill 16-24 bytes) against the kept tree (H, 2751481). Checks of X
# (test_cuda_pipeline: replay at 24 rows, KDA included), then H against X in two alternating
# rounds where KDA runs the pipeline with at most 32 rows (bf16 state from B = 25, K-first from
# B = 24) and V-first f32 with the pipeline forced, against the per-head kernel (the rule).
# Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
LD_LIBRARY_PATH=/tmp/v/X /tmp/v/X/test_cuda_pipeline > "$O/test_cuda_pipeline.txt" 2>&1; echo "rc=$?" >> "$O/test_cuda_pipeline.txt"
tail -2 "$O/test_cuda_pipeline.txt"; el tests
C="--device cuda --model kimi-linear --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/X/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-14s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in H X; do
  bn $X kda-bf16 --state bf16 --batch 25,28,32
  bn $X kda-pipe --cuda-pipeline 1 --batch 24,32,36
  bn $X kda-kf --state-layout kv --batch 24,28,32
  bn $X kda-kf-bf16 --state-layout kv --state bf16 --batch 25,32
  [ $r = 1 ] && bn $X kda-rule --batch 24,32,36
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
