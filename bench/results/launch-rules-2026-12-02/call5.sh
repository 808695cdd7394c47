#!/usr/bin/env bash
# Peer benchmark with the new launch rules (5cd7dfd), at the batches they change. Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xzf .gpu/new.tgz
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > "$O/pip.log" 2>&1
el installed
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=$PWD/build-carry/libreplayssm.so
timeout 250 python3 bench/peers.py --out "$O/peers-qwen3-next" --models qwen3-next --batch 1,2,3,4,8,12,16,24,64 --min-time 0.1 --commit 5cd7dfd 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers-qwen3-next.log"
el qwen3-next; grep -E "^\|" "$O/peers-qwen3-next/peers.txt" 2>/dev/null || tail -n 40 "$O/peers-qwen3-next.log"
timeout 170 python3 bench/peers.py --out "$O/peers-kimi-linear" --models kimi-linear --batch 1,2,3,4,8,12,16,24 --min-time 0.1 --commit 5cd7dfd 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers-kimi-linear.log"
el kimi-linear; grep -E "^\|" "$O/peers-kimi-linear/peers.txt" 2>/dev/null || tail -n 40 "$O/peers-kimi-linear.log"
