#!/usr/bin/env bash
# Call A: K-first f32 replay staged by four tensor copies (T, the working tree) against main's
# 9576227 (M: 64 bulk copies of rotated blocks). Checks of T, then the K-first f32 replay timings
# in two alternating rounds. Libraries built on the dev VM (nvcc 13.0, sm_90, Release) in
# .gpu/kt.txz. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kt.txz -C /tmp/v
{ LD_LIBRARY_PATH=/tmp/v/T /tmp/v/T/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/T /tmp/v/T/test_layout 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/T /tmp/v/T/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/$X/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-10s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in M T; do
  bn $X gdn-kf --model qwen3-next --batch 12,16,64,128,512
  bn $X kda-kf --model kimi-linear --batch 24,64,512
  bn $X gdn-kf-p1 --model qwen3-next --batch 8,10 --cuda-pipeline 1
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
bn T gdn-kf-p0 --model qwen3-next --batch 8,10,12 --cuda-pipeline 0 | tee -a "$O/bench.txt"
bn T kda-kf-p0 --model kimi-linear --batch 16,20,24 --cuda-pipeline 0 | tee -a "$O/bench.txt"
bn T kda-kf-p1 --model kimi-linear --batch 16,20 --cuda-pipeline 1 | tee -a "$O/bench.txt"
el done
