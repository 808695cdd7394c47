#!/usr/bin/env bash
# Call 6: compute-sanitizer memcheck on the streaming kernel's bitwise test (every case, 4 / 8 / 16 rows per
# warp against the per-head kernel). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs15.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/san
timeout 170 compute-sanitizer --tool memcheck --leak-check no /tmp/san/test_cuda_stream 2>&1 | grep -E "FAIL|passed|ERROR SUMMARY|Invalid|out of bounds" | tee "$O/sanitizer.txt"
