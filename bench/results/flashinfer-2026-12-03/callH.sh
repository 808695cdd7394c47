#!/usr/bin/env bash
# Call H: 6b82fa2's launch rules on the GPU: bitwise tests and float64 checks; the CLI bench at the
# batches the rules changed; the peer table (GDN f32 with FLA and SGLang; bf16 state, replayssm
# alone: FlashInfer's wheels did not fit this call). Carry [".whl", ".gpu"].
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
  $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
{ $N bench $C --model qwen3-next --state bf16 --batch 5,8,9 | awk '/staggered/{printf "gdn-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model kimi-linear --state bf16 --batch 5,8,9 | awk '/staggered/{printf "kda-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model qwen3-next --batch 4,8,12,15,16,18,32 | awk '/staggered/{printf "gdn-f32 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'; } 2>&1 | tee "$O/bench.txt"
el bench
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/X/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout 150 python3 bench/peers.py --out "$O/peers-bf16" --state bf16 --models qwen3-next,kimi-linear --batch 4,8,16,32 \
  --min-time 0.08 --commit 6b82fa2 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers-bf16.log"
timeout 200 python3 bench/peers.py --out "$O/peers-f32" --models qwen3-next --batch 8,16,32,64 \
  --min-time 0.08 --commit 6b82fa2 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers-f32.log"
el peers; grep -E "^\||^##" "$O/peers-bf16/peers.txt" "$O/peers-f32/peers.txt" 2>/dev/null || tail -n 30 "$O"/peers-*.log
