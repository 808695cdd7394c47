#!/usr/bin/env bash
# Call G: do the one-word start's kernels (E, da529a1) lose where the batch is more than one word?
# Call F's peer run had K-first replay 3-4% slower at B = 64 / 128 than call D's (1bb6fcf, K).
# K against E, replay with the folding rows first beyond one word, two alternating rounds; no
# checks (both libraries were checked in calls D and E). Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/E/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in K E; do
  bn $X gdn-kf --state-layout kv --model qwen3-next --batch 24,64,128
  bn $X gdn-kf-bf16 --state-layout kv --state bf16 --model qwen3-next --batch 64,128
  bn $X gdn --model qwen3-next --batch 64,128
  bn $X gdn-bf16 --state bf16 --model qwen3-next --batch 64
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
