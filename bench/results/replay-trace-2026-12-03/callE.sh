#!/usr/bin/env bash
# Call E: the kept trace (marks that only store) at B = 8 and 14, and the final plain build
# (.gpu/final.txz: the trace compiled out) against 770c382 (.gpu/libs.txz), checks first.
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O/raw"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/old /tmp/fin /tmp/T
tar xJf .gpu/libs.txz -C /tmp/old && tar xJf .gpu/final.txz -C /tmp/fin && tar xJf .gpu/trace.txz -C /tmp/T
{ for t in test_cuda_stream test_cuda_pipeline test_graph_vs_eager; do
      echo "$t: $(LD_LIBRARY_PATH=/tmp/fin/X /tmp/fin/X/$t 2>&1 | grep -E "FAIL|passed" | tail -3)"; done
  echo "check: $(LD_LIBRARY_PATH=/tmp/fin/X /tmp/fin/X/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tail -3)"; } | tee "$O/checks.txt"
C="--device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for lib in old fin old fin; do
    LD_LIBRARY_PATH=/tmp/$lib/X /tmp/$lib/X/replayssm bench $C --batch 1,8,14 2>&1 | awk -v l=$lib '/^ *[0-9].*staggered/{print l, $0}'
done | tee "$O/ab.txt"
for B in 8 14; do
    LD_LIBRARY_PATH=/tmp/T RSSM_PIPE_TRACE_FILE=$O/raw/t-b$B /tmp/T/replayssm bench $C --batch $B > "$O/trace-b$B.txt" 2>&1
    echo "trace B=$B: $(grep -E '^ +'$B' ' "$O/trace-b$B.txt" | tr -s ' ')"
done
python3 bench/k128_trace.py $O/raw/t-b8.k128.csv $O/raw/t-b14.k128.csv > "$O/trace-summary.txt" 2>&1
grep -E "csv|spans" "$O/trace-summary.txt"; head -12 "$O/trace-summary.txt"
rm -rf "$O/raw"
