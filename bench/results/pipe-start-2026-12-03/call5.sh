#!/usr/bin/env bash
# Call 5: V7 = fbcfb43 with the per-head kernel (decode_k128.cu) reading the step's metadata
# evict-last in packed decode and replay (not verify), against F = e362392 (the same per-head
# kernel as fbcfb43), B <= 12 (the per-head kernel's batches), two rounds. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/vars.txz -C /tmp/v
(cd /tmp/v/V7 && ln -sf libreplayssm.so.0.4.0 libreplayssm.so.0.4 && ln -sf libreplayssm.so.0.4 libreplayssm.so)
CLI=/tmp/v/F/replayssm
echo "V7 check --quick: $(LD_LIBRARY_PATH=/tmp/v/V7 timeout 60 $CLI check --device cuda --quick 2>&1 | grep -E "FAIL|passed|failed" | tail -3)" | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { local v=$1 lab=$2; shift 2
    LD_LIBRARY_PATH=/tmp/v/$v $CLI bench $C "$@" 2>&1 | awk -v l="r$r $v $lab" '/^ *[0-9]/{print l, $0; fflush()}'; }
for r in 1 2; do for v in F V7; do
    run $v gdn --model qwen3-next --batch 1,2,4,8,12
    run $v kda --model kimi-linear --batch 1,4,8
done; done 2>&1 | tee "$O/ab.txt"
