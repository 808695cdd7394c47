#!/usr/bin/env bash
# Call 3: where a folding step's time goes. ncu (clocks unlocked) of 16 consecutive GDN replay launches at
# B = 8 in phase (one of them has every row fold), old and staged library; then the fold launch and a
# plain one of the old library with source counters, the SASS page as CSV.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
tar xJf .gpu/old.txz -C /tmp
N=build-carry/replayssm
K='regex:decode_k128_kernel<\(bool\)0, \(bool\)0, \(int\)1, \(int\)1'
A="bench --device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --batch 8 --phase inphase --min-time 0.01 --repeat 1"
for v in old new; do
  L=$PWD/build-carry; [ $v = old ] && L=/tmp/old
  LD_LIBRARY_PATH=$L timeout 200 ncu --clock-control none --kernel-name-base demangled -k "$K" --launch-skip 64 --launch-count 16 \
    --section SpeedOfLight --section WarpStateStats --csv --page details $N $A > "$O/durations-$v.csv" 2> "$O/ncu-$v.err"
  echo "== $v"; grep '"Duration"' "$O/durations-$v.csv" | awk -F'","' '{printf "%s ", $NF} END{print ""}' | tr -d '"'
done
el durations
# index (0-15) of the longest and the shortest launch of the old library
read imax imin < <(grep '"Duration"' "$O/durations-old.csv" | awk -F'","' '{gsub(/"/,"",$NF); d[NR-1]=$NF+0} END{mx=0;mn=0; for(i in d){if(d[i]>d[mx])mx=i; if(d[i]<d[mn])mn=i}; print mx, mn}')
echo "fold launch $imax, plain $imin"
for p in fold:$imax plain:$imin; do
  n=${p%%:*}; i=${p##*:}
  LD_LIBRARY_PATH=/tmp/old timeout 200 ncu --clock-control none --kernel-name-base demangled -k "$K" --launch-skip $((64 + i)) --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats --section SourceCounters --section LaunchStats \
    -o /tmp/rep-$n $N $A > "$O/ncu-$n.log" 2>&1
  ncu -i /tmp/rep-$n.ncu-rep > "$O/ncu-$n.txt" 2>&1
  ncu -i /tmp/rep-$n.ncu-rep --page source --csv --print-source sass > /tmp/src-$n.csv 2> /tmp/src-$n.err || ncu -i /tmp/rep-$n.ncu-rep --page source --csv > /tmp/src-$n.csv 2>> /tmp/src-$n.err
  gzip -c /tmp/src-$n.csv > "$O/src-$n.csv.gz"; head -c 600 /tmp/src-$n.err
  grep -E "Duration|Executed Ipc A|Warp Cycles Per Issued|Executed Instructions  |No Eligible|Issued Warp" "$O/ncu-$n.txt"
done
el done
