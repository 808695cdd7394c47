#!/usr/bin/env bash
# Call X (prepared, not run: the session's device time was spent): why the streaming kernel, 13%
# faster than the per-head kernel alone at GDN B = 16 with a bf16 state (call W, ncu: 14.14 against
# 16.22 µs), is 2% slower in the bench's graphs (call R: 13.99 against 13.69). What the bench has
# and ncu removes is the programmatic launch (pdl), which takes the per-head kernel from 15.21 to
# 13.72 µs at B = 16 (call V). If the streaming kernel gains less from it, the per-head kernel's
# overlap is what it lacks; then a streaming kernel that overlaps as much (more of its rows
# prefetched before the wait, say) should lead at B = 12-24. Both kernels, pdl forced off and on,
# GDN and KDA, B = 12-28, two rounds. Carry [".gpv"] (call V's package; E = 5506dca, whose kernels
# are main's).
set -uo pipefail
O=/tmp/resX; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpv/pv.txz -C /tmp/v
V=/tmp/v/E
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-18s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    for rw in 0 16; do
      for pdl in 0 1; do bn "$m/rw$rw/pdl$pdl" --model $m --batch 12,16,20,24,28 --cuda-stream $rw --cuda-pdl $pdl; done
    done
  done
  el "round $r"
done
