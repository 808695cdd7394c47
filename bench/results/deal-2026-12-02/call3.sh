#!/usr/bin/env bash
# Call 3: the replay pipeline's GDN end fold staged as f32 in the stage's state buffer (staged) and the
# folding-rows-first order for GDN up to 30 heads per CTA (B <= 123 at 32 value heads on 132 SMs) against
# main (15abc2e): checks, then A/B, GDN f32 and bf16 state and KDA; the order at B = 104-128 forced.
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs3.txz -C /tmp
N=/tmp/main/replayssm
{ export LD_LIBRARY_PATH=/tmp/staged
  /tmp/staged/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --cuda-pipeline 1 --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"
  /tmp/staged/test_graph_vs_eager 2>&1 | tail -1; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for v in main staged; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --batch 32,48,64,80,96,112,128,256,512 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --state bf16 --batch 32,64,512 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model kimi-linear --batch 32,64,512 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; el "round $r"; done | tee "$O/ab.txt"
for bal in 1 0; do
  LD_LIBRARY_PATH=/tmp/staged $N bench $C --model qwen3-next --batch 104,112,120,128,144 --cuda-pipeline-balance $bal 2>&1 | awk -v l="staged bal=$bal" '/staggered/{printf "%-15s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/order.txt"
el done
