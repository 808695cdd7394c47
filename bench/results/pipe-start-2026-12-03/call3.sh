#!/usr/bin/env bash
# Call 3: V5 = V4 (eaef5ed) with a launch switch: at most RSSM_EXP_LATE heads per CTA (a
# temporary environment variable of this build), the producers read the fold flag in their
# metadata window and convert the gate inputs only after the state's copy is issued (call 1's
# V1, which gained at GDN B = 16-32 and lost from B = 64). Checks with every launch late; A/B
# of V4 against V5 at 0 (= V4's order, the switch's cost), 8 and 12 heads per CTA, two rounds.
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/vars.txz -C /tmp/v
for d in V4 V5; do (cd /tmp/v/$d && ln -sf libreplayssm.so.0.4.0 libreplayssm.so.0.4 && ln -sf libreplayssm.so.0.4 libreplayssm.so); done
CLI=/tmp/v/F/replayssm
{ echo "V5 late test_cuda_pipeline: $(RSSM_EXP_LATE=1000 LD_LIBRARY_PATH=/tmp/v/V5 /tmp/v/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
  echo "V5 late check --quick --cuda-pipeline 1: $(RSSM_EXP_LATE=1000 LD_LIBRARY_PATH=/tmp/v/V5 $CLI check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
} 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { local v=$1 lab=$2 late=$3; shift 3
    RSSM_EXP_LATE=$late LD_LIBRARY_PATH=/tmp/v/$v $CLI bench $C "$@" 2>&1 | awk -v l="r$r $v/$late $lab" '/^ *[0-9]/{print l, $0; fflush()}'; }
for r in 1 2; do for vl in V4:0 V5:0 V5:8 V5:12; do
    v=${vl%:*}; late=${vl#*:}
    run $v gdn $late --model qwen3-next --batch 12,16,24,32,48,64
    run $v kda $late --model kimi-linear --batch 40,48
    run $v gdn-bf16 $late --model qwen3-next --batch 16,24,32,48 --state bf16
done; done 2>&1 | tee "$O/ab.txt"
