#!/usr/bin/env bash
# Call 5: packed decode on the pipeline (an item with an empty ring whose end fold is the step, its state to
# the write slot): test_cuda_pipeline (replay and packed, bit for bit against the per-head kernel), the CUDA
# checks with the pipeline forced on (packed decode included), then packed decode on the per-head kernel
# (--cuda-pipeline 0) against the pipeline (1). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs9.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/pk
N=/tmp/pk/replayssm
{ /tmp/pk/test_cuda_pipeline 2>&1 | grep -E "FAIL|PASS|passed"
  $N check --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for p in 0 1; do
  $N bench $C --model qwen3-next --batch 8,16,32,64,128,256,512 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model kimi-linear --batch 8,16,32,64,128,512 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --batch 32,128,512 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/packed.txt"
el bench
