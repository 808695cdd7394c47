#!/usr/bin/env bash
# Call P9: the f32 peer table (GDN and KDA, B = 1-512, fla-core 0.6.0 and sglang 0.5.23 from .whl)
# on a build of main, owed on the H200 since the pdl triggers of 8a68725 (../pdl-rules-2026-12-05/
# call P8 ran on an H100). sglang's wheel is not in .whl: an earlier call on the same warm machine
# left it in /tmp/whl (cp .wsg/*.whl /tmp/whl/). Carry [".gpzN", ".whl"]; PKG=.gpzN/pzN.txz (folder
# M), COMMIT=the build's commit. Writes /tmp/resP9. About 3 minutes.
set -uo pipefail
cp /tmp/whl/*.whl .whl/ 2> /dev/null || echo "sglang's wheel is not in /tmp/whl: SGLang skips"
O=/tmp/resP9; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v9 && mkdir -p /tmp/v9 && tar xJf "${PKG:?PKG=.gpzN/pzN.txz}" -C /tmp/v9
V=/tmp/v9/M
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1 > "$O/checks.txt"
el setup
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=$V/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout $(( 560 - ($(date +%s) - T0) )) python3 bench/peers.py --out "$O/peers" --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit "${COMMIT:?}" 2>&1 |
  grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers
