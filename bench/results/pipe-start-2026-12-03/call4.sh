#!/usr/bin/env bash
# Call 4: V6 = V4 with the producers using an item's gate inputs and fold flag after its state
# copy up to 12 heads per CTA (rssm_pipe_late_inputs), V4's order beyond; checks, and A/B of V4
# against V6, two rounds. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/vars.txz -C /tmp/v
for d in V4 V6; do (cd /tmp/v/$d && ln -sf libreplayssm.so.0.4.0 libreplayssm.so.0.4 && ln -sf libreplayssm.so.0.4 libreplayssm.so); done
CLI=/tmp/v/F/replayssm
{ echo "V6 test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/V6 /tmp/v/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
  echo "V6 check --quick --cuda-pipeline 1: $(LD_LIBRARY_PATH=/tmp/v/V6 $CLI check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
} 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { local v=$1 lab=$2; shift 2
    LD_LIBRARY_PATH=/tmp/v/$v $CLI bench $C "$@" 2>&1 | awk -v l="r$r $v $lab" '/^ *[0-9]/{print l, $0; fflush()}'; }
for r in 1 2; do for v in V4 V6; do
    run $v gdn --model qwen3-next --batch 16,32,48,64,128,512
    run $v kda --model kimi-linear --batch 40,48,64,128
    run $v gdn-bf16 --model qwen3-next --batch 32,48,128 --state bf16
done; done 2>&1 | tee "$O/ab.txt"
