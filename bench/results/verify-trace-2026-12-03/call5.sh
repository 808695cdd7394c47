#!/usr/bin/env bash
# Call 5: the kept tree (ff465d6, H: the start fold on the FP64 tensor cores) against c14c1ba (F)
# over batch sizes, verify of 4 tokens, GDN and KDA, two rounds; checks of H. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/head.txz -C /tmp/v
{ echo "test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/H /tmp/v/H/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)"
  echo "check: $(LD_LIBRARY_PATH=/tmp/v/H /tmp/v/H/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tail -4)"; } | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --verify 4 --batch 1,8,64,128,512"
for r in 1 2; do for lib in F H; do for m in qwen3-next kimi-linear; do
    LD_LIBRARY_PATH=/tmp/v/$lib /tmp/v/$lib/replayssm bench $C --model $m 2>&1 |
        awk -v l=$lib -v r=$r -v m=$m '/staggered/{printf "r%s %s %-12s %s\n", r, l, m, $0; fflush()}'
done; done; done | tee "$O/ab.txt"
