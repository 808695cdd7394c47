#!/usr/bin/env bash
# Call 3: where GDN f32 decode loses its last 3-5% of copy bandwidth at large B (FLA's in-place
# kernel reached 97.7% of the copy at B = 512, our packed 94.5% seq / 89.7% rnd, replay ~94%):
# programmatic launch and the L2 prefetch off, each and together, seq and random slots; then the
# DRAM bytes of whole graphs (ncu --graph-profiling graph) against the byte model. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --model qwen3-next"
for so in seq random; do for sw in "" "--cuda-pdl 0" "--cuda-prefetch 0" "--cuda-pdl 0 --cuda-prefetch 0"; do
  $N bench $C --slot-order $so $sw --batch 64,128,512 2>&1 | awk -v so=$so -v sw="${sw:-default}" '/staggered/{printf "%-6s %-32s B=%-4s pk %8s rp %8s\n", so, sw, $1, $5, $6}'
done; done | tee "$O/switches.txt"
el switches
for so in seq random; do
  timeout 150 ncu --graph-profiling graph --launch-count 40 --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    $N bench $C --slot-order $so --batch 512 --min-time 0.01 --repeat 1 > "$O/ncu-graph-$so.txt" 2>&1
  grep -E "staggered|working|dram__|gpu__time|==ERR" "$O/ncu-graph-$so.txt" | awk "{print \$1, \$2, \$3, \$NF}" | head -150
done
el ncu
