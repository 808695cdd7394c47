#!/usr/bin/env bash
# Call 6 (ac496ac, the staged end fold for GDN f32 only): checks; SASS source counters of the in-phase fold
# launch (GDN B = 8, launch 78); A/B against 16202b3 (old.txz) at B = 4-28, both gates.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git rev-parse --short HEAD)" | tee "$O/info.txt"
tar xJf .gpu/old.txz -C /tmp
export LD_LIBRARY_PATH=$PWD/build-carry; N=build-carry/replayssm
{ build-carry/test_graph_vs_eager 2>&1 | tail -1
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed|bitwise"
  $N check --device cuda 2>&1 | grep -E "FAIL|passed"
  build-carry/test_errors 2>&1 | tail -1; } 2>&1 | tee "$O/checks.txt"
el checks
K='regex:decode_k128_kernel<\(bool\)0, \(bool\)0, \(int\)1, \(int\)1'
A="bench --device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --batch 8 --phase inphase --min-time 0.01 --repeat 1"
timeout 200 ncu --clock-control none --kernel-name-base demangled -k "$K" --launch-skip 78 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters -o /tmp/rep $N $A > /tmp/ncu.log 2>&1
ncu -i /tmp/rep.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2> /tmp/src.err
ncu -i /tmp/rep.ncu-rep | grep -E "Duration"; gzip -c /tmp/src.csv > "$O/src-staged-78.csv.gz"
el ncu
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.1 --repeat 3"
for m in qwen3-next kimi-linear; do
  for v in new old; do
    L=$PWD/build-carry; [ $v = old ] && L=/tmp/old
    LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 4,8,12,16,20,24,28 2>&1 | tee -a "$O/bench-$m-$v.txt" |
      awk -v l="$m $v" '/staggered/{printf "%-22s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  done
done | tee "$O/ab.txt"
el done
