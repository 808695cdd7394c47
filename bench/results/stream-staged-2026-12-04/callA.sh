#!/usr/bin/env bash
# Call A: packed decode streamed by rows with 32 rows per warp staged in shared memory
# (--cuda-stream 32) against the launch rules (-1), one library (S = 834a52a plus the staged
# kernels). Bits first (test_cuda_stream: 32 rows per warp against the per-head kernel), then two
# alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/S
/tmp/v/S/test_cuda_stream > "$O/test_cuda_stream.txt" 2>&1; echo "rc=$?" >> "$O/test_cuda_stream.txt"
tail -3 "$O/test_cuda_stream.txt"; el tests
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # switch tag args...
  local X=$1 tag=$2; shift 2
  /tmp/v/S/replayssm bench $C --cuda-stream $X "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-10s %-3s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in -1 32; do
  bn $X gdn-bf16 --state bf16 --model qwen3-next --batch 1,4,8,16,32,64,512
  bn $X gdn --model qwen3-next --batch 1,4,8,16,32,64,512
  bn $X kda-bf16 --state bf16 --model kimi-linear --batch 1,8,16,32,64
  bn $X kda --model kimi-linear --batch 8,16,64
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
