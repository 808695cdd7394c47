#!/usr/bin/env bash
# Call E: GDN batches of at most 32 rows (one word of the folding-row bitmap) on the pipeline: every
# warp reads the rows' slots and cursors itself after the mbarrier barrier, and the producers take
# an item's slot and cursor from the row's lane (E, the working tree), against 1bb6fcf (K).
# Checks of E (test_cuda_pipeline now also at 24 rows), GDN replay in two alternating rounds, then
# the peer table's GDN decode rows at B = 8-64 on E. Carry [".gpu", ".whl"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
{ LD_LIBRARY_PATH=/tmp/v/E /tmp/v/E/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed|24 rows"
  LD_LIBRARY_PATH=/tmp/v/E /tmp/v/E/replayssm check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/E/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in K E; do
  bn $X gdn --model qwen3-next --batch 16,20,24,32,48
  bn $X gdn-bf16 --state bf16 --model qwen3-next --batch 16,32
  bn $X gdn-kf --state-layout kv --model qwen3-next --batch 12,16,32
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
wait
export LD_LIBRARY_PATH=/tmp/v/E PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/v/E/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/peers" --models qwen3-next --batch 8,16,32,64 --min-time 0.08 \
  --commit E 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 40 "$O/peers.log"
