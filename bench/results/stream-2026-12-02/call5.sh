#!/usr/bin/env bash
# Call 5: packed decode off the pipeline at every grid (bf16 state: streamed by rows from 7.5 heads per
# SM): the float64 checks at the defaults, then GDN and KDA with a bf16 state at B = 174-512. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs14.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/fin2
N=/tmp/fin2/replayssm
$N check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
{ $N bench $C --model qwen3-next --state bf16 --batch 174,256,512 2>&1 | awk '/staggered/{printf "default gdn-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --batch 174,256,512 --cuda-pipeline 1 2>&1 | awk '/staggered/{printf "pipe1   gdn-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'; } | tee "$O/bench.txt"
