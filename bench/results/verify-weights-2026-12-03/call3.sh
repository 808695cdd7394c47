#!/usr/bin/env bash
# Call 3, prepared for the next session's first device call (not run yet; the libraries wait in
# .gpu/next.txz on the dev VM: H = ff465d6, A and B = call 2's, F2 = ee3f303 as committed).
# F2's own checks; KDA's ring weights with 1 or 2 tokens per warp (A, B) against H, two rounds;
# then the peer benchmark with F2: verify of 4 tokens + commit, and f32 decode, FLA and SGLang from
# their wheels. Carry [".gpu", ".whl"] (without .whl/apache_tvm_ffi*: the carry's 64 MiB).
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/next.txz -C /tmp/v
for X in A B; do cp /tmp/v/H/replayssm /tmp/v/$X/; done # the CLI takes the library from the path
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
{ LD_LIBRARY_PATH=/tmp/v/F2 /tmp/v/F2/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/F2 /tmp/v/F2/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"; } | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/$X/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in H A B; do
  bn $X kda-T4 --model kimi-linear --verify 4 --batch 8,128,512
  bn $X kda-T4-bf16 --model kimi-linear --state bf16 --verify 4 --batch 128
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
wait
export LD_LIBRARY_PATH=/tmp/v/F2 PYTHONPATH=$PWD/python:/tmp/site
export REPLAYSSM_LIBRARY=/tmp/v/F2/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 330 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/verify" --models qwen3-next,kimi-linear --verify 4 \
  --batch 1,8,64,128,512 --min-time 0.08 --commit ee3f303 2>&1 | grep -v "Warning\|warnings.warn" > "$O/verify.log"
el verify; grep -E "^\|" "$O/verify/peers.txt" 2>/dev/null || tail -n 5 "$O/verify.log"
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/peers-f32" --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit ee3f303 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers-f32.log"
el decode; grep -E "^\|" "$O/peers-f32/peers.txt" 2>/dev/null || tail -n 5 "$O/peers-f32.log"
