#!/usr/bin/env bash
# Call F: launch switches at small batches where FlashInfer's bf16-state decode (B = 8-32) and
# SGLang's ReplaySSM (GDN f32, B = 12-16) lead: each switch forced against the rule, CLI bench,
# random slots, staggered rows. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { # label, global switches, bench args
  local label=$1 sw=$2; shift 2
  $N bench $sw $C "$@" 2>&1 | awk -v l="$label" '/staggered/{printf "%-34s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
}
for m in qwen3-next kimi-linear; do
  for sw in "" "--cuda-split 4" "--cuda-split 1" "--cuda-pdl 1" "--cuda-pdl 0" "--cuda-prefetch 1" "--cuda-stream 16" "--cuda-ring-read 1" "--cuda-ring-read 0"; do
    run "$m bf16 ${sw:-default}" "$sw" --model $m --state bf16 --batch 4,8,12,16,24,32
  done
done | tee "$O/switches-bf16.txt"
for sw in "" "--cuda-split 2" "--cuda-pdl 1" "--cuda-ring-read 0" "--cuda-pipeline 1" "--cuda-prefetch 1"; do
  run "qwen3-next f32 ${sw:-default}" "$sw" --model qwen3-next --batch 8,12,16,20
done | tee "$O/switches-f32.txt"
