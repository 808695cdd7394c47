#!/usr/bin/env bash
# Call Q2 (after Q1, which found the per-head kernel 3.1% faster than the replay pipeline for GDN
# with an f32 state at B = 64 and 80 on an H100, 61.21 / 73.81 against 63.17 / 76.17 us, where the
# H200 had the pipeline ahead from B = 12): where does that cross, and does KDA agree? Replay, f32
# state, the rules (the pipeline from B = 12 GDN, 38 KDA) against the per-head kernel
# (--cuda-pipeline 0), GDN B = 32-512, KDA B = 48-512, two rounds. Carry [".gpz9"]. About 2 minutes.
set -uo pipefail
O=/tmp/resQ2; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/vq && mkdir -p /tmp/vq && tar xJf .gpz9/pz9.txz -C /tmp/vq
V=/tmp/vq/M
C="--device cuda --state f32 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench$r.txt"; }
for r in 1 2; do
  bn gdn/rule --model qwen3-next --batch 32,40,48,56,64,96,128,256,512
  bn gdn/perhead --model qwen3-next --batch 32,40,48,56,64,96,128,256,512 --cuda-pipeline 0
  bn kda/rule --model kimi-linear --batch 48,64,128,512
  bn kda/perhead --model kimi-linear --batch 48,64,128,512 --cuda-pipeline 0
  el "round $r"
done
