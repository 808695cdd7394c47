#!/usr/bin/env bash
# Call 4: the committed library (.gpu/final.txz F: producers by rule) at the rule's default, a
# short confirmation: GDN B = 24 / 32 / 64 (2, 2 and 3 producers by rule), KDA B = 128. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/F
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
{ /tmp/v/F/replayssm bench $C --model qwen3-next --batch 24,32,64 2>&1 | awk '/^ *[0-9].*staggered/{print "gdn", $0; fflush()}'
  /tmp/v/F/replayssm bench $C --model kimi-linear --batch 128 2>&1 | awk '/^ *[0-9].*staggered/{print "kda", $0; fflush()}'
} | tee "$O/bench.txt"
