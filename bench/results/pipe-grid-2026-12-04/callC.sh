#!/usr/bin/env bash
# Call C: G (the replay pipeline's grid by rssm_pipe_grid: 15/16 of the SMs up to all of them, the
# count with the fewest CTA rounds x CTAs) against F (2ebe71f: one CTA per SM), .gpu/grid.txz.
# Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/grid.txz -C /tmp/v
N=/tmp/v/G/replayssm
echo "test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/G /tmp/v/G/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)" | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-18s %s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in F G; do
  bn $X gdn --model qwen3-next --batch 16,32,64,128,256,512
  bn $X kda --model kimi-linear --batch 64,128,512
  bn $X gdn-bf16 --model qwen3-next --state bf16 --batch 64,512
  bn $X gdn-kf --state-layout kv --model qwen3-next --batch 64,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
