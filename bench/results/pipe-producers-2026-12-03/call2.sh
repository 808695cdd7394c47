#!/usr/bin/env bash
# Call 2: (a) per-item traces of the replay pipeline with 2 and 3 producer warps (trace builds
# with the producer's begin / hand-over marks, .gpu/ptrace.txz T2/T3), GDN B = 32 / 64 / 512 and
# KDA B = 128; (b) checks of the variants with 3 producers; (c) A/B of the plain builds:
# X = HEAD (.gpu/final.txz), from .gpu/vars.txz X3 (3 producers), X3e (+ the state's TMA copy
# evict-first in L2), X3pe (+ L2 prefetch of the window's token inputs), X2pe (2 producers with
# both). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O/raw"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v
tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/vars.txz -C /tmp/v && tar xJf .gpu/ptrace.txz -C /tmp/v
CLI=/tmp/v/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.03 --repeat 1"
for v in T2 T3; do
    for cfg in "qwen3-next 32 staggered" "qwen3-next 64 staggered" "qwen3-next 64 inphase" "qwen3-next 512 staggered" "kimi-linear 128 staggered"; do
        set -- $cfg
        f=$O/raw/$v-$1-$2-$3.csv
        LD_LIBRARY_PATH=/tmp/v/$v RSSM_PIPE_TRACE_FILE=$f $CLI bench $C --model $1 --batch $2 --phase $3 2>&1 | awk -v l="$v" '/^ *[0-9].*(staggered|inphase)/{print l, $0}'
        python3 bench/pipe_trace.py $f
    done
done 2>&1 | tee "$O/trace-summary.txt"
(cd "$O/raw" && tar czf "$O/traces.tgz" *.csv) && rm -rf "$O/raw"
{ for v in X3 X3pe; do
    echo "$v test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/$v /tmp/v/X/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)"
    echo "$v check --quick --cuda-pipeline 1: $(LD_LIBRARY_PATH=/tmp/v/$v $CLI check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed" | tail -3)"
  done; } 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { local v=$1 lab=$2; shift 2
    LD_LIBRARY_PATH=/tmp/v/$v $CLI bench $C "$@" 2>&1 | awk -v l="$v $lab" '/^ *[0-9].*(staggered|inphase)/{print l, $0}'; }
for r in 1 2; do for v in X X3 X3e X3pe X2pe; do
    run $v gdn --model qwen3-next --batch 16,32,64,128,512
    run $v kda --model kimi-linear --batch 64,128,512
    run $v gdn-bf16 --model qwen3-next --batch 32,128 --state bf16
done; done 2>&1 | tee "$O/ab.txt"
