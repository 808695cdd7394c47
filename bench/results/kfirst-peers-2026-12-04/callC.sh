#!/usr/bin/env bash
# Call C: at ae7f172 (N of call B, .gpu/b.txz): the crossing of pipeline and per-head kernel for
# K-first bf16 states at larger B; racecheck of the forced pipeline on two K-first float64 cases;
# then the peer table with --kfirst (replayssm on both layouts beside FLA's K-first and V-first rows
# and SGLang's kernels), GDN and KDA. The wheels of bench/README.md's list in .whl, sglang's without
# its Rust extensions' binaries (17 MiB its kernels do not import) to fit the 64 MiB a call
# carries. Carry [".gpu", ".whl"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/b.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/N
N=/tmp/v/N/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for p in 0 1; do
  $N bench $C --cuda-pipeline $p --state-layout kv --state bf16 --model qwen3-next --batch 28,32,40,48,64 |
    awk -v t="gdn-kf-bf16 pipe$p" '/staggered/{printf "%-18s B=%-4s pk %8s rp %8s\n", t, $1, $5, $6; fflush()}'
  $N bench $C --cuda-pipeline $p --state-layout kv --state bf16 --model kimi-linear --batch 32,40,48,64,96,128 |
    awk -v t="kda-kf-bf16 pipe$p" '/staggered/{printf "%-18s B=%-4s pk %8s rp %8s\n", t, $1, $5, $6; fflush()}'
done 2>&1 | tee "$O/crossing.txt"
el crossing
for f in "gdn/L=8/state=f32-kv,ring=f32,io=f32/H=2,HV=4,K=128" "kda/L=16/state=f32-kv,ring=bf16,io=bf16/H=2,HV=4,K=128"; do
  echo "=== compute-sanitizer --tool racecheck replayssm check --device cuda --quick --cuda-pipeline 1 --filter $f"
  timeout 120 compute-sanitizer --tool racecheck $N check --device cuda --quick --cuda-pipeline 1 --filter "$f" 2>&1 |
    grep -E "PASS|FAIL|passed|SUMMARY|rror" | head -20
done 2>&1 | tee "$O/racecheck.txt"
el racecheck
bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/v/N/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/peers" --kfirst --models qwen3-next,kimi-linear --batch 1,8,64,512 \
  --min-time 0.08 --commit ae7f172 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^#|^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 40 "$O/peers.log"
