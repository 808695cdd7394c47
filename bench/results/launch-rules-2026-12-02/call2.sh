#!/usr/bin/env bash
# Sweep of the fast kernels' launch switches at B = 4-64 (never swept at 12-48), GDN and KDA.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git rev-parse --short HEAD)" | tee "$O/info.txt"
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build build-gpu -j16 --target replayssm_cli ) > "$O/build.log" 2>&1
el built
N=build-gpu/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.1 --repeat 3"
run() { # label, args
  local lab=$1; shift
  $N bench $C "$@" 2>&1 | awk -v l="$lab" '/staggered/{printf "%-28s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
}
for m in qwen3-next kimi-linear; do
  echo "== $m"
  B=4,6,8,12,16,24,32,48,64
  run "default" --model $m --batch $B
  run "pipe=0" --model $m --batch $B --cuda-pipeline 0
  run "pipe=1" --model $m --batch 12,16,24,32,48,64 --cuda-pipeline 1
  run "pipe=1 bal=1" --model $m --batch 12,16,24,32,48,64 --cuda-pipeline 1 --cuda-pipeline-balance 1
  run "pipe=0 split=1" --model $m --batch $B --cuda-pipeline 0 --cuda-split 1
  run "pipe=0 split=2" --model $m --batch $B --cuda-pipeline 0 --cuda-split 2
  run "pipe=0 split=4" --model $m --batch $B --cuda-pipeline 0 --cuda-split 4
  run "pipe=0 rr=1" --model $m --batch $B --cuda-pipeline 0 --cuda-ring-read 1
  run "pipe=0 rr=0" --model $m --batch 4,6,8 --cuda-pipeline 0 --cuda-ring-read 0
  run "pipe=0 pf=0" --model $m --batch $B --cuda-pipeline 0 --cuda-prefetch 0
  run "pipe=0 pf=2" --model $m --batch $B --cuda-pipeline 0 --cuda-prefetch 2
  run "pdl=1" --model $m --batch 4,6,8,12,16 --cuda-pdl 1
done | tee "$O/sweep.txt"
el done
