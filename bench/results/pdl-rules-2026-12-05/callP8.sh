#!/usr/bin/env bash
# Call P8: the peer table on main 8a68725 (the per-head kernel's later pdl triggers in the rules),
# f32 state, GDN and KDA, B = 1-512, fla-core 0.6.0 and sglang 0.5.23 from .whl. The question:
# does packed GDN now match FLA from B = 16, where it trailed by 2.7-4.3% on the H200 (2fbfb04:
# 20.82 against 20.04 us at B = 16)? On an H100 the trigger after the token's preparation took B
# = 16 from 25.69 to 24.61 us (4.2%); if the H200 agrees, packed GDN is at FLA's speed at B = 16-48.
# Carry [".gpz8", ".whl"] (main 2b45496's build, M: 8a68725's kernels and rules). sglang's wheel is
# not in .whl: call Z7 left it in /tmp/whl on the same warm machine. About 5 minutes.
set -uo pipefail
cp /tmp/whl/*.whl .whl/ 2> /dev/null || echo "sglang's wheel is not in /tmp/whl (call Z7 did not run on this machine)"
O=/tmp/resP8; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v8 && mkdir -p /tmp/v8 && tar xJf .gpz8/pz8.txz -C /tmp/v8
V=/tmp/v8/M
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1 > "$O/checks.txt"
el setup
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=$V/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout $(( 560 - ($(date +%s) - T0) )) python3 bench/peers.py --out "$O/peers" --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit 2b45496 2>&1 |
  grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers
