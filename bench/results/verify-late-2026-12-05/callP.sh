#!/usr/bin/env bash
# Call P (after call V): the peer benchmark's verify table with L3, the late-read windows at 3 CTAs
# an SM (its decode_k128 machine code is the default branch's, by cuobjdump): verify of 4 tokens
# plus the commit, replayssm against SGLang's spec paths and packed verify, in one process.
# Carry [".gpw", ".whl"] (.gpw/pw.txz: L3's library, 3 MB; .whl: the peers' wheels, 46 MB).
set -uo pipefail
O=/tmp/resP; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/resP.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/w && mkdir -p /tmp/w && tar xJf .gpw/pw.txz -C /tmp/w
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1; el wheels
export LD_LIBRARY_PATH=/tmp/w/L3 PYTHONPATH=$PWD/python:/tmp/site
export REPLAYSSM_LIBRARY=/tmp/w/L3/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout $(( 560 - ($(date +%s) - T0) )) python3 bench/peers.py --out "$O/verify" --models qwen3-next,kimi-linear \
  --verify 4 --batch 1,8,64,128,512 --min-time 0.08 --commit "${COMMIT:-L3}" 2>&1 |
  grep -v "Warning\|warnings.warn" > "$O/verify.log"
el verify; grep -E "^\||^# partial" "$O/verify/peers.txt" 2>/dev/null || tail -n 5 "$O/verify.log"
