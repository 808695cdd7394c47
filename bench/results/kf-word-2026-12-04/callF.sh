#!/usr/bin/env bash
# Call F: the peer table with --kfirst on the final tree (2fbfb04: call E's Z; fla-core 0.6.0,
# sglang 0.5.23 from .whl). Carry [".gpu", ".whl"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
export LD_LIBRARY_PATH=/tmp/v/Z PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/v/Z/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout 330 python3 bench/peers.py --out "$O/peers" --kfirst --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit 2fbfb04 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^\|" "$O/peers/peers.txt" 2>/dev/null | head -30 || tail -n 40 "$O/peers.log"
