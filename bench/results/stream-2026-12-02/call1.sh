#!/usr/bin/env bash
# Call 1: A/B of "first copy first" (fcf: with the folding rows first, a CTA's first stage copies go out
# one after another, each after the one before has landed) against aadf8c3 (head), GDN and KDA, f32 and
# bf16 state, B = 19-160, two rounds. Carry [".gpu"]. (call1-peers.sh follows on the warm machine.)
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs10.txz -C /tmp
N=/tmp/head/replayssm
LD_LIBRARY_PATH=/tmp/fcf /tmp/fcf/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for v in head fcf; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --batch 19,24,32,48,64,96,128,160 2>&1 | awk -v l="$v" '/staggered/{printf "%-5s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --state bf16 --batch 19,32,64,128 2>&1 | awk -v l="$v" '/staggered/{printf "%-5s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model kimi-linear --batch 38,48,64,96,128 2>&1 | awk -v l="$v" '/staggered/{printf "%-5s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model kimi-linear --state bf16 --batch 25,32,64 2>&1 | awk -v l="$v" '/staggered/{printf "%-5s kda-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/ab.txt"
el ab
