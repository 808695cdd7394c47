#!/usr/bin/env bash
# Call D: K-first GDN folds on the pipeline by shuffled factors, one entry a round (K, 1bb6fcf)
# against 5d76833 (F2: V-first only). Checks of K (bit for bit against the per-head kernel, which
# keeps fold_ring_rows), K-first replay in two alternating rounds, then the peer table with
# --kfirst on K (its V-first kernels are F2's, by cuobjdump): fla-core 0.6.0 and sglang 0.5.23
# from .whl. Carry [".gpu", ".whl"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
{ LD_LIBRARY_PATH=/tmp/v/K /tmp/v/K/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/K /tmp/v/K/replayssm check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/K/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in F2 K; do
  bn $X gdn-kf --model qwen3-next --batch 12,16,32,64,128
  bn $X gdn-kf-bf16 --state bf16 --model qwen3-next --batch 16,32,128
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
wait
export LD_LIBRARY_PATH=/tmp/v/K PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/v/K/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/peers" --kfirst --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit 1bb6fcf 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 40 "$O/peers.log"
