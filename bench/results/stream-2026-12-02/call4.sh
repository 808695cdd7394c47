#!/usr/bin/env bash
# Call 4: the kept rules at their defaults (packed decode with a bf16 state streamed by 16-row warps
# from 7.5 heads per SM; KDA's bf16 packed decode off the pipeline; GDN's on it from B = 174): the
# bitwise tests, the float64 checks and the runtime suite at the defaults, then the CLI bench with no
# switch forced. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs13.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/fin
N=/tmp/fin/replayssm
{ /tmp/fin/test_cuda_stream 2>&1 | grep -E "FAIL|passed"
  /tmp/fin/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
{ $N bench $C --model qwen3-next --state bf16 --batch 8,24,31,32,64,128,173,174,512 2>&1 | awk '/staggered/{printf "default gdn-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model kimi-linear --state bf16 --batch 8,24,31,32,64,128,512 2>&1 | awk '/staggered/{printf "default kda-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model qwen3-next --batch 8,64,512 2>&1 | awk '/staggered/{printf "default gdn-f32  B=%-4s pk %8s rp %8s\n", $1, $5, $6}'; } | tee "$O/bench.txt"
el bench
