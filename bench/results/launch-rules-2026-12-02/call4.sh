#!/usr/bin/env bash
# New launch rules and the drained step's skipped advance: checks, then A/B in one run.
# build-carry: this tree; /tmp/build-old: the old rules (with the skip); /tmp/tmp/noskip: new rules, no skip.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xzf .gpu/libs.tgz -C /tmp
NEW=$PWD/build-carry; OLD=/tmp/build-old; NOSKIP=/tmp/tmp/noskip
export LD_LIBRARY_PATH=$NEW
N=build-carry/replayssm
{ $N check --device cuda 2>&1 | tail -1; $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed";
  build-carry/test_graph_vs_eager 2>&1 | tail -3; } | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.1 --repeat 3"
for m in qwen3-next kimi-linear; do
  for t in new old; do
    L=$NEW; [ $t = old ] && L=$OLD
    LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 1,2,3,4,6,8,10,12,16,20,24,28,32,64 2>&1 | tee -a "$O/bench-$t.txt" |
      awk -v l="$m $t" '/staggered/{printf "%-18s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  done
done | tee "$O/ab.txt"
el bench
for m in qwen3-next kimi-linear; do
  for b in 1 2 4 8 16 24; do
    for t in new noskip old; do
      L=$NEW; [ $t = old ] && L=$OLD; [ $t = noskip ] && L=$NOSKIP
      [ $t = noskip ] && [ $b -gt 8 ] && continue
      [ $t = old ] && [ $b -lt 4 ] && continue
      r=$(LD_LIBRARY_PATH=$L $N bench-step --device cuda --model $m --layers 36 --batch $b 2>&1)
      echo "$r" >> "$O/bench-step-$t.txt"
      echo "$m B=$b $t: $(echo "$r" | awk '/packed step \(N layers\)/{p=$5} /whole replay step/{r=$4} /every row folded/{f=$6} END{printf "packed %s replay %s folded %s", p, r, f}')"
    done
  done
done | tee "$O/step.txt"
el done
