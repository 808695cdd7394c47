#!/usr/bin/env bash
# Call 2: packed decode streamed by rows (stream_k128.cu, cuda_stream = 4 / 8 / 16 rows per warp)
# against the per-head kernel (cuda_stream = 0): the bitwise test, the float64 checks with the
# streaming kernel forced, then the CLI bench, GDN and KDA, f32 and bf16 state, B = 1-512 (bf16
# with the pipeline off, so that the per-head kernel is what streaming replaces), and the
# programmatic launch on and off. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs11.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/new
N=/tmp/new/replayssm
{ /tmp/new/test_cuda_stream 2>&1 | grep -E "FAIL|passed"
  for r in 4 16; do $N check --device cuda --quick --cuda-stream $r 2>&1 | grep -E "FAIL|passed"; done
  $N check --device cuda --cuda-stream 8 --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
BS=1,2,4,8,12,16,24,32,48,64,128,256,512
for r in 0 4 8 16; do
  $N bench $C --model qwen3-next --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model kimi-linear --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --cuda-pipeline 0 --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model kimi-linear --state bf16 --cuda-pipeline 0 --batch $BS --cuda-stream $r 2>&1 | awk -v l="s$r" '/staggered/{printf "%-4s kda-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/stream.txt"
el stream
for p in 0 1; do for r in 4 8; do
  $N bench $C --model qwen3-next --batch 1,2,4,8,16,32,64 --cuda-stream $r --cuda-pdl $p 2>&1 | awk -v l="s$r-pdl$p" '/staggered/{printf "%-9s gdn-f32  B=%-4s pk %8s\n", l, $1, $5}'
done; done | tee "$O/pdl.txt"
el pdl
