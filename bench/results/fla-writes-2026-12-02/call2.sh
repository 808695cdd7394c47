#!/usr/bin/env bash
# Call 2: the GDN peer table with FLA's kernel also in place ("inplace", checked bit for bit
# against its entry first), and packed decode of an f32 state streamed by 4 / 8 / 16 rows per warp
# against the per-head kernel at B = 8-512. Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for m in qwen3-next kimi-linear; do for s in 0 4 8 16; do
  $N bench $C --model $m --cuda-stream $s --batch 8,16,24,32,48,64,128,512 2>&1 | awk -v m=$m -v s=$s '/staggered/{printf "%s f32 stream %2s B=%-4s pk %8s\n", m, s, $1, $5}'
done; done | tee "$O/stream-f32.txt"
el stream
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/X/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout 400 python3 bench/peers.py --out "$O/peers" --models qwen3-next --batch 1,2,4,8,12,16,24,32,64,128,512 --min-time 0.1 --commit a3e06eb+peers 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 30 "$O/peers.log"
