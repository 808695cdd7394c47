#!/usr/bin/env bash
# Call 4: SASS-level source counters (ncu, clocks unlocked) of the GDN replay launch at B = 8 in phase where
# every row folds (launch 78 of the run, as call 3 found), old and staged library, and a plain launch (79).
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
tar xJf .gpu/old.txz -C /tmp
N=build-carry/replayssm
K='regex:decode_k128_kernel<\(bool\)0, \(bool\)0, \(int\)1, \(int\)1'
A="bench --device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --batch 8 --phase inphase --min-time 0.01 --repeat 1"
for p in old:78 new:78 old:79; do
  v=${p%%:*}; i=${p##*:}
  L=$PWD/build-carry; [ $v = old ] && L=/tmp/old
  LD_LIBRARY_PATH=$L timeout 200 ncu --clock-control none --kernel-name-base demangled -k "$K" --launch-skip $i --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters -o /tmp/rep-$v-$i $N $A > /tmp/ncu-$v-$i.log 2>&1
  ncu -i /tmp/rep-$v-$i.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2> /tmp/src.err
  echo "== $v $i: $(grep -c . /tmp/src.csv) lines"; head -c 300 /tmp/src.err; ncu -i /tmp/rep-$v-$i.ncu-rep | grep -E "Duration"
  gzip -c /tmp/src.csv > "$O/src-$v-$i.csv.gz"
done
