#!/usr/bin/env bash
# Call 3: the streaming kernel with a chunk's 4 rows summed by the reduce-scatter butterfly (6
# shuffles per sum of 4 rows instead of 20): the bitwise test, the float64 checks with it forced,
# then cuda_stream = 0 / 8 / 16 for GDN and KDA, f32 and bf16 state (bf16 with the pipeline off).
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs12.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/rs
N=/tmp/rs/replayssm
{ /tmp/rs/test_cuda_stream 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick --cuda-stream 4 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --cuda-stream 16 --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
BS=1,4,8,16,24,32,64,128,512
for r in 0 8 16; do
  $N bench $C --model qwen3-next --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s gdn-f32  B=%-4s pk %8s\n", l, $1, $5}'
  $N bench $C --model kimi-linear --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s kda-f32  B=%-4s pk %8s\n", l, $1, $5}'
  $N bench $C --model qwen3-next --state bf16 --cuda-pipeline 0 --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s gdn-bf16 B=%-4s pk %8s\n", l, $1, $5}'
  $N bench $C --model kimi-linear --state bf16 --cuda-pipeline 0 --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s kda-bf16 B=%-4s pk %8s\n", l, $1, $5}'
done | tee "$O/stream.txt"
el stream
