#!/usr/bin/env bash
# Call 2: V4 = HEAD with only the replay pipeline's metadata (slot, fold flag, cursor, ring base:
# the folding rows' bitmap and the producers' window) read evict-last in L2, against F = HEAD
# e362392 (.gpu/final.txz), three rounds; checks of V4. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/vars.txz -C /tmp/v
(cd /tmp/v/V4 && ln -sf libreplayssm.so.0.4.0 libreplayssm.so.0.4 && ln -sf libreplayssm.so.0.4 libreplayssm.so)
CLI=/tmp/v/F/replayssm
{ echo "V4 test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/V4 /tmp/v/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
  echo "V4 check --quick --cuda-pipeline 1: $(LD_LIBRARY_PATH=/tmp/v/V4 $CLI check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
} 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { local v=$1 lab=$2; shift 2
    LD_LIBRARY_PATH=/tmp/v/$v $CLI bench $C "$@" 2>&1 | awk -v l="r$r $v $lab" '/^ *[0-9]/{print l, $0; fflush()}'; }
for r in 1 2 3; do for v in F V4; do
    run $v gdn --model qwen3-next --batch 16,24,32,64,128,512
    run $v kda --model kimi-linear --batch 48,64,128,512
    run $v gdn-bf16 --model qwen3-next --batch 16,32,128 --state bf16
done; done 2>&1 | tee "$O/ab.txt"
