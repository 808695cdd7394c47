#!/usr/bin/env bash
# Call A: the verify pipeline (verify_pipeline.cu, forced by --cuda-pipeline 1) against the per-head
# kernel: test_cuda_pipeline (bit for bit, a verify window of 4 tokens among its steps), check
# --quick with the pipeline forced (against float64), racecheck of a GDN and a KDA quick case, then
# verify + commit timed, T = 4 (and 3), both ways, two alternating rounds. Library built on the dev
# VM (nvcc 13.0, sm_90) in .gpu/kp.txz. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/N
R=/tmp/v/N/replayssm
{ /tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"; el test
  $R check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; el check; } 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # tag args...
  local tag=$1; shift
  $R bench $C "$@" | awk -v t="$tag" '/staggered/{printf "%-14s %s\n", t, $0; fflush()}'
}
for r in 1 2; do for P in -1 1; do
  bn gdn-T4/p$P --model qwen3-next --verify 4 --batch 8,32,64,128,512 --cuda-pipeline $P
  bn kda-T4/p$P --model kimi-linear --verify 4 --batch 8,32,64,128,512 --cuda-pipeline $P
  bn gdn-T3/p$P --model qwen3-next --verify 3 --batch 128 --cuda-pipeline $P
  bn gdn-T4-bf16/p$P --model qwen3-next --state bf16 --verify 4 --batch 128 --cuda-pipeline $P
  bn kda-T4-bf16/p$P --model kimi-linear --state bf16 --verify 4 --batch 128 --cuda-pipeline $P
  el "round $r p$P"
done; done 2>&1 | tee "$O/bench.txt"
for f in "gdn/L=16/state=f32,ring=bf16,io=bf16/H=2,HV=4,K=128" "kda/L=8/state=f32,ring=f32,io=f32/H=2,HV=4,K=128"; do
  m=${f%%/*}
  timeout 100 compute-sanitizer --tool racecheck $R check --device cuda --quick --cuda-pipeline 1 \
    --filter "$f" > "$O/racecheck-$m.txt" 2>&1
  tail -3 "$O/racecheck-$m.txt"; el "racecheck $m"
done 2>&1 | tee -a "$O/checks.txt"
