#!/usr/bin/env bash
# Call 7: the staged fold in one round of 16 entries (v8) against 8 at a time (v7 = ac496ac): checks, A/B;
# then the peer benchmark for GDN at the batches the staged fold moves, with the faster of the two.
# Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
( python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /tmp/pip.log 2>&1 ) &
N=/tmp/v8/replayssm
{ LD_LIBRARY_PATH=/tmp/v8 $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed|bitwise"
  LD_LIBRARY_PATH=/tmp/v8 $N check --device cuda 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks-v8.txt"
el checks
C="--device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.1 --repeat 3"
for r in 1 2; do for v in v8 v7; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --batch 8,12,16,20,24,28 2>&1 | awk -v l="$v" '/staggered/{printf "%-4s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/ab.txt"
best=$(awk '{s[$1]+=$5} END{print (s["v8"] < s["v7"] - 0.2) ? "v8" : "v7"}' "$O/ab.txt"); echo "peers with $best" | tee -a "$O/ab.txt"
el ab
wait
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/$best/libreplayssm.so
timeout 330 python3 bench/peers.py --out "$O/peers" --models qwen3-next --batch 8,12,16,20,24,28,32 --min-time 0.1 --commit "ac496ac-$best" 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^\|" "$O/peers/peers.txt" 2>/dev/null || tail -n 30 "$O/peers.log"
