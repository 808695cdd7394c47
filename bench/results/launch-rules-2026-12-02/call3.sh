#!/usr/bin/env bash
# Combinations of the fast kernels' launch switches at B = 1-28 (built here, carried).
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git rev-parse --short HEAD)" | tee "$O/info.txt"
export LD_LIBRARY_PATH=$PWD/build-carry:${LD_LIBRARY_PATH:-}; N=build-carry/replayssm
if ! $N --help > /dev/null 2>&1; then
  ( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build build-gpu -j16 --target replayssm_cli ) > "$O/build.log" 2>&1; N=build-gpu/replayssm
  el rebuilt
fi
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { # label, args
  local lab=$1; shift
  $N bench $C "$@" 2>&1 | awk -v l="$lab" '/staggered/{printf "%-22s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6} /rror/{print}'
}
S=1,2,3,4; M=6,8,10,12,16,20,24,28; R=10,12,16,20,24,28
for m in qwen3-next kimi-linear; do
  echo "== $m"
  run "default" --model $m --batch $S,$M
  run "split=2" --cuda-split 2 --model $m --batch $S
  run "pdl=1" --cuda-pdl 1 --model $m --batch $M
  run "pf=0" --cuda-prefetch 0 --model $m --batch $M
  run "pdl=1 pf=0" --cuda-pdl 1 --cuda-prefetch 0 --model $m --batch $M
  run "rr=1" --cuda-ring-read 1 --model $m --batch $R
  run "rr=1 pf=0" --cuda-ring-read 1 --cuda-prefetch 0 --model $m --batch $R
  run "rr=0" --cuda-ring-read 0 --model $m --batch $S,6,8
  run "rr=0 pf=0" --cuda-ring-read 0 --cuda-prefetch 0 --model $m --batch $R
  run "pdl=1 rr=1 pf=0" --cuda-pdl 1 --cuda-ring-read 1 --cuda-prefetch 0 --model $m --batch $R
done | sed -e 's/pdl=1/pdl=1/' | tee "$O/sweep.txt"
build-carry/test_graph_vs_eager 2>&1 | tail -4
$N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"
el done
