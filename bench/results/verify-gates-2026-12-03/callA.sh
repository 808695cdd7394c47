#!/usr/bin/env bash
# Call A: a verify window's gates spread over all warps (G, branch next/gates-spread) against
# 5723634's kernels (F2 = ee3f303's build, machine code equal to 5723634's), bit for bit
# (dump_window on a 20-slot pool, every case of T = 1..8) and timed; KDA's ring weights with 1 or 2
# tokens per warp (A, B of ../verify-weights-2026-12-03/); then the peer benchmark's verify rows
# with F2. Libraries built on the dev VM (nvcc 13.0, sm_90) in .gpu/s16.txz. Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/s16.txz -C /tmp/v
for X in A B G; do cp /tmp/v/F2/replayssm /tmp/v/$X/; done # the CLI takes the library from the path
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
for X in F2 G; do (LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/F2/dump_window_q - > "$O/hash-$X.txt" 2>&1) & done
{ for X in G F2; do
    echo "== $X"
    LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/F2/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
    LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/$X/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  done; wait
  cmp -s "$O/hash-F2.txt" "$O/hash-G.txt" && echo "G: every hash equal to F2's" || echo "G: hashes DIFFER"
  grep -c ": [0-9a-f]*$" "$O/hash-F2.txt"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/$X/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in F2 G A B; do
  bn $X kda-T4 --model kimi-linear --verify 4 --batch 8,128,512
  bn $X kda-T4-bf16 --model kimi-linear --state bf16 --verify 4 --batch 128
  if [ $X = F2 ] || [ $X = G ]; then
    bn $X gdn-T4 --model qwen3-next --verify 4 --batch 8,128,512
    bn $X gdn-T3 --model qwen3-next --verify 3 --batch 128
    bn $X gdn-T4-bf16 --model qwen3-next --state bf16 --verify 4 --batch 128
  fi
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
export LD_LIBRARY_PATH=/tmp/v/F2 PYTHONPATH=$PWD/python:/tmp/site
export REPLAYSSM_LIBRARY=/tmp/v/F2/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/verify" --models qwen3-next,kimi-linear --verify 4 \
  --batch 1,8,64,128,512 --min-time 0.08 --commit 5723634 2>&1 | grep -v "Warning\|warnings.warn" > "$O/verify.log"
el verify; grep -E "^\||^# partial" "$O/verify/peers.txt" 2>/dev/null || tail -n 5 "$O/verify.log"
