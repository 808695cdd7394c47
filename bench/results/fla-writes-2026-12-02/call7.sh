#!/usr/bin/env bash
# Call 7: the prefetch distance (CTAs ahead in launch order) at a quarter, half and three quarters
# of sm_count against a3e06eb's sm_count ("base"); call 6's "half" took random B = 512 from 562.0
# to 540.7 us and its DRAM reads to the model's. GDN f32 seq / random, KDA f32 and GDN bf16 state
# random. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp; tar xJf .gpu/var.txz -C /tmp
mkdir -p /tmp/V/base; cp -a /tmp/X/libreplayssm.so.0.4* /tmp/V/base/
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3"
for v in base q half tq; do
  for so in seq random; do
    LD_LIBRARY_PATH=/tmp/V/$v $N bench $C --model qwen3-next --slot-order $so --batch 16,32,64,128,512 2>&1 | awk -v v=$v -v so=$so '/staggered/{printf "%-5s gdn-f32  %-6s B=%-4s pk %8s rp %8s\n", v, so, $1, $5, $6}'
  done
  LD_LIBRARY_PATH=/tmp/V/$v $N bench $C --model kimi-linear --slot-order random --batch 16,64,512 2>&1 | awk -v v=$v '/staggered/{printf "%-5s kda-f32  random B=%-4s pk %8s rp %8s\n", v, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/V/$v $N bench $C --model qwen3-next --state bf16 --slot-order random --batch 16,24 2>&1 | awk -v v=$v '/staggered/{printf "%-5s gdn-bf16 random B=%-4s pk %8s rp %8s\n", v, $1, $5, $6}'
done | tee "$O/distance.txt"
el bench
