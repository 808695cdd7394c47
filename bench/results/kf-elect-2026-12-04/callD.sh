#!/usr/bin/env bash
# Call D: K-first f32 replay. R (a staged rotated block's places as base + constant where they cannot
# wrap: kf_at_c) and RE (R, and an f32 head's copies from one elected lane too) against F (2ebe71f),
# .gpu/kfr.txz. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kfr.txz -C /tmp/v
N=/tmp/v/F/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-18s %s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in F R RE; do
  bn $X gdn-kf --state-layout kv --model qwen3-next --batch 16,64,512
  bn $X kda-kf --state-layout kv --model kimi-linear --batch 64,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
for X in R RE; do
  echo "test_cuda_pipeline $X: $(LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/F/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)"
  el "check $X"
done 2>&1 | tee "$O/checks.txt"
el done
