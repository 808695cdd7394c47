#!/usr/bin/env bash
# Call 2: the pipeline's producer issues an item's state copy as soon as the slot is known, before the
# cursor and ring base are waited for (early), against 92e5801 (head): checks, then A/B at default switches;
# then, on the early library, the switch sweeps: pipeline on / off for GDN at B = 16-20 and KDA at B = 40-128,
# folding rows first on / off for GDN f32 at B = 160-256, bf16 at B = 128-144, KDA at B = 48-80.
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs7.txz -C /tmp
N=/tmp/head/replayssm
{ export LD_LIBRARY_PATH=/tmp/early
  /tmp/early/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --cuda-pipeline 1 --cuda-pipeline-balance 1 --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --cuda-pipeline 1 --cuda-pipeline-balance 0 --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for v in head early; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --batch 20,24,32,48,64,96,128,256,512 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --state bf16 --batch 32,64,128 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model kimi-linear --batch 32,64,128,512 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/ab.txt"
el ab
export LD_LIBRARY_PATH=/tmp/early
for p in 0 1; do
  $N bench $C --model qwen3-next --batch 16,17,18,19,20 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --batch 16,17,18,19,20 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model kimi-linear --batch 40,48,56,64,80,96,128,192 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/switch.txt"
el switch
for b in 0 1; do
  $N bench $C --model qwen3-next --batch 160,176,192,224,256 --cuda-pipeline-balance $b 2>&1 | awk -v l="bal$b" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --batch 120,128,136,144 --cuda-pipeline-balance $b 2>&1 | awk -v l="bal$b" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model kimi-linear --batch 48,56,64,72,80 --cuda-pipeline 1 --cuda-pipeline-balance $b 2>&1 | awk -v l="bal$b" '/staggered/{printf "%-6s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/balance.txt"
el balance
