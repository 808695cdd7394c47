#!/usr/bin/env bash
# Call V: the merge, checked and timed. E is main with the unrolled streaming kernel, the rule
# for early chunk loads (from 40 value heads per SM) and GDN's bf16 streaming from B = 24; S is
# call S's library (today's main before the merge: the rolled loop). test_cuda_stream now also
# runs 176 rows (early loads), then `check --quick` on the GPU, then both libraries by the rules
# with a bf16 state; last, the per-head kernel with a bf16 state at B = 8-24 (FlashInfer leads at
# 16 and 32) over its CTAs per head and programmatic launch, forced. Carry [".gpv"]: E/ (libreplayssm.so*, replayssm, test_cuda_stream,
# test_launch_rules: a CUDA Release build of the commit), S/ (libreplayssm.so* as in call Q);
# tar cJf .gpv/pv.txz -C DIR E S.
set -uo pipefail
O=/tmp/resV; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpv/pv.txz -C /tmp/v
V=/tmp/v/E
( LD_LIBRARY_PATH=$V timeout 150 "$V/test_cuda_stream"; LD_LIBRARY_PATH=$V "$V/test_launch_rules" | tail -1
  LD_LIBRARY_PATH=$V timeout 150 "$V/replayssm" check --device cuda --quick | tail -3 ) > "$O/checks.txt" 2>&1; el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
# library, tag, bench flags
bn() { local lib=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-12s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for r in 1 2; do
  for l in E S; do
    bn $l $l/gdn --model qwen3-next --batch 24,28,32,64,128,192,512
    bn $l $l/kda --model kimi-linear --batch 32,128,192,512
  done
  el "round $r"
done
for sp in 1 2 4; do
  for pdl in 0 1; do
    bn E "E/s$sp-pdl$pdl" --model qwen3-next --batch 8,12,16,20,24 --cuda-stream 0 --cuda-split $sp --cuda-pdl $pdl
  done
done
el "per-head switches"
