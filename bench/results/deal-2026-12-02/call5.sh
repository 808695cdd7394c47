#!/usr/bin/env bash
# Call 5: GDN units of one value head where the pipeline deals the folding rows first and no row starts with a
# fold (vh) against c429d4c (final): checks (test_cuda_pipeline now with a verify window and its commit, so
# that some rows start a decode step with a fold), then A/B at B = 32-112 (GDN) and 32-64 (KDA). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs5.txz -C /tmp
N=/tmp/final/replayssm
{ export LD_LIBRARY_PATH=/tmp/vh
  /tmp/vh/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --cuda-pipeline 1 --cuda-pipeline-balance 1 --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for v in final vh; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --batch 32,48,64,80,96,112 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/ab.txt"
for v in final vh; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --state bf16 --batch 32,64 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model kimi-linear --batch 32,64 2>&1 | awk -v l="$v" '/staggered/{printf "%-6s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/ab-other.txt"
el done
