#!/usr/bin/env bash
# Call C: call B's verify A/B again (its awk kept the wrong columns of the verify lines: whole lines
# now), and K-first bf16 packed decode per-head against the pipeline at B = 1-8 (call B: the
# pipeline from B = 8 on N). Same libraries as call B (.gpu/kpb.txz: M main, N = main + X + W).
# Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kpb.txz -C /tmp/v
N=/tmp/v/N/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for X in M N; do
  for v in "qwen3-next --verify 4 --batch 8,128" "kimi-linear --verify 4 --batch 128" "qwen3-next --verify 4 --batch 128 --state bf16" \
           "kimi-linear --verify 4 --batch 128 --state bf16" "qwen3-next --verify 3 --batch 128"; do
    LD_LIBRARY_PATH=/tmp/v/$X $N bench $C --state-layout kv --model $v 2>&1 |
      awk -v x=$X -v r=$r -v v="$v" '/staggered/{printf "r%s %s %-46s | %s\n", r, x, v, $0; fflush()}'
  done
done; done | tee "$O/verify.txt"
el verify
for p in 0 1; do
  for v in "qwen3-next --state bf16 --batch 1,2,3,4,5,6,7,8" "kimi-linear --state bf16 --batch 1,2,3,4,5,6,7,8"; do
    LD_LIBRARY_PATH=/tmp/v/N $N bench $C --state-layout kv --cuda-pipeline $p --model $v 2>&1 |
      awk -v p=$p -v v="$v" '/staggered/{printf "pipe %s %-48s B=%-4s pk %8s rp %8s\n", p, v, $1, $5, $6; fflush()}'
  done
done | tee "$O/crossing.txt"
el crossing
