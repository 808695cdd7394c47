#!/usr/bin/env bash
# Call 2: finer marks in the verify window's trace (gates done, a start fold's arithmetic and its
# stores issued), and ncu's per-instruction stall samples of the GDN T = 4 window (B = 128, the
# plain HEAD build). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O/raw"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/trace.txz -C /tmp/v
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --verify 4 --batch 128"
for m in qwen3-next kimi-linear; do
    LD_LIBRARY_PATH=/tmp/v/T RSSM_PIPE_TRACE_FILE=$O/raw/t-$m /tmp/v/T/replayssm bench $C --min-time 0.05 --repeat 3 --model $m 2>&1 |
        awk -v m=$m '/staggered/{print "trace", m, $0}'
done | tee "$O/bench.txt"
tar cJf "$O/traces.txz" -C "$O/raw" . && rm -rf "$O/raw"
export LD_LIBRARY_PATH=/tmp/v/F
timeout 240 ncu --section SourceCounters --section WarpStateStats --section InstructionStats -k regex:decode_k128_kernel \
    --launch-skip 40 --launch-count 1 -o /tmp/rep /tmp/v/F/replayssm bench $C --model qwen3-next --min-time 0.01 --repeat 1 \
    > "$O/ncu-run.txt" 2>&1
ncu -i /tmp/rep.ncu-rep --page details --print-details all > "$O/ncu-details.txt" 2>&1
ncu -i /tmp/rep.ncu-rep --page source --print-source sass --csv > "$O/ncu-sass.csv" 2>&1
xz -9 "$O/ncu-sass.csv"; ls -la "$O"; head -c 600 "$O/ncu-details.txt"
