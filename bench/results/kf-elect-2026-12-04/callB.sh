#!/usr/bin/env bash
# Call B: F (K-first bf16 state copies from one elected lane; f32 as main) against M (main, 54ce49c),
# .gpu/kfe.txz; then where F's pipeline overtakes the per-head kernel for K-first bf16 replay.
# Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kfe.txz -C /tmp/v
N=/tmp/v/F/replayssm
echo "test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/F /tmp/v/F/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)" | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-18s %s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in M F; do
  bn $X gdn-kf-bf16-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --state bf16 --batch 8,64,512
  bn $X kda-kf-bf16-pipe --state-layout kv --cuda-pipeline 1 --model kimi-linear --state bf16 --batch 64,512
  bn $X gdn-kf-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --batch 64,512
  bn $X gdn-vf --model qwen3-next --batch 512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
for P in 0 1; do
  bn F gdn-kf-bf16-p$P --state-layout kv --cuda-pipeline $P --model qwen3-next --state bf16 --batch 16,20,24,28,32,40
  bn F kda-kf-bf16-p$P --state-layout kv --cuda-pipeline $P --model kimi-linear --state bf16 --batch 24,32,40,48,56
  el "crossing $P"
done 2>&1 | tee "$O/crossing.txt"
el done
