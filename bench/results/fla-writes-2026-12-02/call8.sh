#!/usr/bin/env bash
# Call 8: the prefetch change on the GPU: bitwise tests, float64 checks, runtime suite; the CLI
# bench's headline cells; the peer table, GDN and KDA. Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
N=/tmp/X/replayssm
{ /tmp/X/test_cuda_stream 2>&1 | grep -E "FAIL|passed"
  /tmp/X/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  /tmp/X/test_graph_vs_eager 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
{ $N bench $C --model qwen3-next --batch 1,8,64,512 2>&1 | awk '/staggered/{printf "gdn-f32 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model kimi-linear --batch 1,8,64,512 2>&1 | awk '/staggered/{printf "kda-f32 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'; } | tee "$O/bench.txt"
el bench
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/X/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout 250 python3 bench/peers.py --out "$O/peers" --models qwen3-next,kimi-linear --batch 1,8,16,32,64,128,512 --min-time 0.1 --commit 8b0f5b3 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 30 "$O/peers.log"
