#!/usr/bin/env bash
# Call D: verify of 4 tokens + commit against the peers (SGLang's, FlashInfer's MTP), GDN and KDA.
# Carry [".whl", ".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
[ -d /tmp/fisite/flashinfer ] || echo "FlashInfer is not here (the machine was not kept): it skips"
tar xJf .gpu/libs.txz -C /tmp
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
export LD_LIBRARY_PATH=/tmp/X
export PYTHONPATH=$PWD/python:/tmp/site:/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages
export REPLAYSSM_LIBRARY=/tmp/X/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout 500 python3 bench/peers.py --out "$O/verify" --models qwen3-next,kimi-linear --verify 4 \
  --batch 1,8,64,128,512 --min-time 0.08 --commit 423ecd7 2>&1 | grep -v "Warning\|warnings.warn" > "$O/verify.log"
el verify; grep -E "^#|^\||^##" "$O/verify/peers.txt" 2>/dev/null || tail -n 40 "$O/verify.log"
