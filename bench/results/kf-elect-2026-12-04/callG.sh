#!/usr/bin/env bash
# Call G: K-first f32 replay below call E's batches, per-head kernel against pipeline (library X,
# .gpu/kfx.txz). Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kfx.txz -C /tmp/v
N=/tmp/v/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # tag args...
  local tag=$1; shift
  LD_LIBRARY_PATH=/tmp/v/X $N bench $C "$@" | awk -v t="$tag" '/staggered/{printf "%-18s B=%-4s pk %8s rp %8s\n", t, $1, $5, $6; fflush()}'
}
for r in 1 2; do for P in 0 1; do
  bn gdn-kf-p$P --state-layout kv --cuda-pipeline $P --model qwen3-next --batch 11
  bn kda-kf-p$P --state-layout kv --cuda-pipeline $P --model kimi-linear --batch 12,16,20,22
  el "round $r pipeline $P"
done; done 2>&1 | tee "$O/crossing.txt"
el done
