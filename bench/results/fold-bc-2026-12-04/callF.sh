#!/usr/bin/env bash
# Call F: the kept tree (ee28c09; its machine code is da529a1's, call E's E, by cuobjdump) under
# racecheck on two K = 128 GDN cases of the quick matrix with the pipeline forced (batches of
# one bitmap word), then the peer table with --kfirst (fla-core 0.6.0, sglang 0.5.23 from .whl).
# Carry [".gpu", ".whl"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/E
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
i=0
for f in "gdn/L=16/state=f32,ring=bf16,io=bf16/H=2,HV=4,K=128" "gdn/L=8/state=f32-kv,ring=f32,io=f32/H=2,HV=4,K=128"; do
  i=$((i + 1))
  { echo "=== compute-sanitizer --tool racecheck replayssm check --device cuda --quick --cuda-pipeline 1 --filter $f"
    timeout 110 compute-sanitizer --tool racecheck /tmp/v/E/replayssm check --device cuda --quick --cuda-pipeline 1 \
      --filter "$f" 2>&1 | grep -E "PASS|FAIL|passed|SUMMARY|rror" | head -20; } > "$O/racecheck$i.txt" &
done
wait
cat "$O"/racecheck*.txt > "$O/racecheck.txt"
cat "$O/racecheck.txt"
el racecheck
wait
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/v/E/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 560 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/peers" --kfirst --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit ee28c09 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 40 "$O/peers.log"
