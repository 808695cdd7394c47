#!/usr/bin/env bash
# Call 4: verify windows on resident CTAs (RSSM_VERIFY_RESIDENT=rows per pass, an experiment
# switch of this build, N) against per-head CTAs (N unset; HEAD F): checks with the resident
# kernel forced at 1 and 3 rows per pass, then the A/B, two rounds. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/new.txz -C /tmp/v
{ for r in 0 1 3; do
    echo "resident=$r test_cuda_pipeline: $(RSSM_VERIFY_RESIDENT=$r LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)"
    echo "resident=$r check: $(RSSM_VERIFY_RESIDENT=$r LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tail -4)"
  done; } | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --batch 128"
for r in 1 2; do for cfg in F N0 N4 N8 N16; do
    lib=${cfg:0:1}; rows=${cfg:1}
    for v in "qwen3-next --verify 4" "kimi-linear --verify 4" "qwen3-next --verify 4 --state bf16" "qwen3-next --verify 3"; do
        RSSM_VERIFY_RESIDENT=${rows:-0} LD_LIBRARY_PATH=/tmp/v/$lib /tmp/v/$lib/replayssm bench $C --model $v 2>&1 |
            awk -v c=$cfg -v r=$r -v v="$v" '/staggered/{printf "r%s %-4s %-36s %s\n", r, c, v, $0; fflush()}'
    done
done; done | tee "$O/ab.txt"
