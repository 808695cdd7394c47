#!/usr/bin/env bash
# Call 4: verify windows on resident CTAs (rssm_context_params.cuda_verify_rows, this build P)
# against a CTA per head and row (--cuda-verify-rows 0; HEAD c14c1ba's F): checks (the bitwise
# test runs both; the float64 matrix by rule and at 1 and 3 rows at a time), then the A/B, two
# rounds. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/new.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/N
{ echo "test_cuda_pipeline: $(/tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)"
  for r in -1 3; do
    echo "check --cuda-verify-rows $r: $(/tmp/v/N/replayssm check --device cuda --quick --cuda-verify-rows $r 2>&1 | grep -E "FAIL|passed" | tail -4)"
  done; } | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --batch 128"
for r in 1 2; do for cfg in F N-1 N0 N4; do
    lib=${cfg:0:1}; rows=${cfg:1}; sw=""; [ -n "$rows" ] && sw="--cuda-verify-rows $rows"
    for v in "qwen3-next --verify 4" "kimi-linear --verify 4" "qwen3-next --verify 4 --state bf16" "qwen3-next --verify 3"; do
        LD_LIBRARY_PATH=/tmp/v/$lib /tmp/v/$lib/replayssm bench $C $sw --model $v 2>&1 |
            awk -v c=$cfg -v r=$r -v v="$v" '/staggered/{printf "r%s %-4s %-36s %s\n", r, c, v, $0; fflush()}'
    done
done; done | tee "$O/ab.txt"
