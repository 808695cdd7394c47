#!/usr/bin/env bash
# Session 2026-12-02b, call 1: checks of c8a2bc5 / 0b2c747 / 16202b3 (never run on a GPU), then the
# fold's cost in the replay step: staggered against in-phase at B = 4-28 with the library as is and two
# timing-only variants (exp1: the end fold stores no checkpoint when it folds ring entries; exp2: it
# folds no ring entries). Carry [".gpu", "build-carry"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git rev-parse --short HEAD)" | tee "$O/info.txt"
tar xJf .gpu/exp.txz -C /tmp
export LD_LIBRARY_PATH=$PWD/build-carry; N=build-carry/replayssm
{ build-carry/test_graph_vs_eager 2>&1 | tail -4
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda 2>&1 | tail -1
  $N check --device cuda --quick --cuda-prefetch 0 2>&1 | tail -1
  $N check --device cuda --quick --cuda-prefetch 2 2>&1 | tail -1
  build-carry/test_errors 2>&1 | tail -1; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --phase both"
for m in qwen3-next kimi-linear; do
  for v in main exp1 exp2; do
    L=$PWD/build-carry; [ $v != main ] && L=/tmp/$v
    LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 4,8,12,16,20,24,28 2>&1 | tee -a "$O/bench-$m-$v.txt" |
      awk -v l="$m $v" '/staggered|inphase/{printf "%-22s B=%-4s %-9s pk %8s rp %8s\n", l, $1, $3, $5, $6}'
  done
done | tee "$O/fold.txt"
el done
