#!/usr/bin/env bash
# Prepared on branch next/kf-packed-store (not run yet): K-first packed decode on the pipeline
# storing each new state through the stage's buffer (X: kf_stage_put, a consumer barrier, then
# 512 contiguous bytes per warp-wide store) against main's lane pairs (M). Libraries built on the dev
# VM in .gpu/kps.txz (M/, X/: libreplayssm.so*; X/ also replayssm, test_cuda_pipeline, test_layout).
# Bits first (X), then K-first packed decode with the pipeline forced, M X M X. Carry [".gpu"].
# Prediction: packed K-first on the pipeline moves towards V-first's per-head packed decode (GDN
# B = 512: 666.9 -> about 560-600 us; the lane pairs' stores touch 16 lines a warp-wide store, these 4).
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kps.txz -C /tmp/v
N=/tmp/v/X/replayssm
{ LD_LIBRARY_PATH=/tmp/v/X /tmp/v/X/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/X /tmp/v/X/test_layout 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/X $N check --device cuda --quick --cuda-pipeline 1 --filter K=128,V=128 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/X timeout 120 compute-sanitizer --tool racecheck $N bench --device cuda --model qwen3-next \
    --state-layout kv --cuda-pipeline 1 --batch 64 --min-time 0.001 --repeat 1 --working-set-mib 64 2>&1 |
    grep -E "SUMMARY|rror" | head
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv --cuda-pipeline 1"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-14s %-2s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in M X; do
  bn $X gdn-kf --model qwen3-next --batch 16,64,128,512
  bn $X kda-kf --model kimi-linear --batch 16,64,512
  bn $X gdn-kf-bf16 --model qwen3-next --state bf16 --batch 64,512
  bn $X kda-kf-bf16 --model kimi-linear --state bf16 --batch 128,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
