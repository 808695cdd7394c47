#!/usr/bin/env bash
# Call 1: where a verify window's time goes in the per-head kernel (T = 4, B = 128, GDN and KDA):
# the trace build (.gpu/trace.txz, -DRSSM_PIPE_TRACE=ON; the end column's 4 bit marks a start
# fold) and the plain HEAD build (.gpu/final.txz) for the untraced time. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O/raw"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/trace.txz -C /tmp/v
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --verify 4 --batch 128"
for m in qwen3-next kimi-linear; do
    LD_LIBRARY_PATH=/tmp/v/F /tmp/v/F/replayssm bench $C --model $m 2>&1 | awk -v m=$m '/staggered/{print "plain", m, $0}'
    LD_LIBRARY_PATH=/tmp/v/T RSSM_PIPE_TRACE_FILE=$O/raw/t-$m /tmp/v/T/replayssm bench $C --model $m 2>&1 |
        awk -v m=$m '/staggered/{print "trace", m, $0}'
done | tee "$O/bench.txt"
python3 bench/k128_trace.py $O/raw/t-qwen3-next.k128.csv $O/raw/t-kimi-linear.k128.csv > "$O/trace-summary.txt" 2>&1
head -5 "$O/trace-summary.txt"
tar cJf "$O/traces.txz" -C "$O/raw" . && rm -rf "$O/raw"
