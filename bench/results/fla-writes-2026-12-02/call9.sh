#!/usr/bin/env bash
# Call 9: no prefetch on grids of one wave (call 8: GDN packed B = 8 11.15 -> 11.78 us, the half-wave
# prefetch fetching CTAs already resident); the float64 checks; packed around one wave; verify T = 4
# at B = 128 at the rule's half wave and at the old whole wave (--cuda-prefetch 2). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
$N check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
{ $N bench $C --model qwen3-next --batch 8,9,16,512 2>&1 | awk '/staggered/{printf "gdn-f32 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model kimi-linear --batch 8,64 2>&1 | awk '/staggered/{printf "kda-f32 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  for pf in -1 2; do $N bench $C --model qwen3-next --verify 4 --batch 128 --cuda-prefetch $pf 2>&1 | awk -v pf=$pf '/staggered/{printf "gdn verify4 prefetch %s: %s\n", pf, $0}'; done; } | tee "$O/bench.txt"
el bench
