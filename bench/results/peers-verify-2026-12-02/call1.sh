#!/usr/bin/env bash
# Prepared for the next session's first device call: the peer benchmark's verify rows (never run yet),
# then decode peers again for the record. Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
( python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > "$O/pip.log" 2>&1 ) &
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON && cmake --build build-gpu -j16 --target replayssm replayssm_cli ) > "$O/build.log" 2>&1
wait; el built; tail -n1 "$O/build.log"
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=$PWD/build-gpu/libreplayssm.so
for m in qwen3-next kimi-linear; do
  timeout 240 python3 bench/peers.py --out "$O/verify-$m" --models $m --verify 4 --batch 1,8,64,128,512 --min-time 0.1 2>&1 | grep -v "Warning\|warnings.warn" > "$O/verify-$m.log"
  el "verify $m"; tail -n 25 "$O/verify-$m.log"
done
