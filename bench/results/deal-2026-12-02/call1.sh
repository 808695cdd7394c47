#!/usr/bin/env bash
# Call 1: checks (the staged end fold's multi-round path, the pipeline's deals bit for bit against the
# per-head kernel), then the replay pipeline's deal by folding weight: the library before (old = 15abc2e)
# against this change at the default (weight 3) and forced weights, GDN and KDA, B = 32-128 and 512.
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/new; N=/tmp/new/replayssm
{ /tmp/new/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  /tmp/new/test_graph_vs_eager 2>&1 | tail -1; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for m in qwen3-next kimi-linear; do
  for v in old w3 w1 w2 w4 w0; do
    L=/tmp/new; X=""; [ $v = old ] && L=/tmp/old; [ $v != old ] && [ $v != w3 ] && X="--cuda-pipeline-balance ${v#w}"
    LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 32,48,64,96,128 $X 2>&1 |
      awk -v l="$m $v" '/staggered/{printf "%-16s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  done; el "$m $r"; done; done | tee "$O/ab.txt"
for v in old w3; do L=/tmp/new; [ $v = old ] && L=/tmp/old
  LD_LIBRARY_PATH=$L $N bench $C --model kimi-linear --batch 512 2>&1 | awk -v l="kimi $v" '/staggered/{printf "%-16s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=$L $N bench $C --model qwen3-next --batch 256,512 2>&1 | awk -v l="qwen $v" '/staggered/{printf "%-16s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/ab-large.txt"
el done
