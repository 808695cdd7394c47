#!/usr/bin/env bash
# Call 10: the staged fold's u staged in halves (t2: 28 / 28 bytes of spills, none before the first barrier) against d7a32a2 (v11):
# checks, the in-phase fold launch under ncu (GDN B = 8), A/B of GDN replay at B = 4-28. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
N=/tmp/t2/replayssm
{ LD_LIBRARY_PATH=/tmp/t2 $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed|bitwise"
  LD_LIBRARY_PATH=/tmp/t2 $N check --device cuda 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
K='regex:decode_k128_kernel<\(bool\)0, \(bool\)0, \(int\)1, \(int\)1'
A="bench --device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --batch 8 --phase inphase --min-time 0.01 --repeat 1"
for v in t2 v11; do
  LD_LIBRARY_PATH=/tmp/$v timeout 100 ncu --clock-control none --kernel-name-base demangled -k "$K" --launch-skip 77 --launch-count 3 \
    --section SpeedOfLight $N $A 2>&1 | grep -E "Duration" | tr -s ' ' | tr '\n' ' '; echo " $v (launch 78 folds)"
done | tee "$O/ncu.txt"
el checks
C="--device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.1 --repeat 3"
for r in 1 2; do for v in t2 v11; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --batch 4,8,12,16,20,24,28 2>&1 | awk -v l="$v" '/staggered/{printf "%-4s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/ab.txt"
el done
