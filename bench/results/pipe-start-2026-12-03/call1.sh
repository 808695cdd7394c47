#!/usr/bin/env bash
# Call 1: the replay pipeline's start. X = HEAD e362392 (.gpu/final.txz F); from .gpu/vars.txz:
# V1 = the producer's fold flag read in its metadata window and its gate inputs converted after
# the state's copy is issued, with the metadata (slot, fold flag, cursor, ring base) read
# evict-last in L2; V2 = V1 with plain metadata loads; V3 = V1 with the per-head kernel
# (decode_k128.cu) reading its metadata evict-last as well (and no memory clobber on those
# loads); T1 = V1's trace build. (a) checks of V1-V3, (b) per-item traces of T1, (c) A/B, two
# rounds (V2 in the first only), verify windows of F and V3. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O/raw"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/vars.txz -C /tmp/v
for d in V1 V2 V3 T1; do (cd /tmp/v/$d && ln -sf libreplayssm.so.0.4.0 libreplayssm.so.0.4 && ln -sf libreplayssm.so.0.4 libreplayssm.so); done
CLI=/tmp/v/F/replayssm
{ for v in V1 V2 V3; do
    echo "$v test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/$v /tmp/v/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
    echo "$v check --quick --cuda-pipeline 1: $(LD_LIBRARY_PATH=/tmp/v/$v $CLI check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed|failed" | tail -3)"
  done; } 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.03 --repeat 1"
for cfg in "qwen3-next 16" "qwen3-next 64" "qwen3-next 512" "kimi-linear 128"; do
    set -- $cfg
    f=$O/raw/T1-$1-$2.csv
    LD_LIBRARY_PATH=/tmp/v/T1 RSSM_PIPE_TRACE_FILE=$f $CLI bench $C --model $1 --batch $2 --phase staggered 2>&1 | awk '/^ *[0-9].*staggered/{print "T1", $0; fflush()}'
    python3 bench/pipe_trace.py $f
done 2>&1 | tee "$O/trace-summary.txt"
(cd "$O/raw" && tar czf "$O/traces.tgz" *.csv) && rm -rf "$O/raw"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { local v=$1 lab=$2 lib=$3; shift 3
    LD_LIBRARY_PATH=$lib $CLI bench $C "$@" 2>&1 | awk -v l="$v $lab" '/^ *[0-9]/{print l, $0; fflush()}'; }
for r in 1 2; do for v in F V1 V3 V2; do
    [ $r = 2 ] && [ $v = V2 ] && continue
    run $v gdn /tmp/v/$v --model qwen3-next --batch 8,12,16,32,64,128,512
    run $v kda /tmp/v/$v --model kimi-linear --batch 64,128,512
    run $v gdn-bf16 /tmp/v/$v --model qwen3-next --batch 32,128 --state bf16
    if [ $v = F ] || [ $v = V3 ]; then
        run $v gdn-verify4 /tmp/v/$v --model qwen3-next --verify 4 --batch 128
        run $v kda-verify4 /tmp/v/$v --model kimi-linear --verify 4 --batch 128
    fi
done; done 2>&1 | tee "$O/ab.txt"
