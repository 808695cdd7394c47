#!/usr/bin/env bash
# Call 2: the end fold from a staged f32 ring (fold_ring_rows_staged): checks (the pool's copy-then-steps
# against the in-place fold is bitwise), then A/B against the previous library (old.txz) in one run.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git rev-parse --short HEAD)+staged" | tee "$O/info.txt"
tar xJf .gpu/old.txz -C /tmp
export LD_LIBRARY_PATH=$PWD/build-carry; N=build-carry/replayssm
{ build-carry/test_graph_vs_eager 2>&1 | tail -2
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed|bitwise"
  $N check --device cuda 2>&1 | grep -E "FAIL|passed"
  build-carry/test_errors 2>&1 | tail -1; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.1 --repeat 3"
for m in qwen3-next kimi-linear; do
  for r in 1 2; do for v in new old; do
    L=$PWD/build-carry; [ $v = old ] && L=/tmp/old
    LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 1,4,8,12,16,20,24,28,64 2>&1 | tee -a "$O/bench-$m-$v.txt" |
      awk -v l="$m $v" '/staggered/{printf "%-22s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  done; done
done | tee "$O/ab.txt"
el bench
for m in qwen3-next kimi-linear; do for v in new old; do
  L=$PWD/build-carry; [ $v = old ] && L=/tmp/old
  LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 8,16 --ring f32 2>&1 | awk -v l="$m $v ring f32" '/staggered/{printf "%-30s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 8,16 --state-layout kv 2>&1 | awk -v l="$m $v kv" '/staggered/{printf "%-30s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=$L $N bench $C --model $m --batch 8,16 --state bf16 2>&1 | awk -v l="$m $v state bf16" '/staggered/{printf "%-30s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/ab-variants.txt"
el done
