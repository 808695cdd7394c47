#!/usr/bin/env bash
# Call 1, peers: the peer benchmark on aadf8c3's library with apache-tvm-ffi carried, so that SGLang's
# run-time-compiled CUDA KDA packed decode runs. Carry [".gpu2", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu2/head.txz -C /tmp
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1; cat "$O/pip.txt"
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/head/libreplayssm.so MPLBACKEND=Agg
timeout 400 python3 bench/peers.py --out "$O/peers" --models kimi-linear,qwen3-next --batch 1,8,16,32,64,128,512 --min-time 0.1 --commit aadf8c3 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 30 "$O/peers.log"
