#!/usr/bin/env bash
# Call G: the crossings call F pointed at. Packed decode of a bf16 state as a programmatic launch
# at B = 5-9 (grids of one to two value heads per SM); replay on the pipeline against the
# per-head kernel below the rule's crossing; GDN replay's whole-ring read, two rounds. CLI bench,
# random slots, staggered rows. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { # label, switches, bench args
  local label=$1 sw=$2; shift 2
  $N bench $sw $C "$@" 2>&1 | awk -v l="$label" '/staggered/{printf "%-40s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
}
for m in qwen3-next kimi-linear; do for p in 0 1; do
  run "$m bf16 pdl $p" "--cuda-pdl $p" --model $m --state bf16 --batch 5,6,7,8,9
done; done | tee "$O/pdl-bf16.txt"
for p in 0 1; do
  run "qwen3-next f32 pipeline $p" "--cuda-pipeline $p" --model qwen3-next --batch 9,10,11,12,14,16,18
  run "qwen3-next bf16 pipeline $p" "--cuda-pipeline $p" --model qwen3-next --state bf16 --batch 9,10,11,12,14,16,18
  run "kimi-linear f32 pipeline $p" "--cuda-pipeline $p" --model kimi-linear --batch 16,20,24,28,32,36
  run "kimi-linear bf16 pipeline $p" "--cuda-pipeline $p" --model kimi-linear --state bf16 --batch 12,16,20,24
done | tee "$O/pipeline.txt"
for round in 1 2; do for r in 0 1; do
  run "qwen3-next f32 ring-read $r round $round" "--cuda-ring-read $r --cuda-pipeline 0" --model qwen3-next --batch 8,12,16,24,32
done; done | tee "$O/ring-read.txt"
