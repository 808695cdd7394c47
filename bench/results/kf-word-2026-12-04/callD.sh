#!/usr/bin/env bash
# Call D: Y (X without the K-first KDA bf16 one-word kernels, which lost in call C; every kernel of Y
# is X's by cuobjdump). Where does KDA's one-word pipeline beat the per-head kernel? --cuda-pipeline
# 1 against the rule (-1) at 8-32 rows: V-first f32 (the rule: the pipeline from B = 38), bf16
# state (from 25), K-first f32 (from 24). Two alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/Y
C="--device cuda --model kimi-linear --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # pipeline tag args...
  local X=$1 tag=$2; shift 2
  /tmp/v/Y/replayssm bench $C --cuda-pipeline $X "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-10s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in -1 1; do
  bn $X kda --batch 8,12,16,20,24,28,32
  bn $X kda-bf16 --state bf16 --batch 12,16,20,24
  bn $X kda-kf --state-layout kv --batch 16,20,24
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
