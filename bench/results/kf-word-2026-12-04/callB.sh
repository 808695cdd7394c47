#!/usr/bin/env bash
# Call B: the kept tree (998f4b3, whose machine code is call A's W by cuobjdump) under racecheck on
# a K-first GDN case of the quick matrix with the pipeline forced (a one-word batch: the new
# kernels), then the peer table with --kfirst (fla-core 0.6.0, sglang 0.5.23 from .whl), then
# replayssm at B = 1 / 2 with --cuda-pdl 0 (is the programmatic launch active in the harness?).
# Carry [".gpu", ".whl"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/H
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
f="gdn/L=8/state=f32-kv,ring=f32,io=f32/H=2,HV=4,K=128"
{ echo "=== compute-sanitizer --tool racecheck replayssm check --device cuda --quick --cuda-pipeline 1 --filter $f"
  timeout 110 compute-sanitizer --tool racecheck /tmp/v/H/replayssm check --device cuda --quick --cuda-pipeline 1 \
    --filter "$f" 2>&1 | grep -E "PASS|FAIL|passed|SUMMARY|rror" | head -20; } > "$O/racecheck.txt"
wait
cat "$O/racecheck.txt"
el racecheck
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/v/H/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 470 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/peers" --kfirst --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit 998f4b3 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null | head -40 || tail -n 40 "$O/peers.log"
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/peers-nopdl" --models qwen3-next --batch 1,2 --min-time 0.08 \
  --cuda-pdl 0 --commit 998f4b3 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers-nopdl.log"
el nopdl; grep -E "^\|" "$O/peers-nopdl/peers.txt" 2>/dev/null | head -8
