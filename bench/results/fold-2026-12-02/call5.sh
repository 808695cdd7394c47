#!/usr/bin/env bash
# Call 5: the staged end fold with keys staged by quads (one exponential per entry and quad): checks, ncu of
# the in-phase fold launch (B = 8), then A/B against the previous library (old.txz) in one run.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
tar xJf .gpu/old.txz -C /tmp
export LD_LIBRARY_PATH=$PWD/build-carry; N=build-carry/replayssm
{ $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed|bitwise"
  $N check --device cuda 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
K='regex:decode_k128_kernel<\(bool\)0, \(bool\)0, \(int\)1, \(int\)1'
A="bench --device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --batch 8 --phase inphase --min-time 0.01 --repeat 1"
for v in new old; do
  L=$PWD/build-carry; [ $v = old ] && L=/tmp/old
  LD_LIBRARY_PATH=$L timeout 100 ncu --clock-control none --kernel-name-base demangled -k "$K" --launch-skip 77 --launch-count 3 \
    --section SpeedOfLight $N $A 2>&1 | grep -E "Duration" | tr -s ' ' | tr '\n' ' '; echo " $v (launch 78 folds)"
done | tee "$O/ncu.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.1 --repeat 3"
for m in qwen3-next kimi-linear; do
  for v in new old; do
    L=$PWD/build-carry; [ $v = old ] && L=/tmp/old
    LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 1,4,8,12,16,20,24,28 2>&1 | tee -a "$O/bench-$m-$v.txt" |
      awk -v l="$m $v" '/staggered/{printf "%-22s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
    LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 8,16 --state bf16 2>&1 | awk -v l="$m $v state bf16" '/staggered/{printf "%-22s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  done
done | tee "$O/ab.txt"
el done
