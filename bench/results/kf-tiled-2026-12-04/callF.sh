#!/usr/bin/env bash
# Call F: K-first packed decode staged by tensor copies as well (P, the working tree: the new state
# written back into the tiles and stored from them) against da03d20 (N: padded blocks). Checks of P,
# then K-first packed decode (the bench's packed column; its replay column runs the same kernels in
# both) in two alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
{ LD_LIBRARY_PATH=/tmp/v/P /tmp/v/P/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/P /tmp/v/P/test_layout 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/P /tmp/v/P/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/P/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in N P; do
  bn $X gdn-kf --model qwen3-next --batch 16,64,512
  bn $X kda-kf --model kimi-linear --batch 64,512
  bn $X gdn-kf-bf16 --state bf16 --model qwen3-next --batch 8,16,64,512
  bn $X kda-kf-bf16 --state bf16 --model kimi-linear --batch 64,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
