#!/usr/bin/env bash
# Call E: K-first bf16 replay staged by two tensor copies too (N, the working tree) against
# 5ba4686 (H: 32 elected bulk copies of padded blocks; f32 replay already tiled). Checks of N, then
# K-first replay with bf16 and f32 states in two alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kb.txz -C /tmp/v
{ LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/test_layout 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/N/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in H N; do
  bn $X gdn-kf-bf16 --state bf16 --model qwen3-next --batch 16,64,128,512
  bn $X kda-kf-bf16 --state bf16 --model kimi-linear --batch 32,64,512
  bn $X gdn-kf --model qwen3-next --batch 64,512
  bn $X kda-kf --model kimi-linear --batch 512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
bn N gdn-kf-bf16-p0 --state bf16 --model qwen3-next --batch 12,16 --cuda-pipeline 0 | tee -a "$O/bench.txt"
bn N gdn-kf-bf16-p1 --state bf16 --model qwen3-next --batch 12 --cuda-pipeline 1 | tee -a "$O/bench.txt"
el done
