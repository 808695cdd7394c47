#!/usr/bin/env bash
# Call B: a replay step's ring weights by one reduce-scatter (R, branch next/rw-rs2) against main's
# e8521e0 (G): the bits of 20 replay steps and their states (dump_replay, GDN and KDA, f32 and bf16
# state, B = 8 per-head kernel and 64 pipeline), R's checks, replay timings in alternating rounds;
# then the peer benchmark with G: verify of 4 tokens + commit, and f32 decode (FLA and SGLang from
# their wheels). Libraries built on the dev VM (nvcc 13.0, sm_90) in .gpu/s16b.txz (T: the CLI and
# tools of 5723634, unchanged since). Carry [".gpu", ".whl"].
set -uo pipefail
# everything lands in /tmp/res, packed into $OUT/res.tgz at each milestone (the tool brings back 8 files)
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/s16b.txz -C /tmp/v
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
for X in G R; do (LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/dump_replay > "$O/hash-$X.txt" 2>&1) & done
{ LD_LIBRARY_PATH=/tmp/v/R /tmp/v/T/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/R /tmp/v/T/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  wait
  cat "$O/hash-R.txt"
  cmp -s "$O/hash-G.txt" "$O/hash-R.txt" && echo "R: every hash equal to G's" || echo "R: hashes DIFFER"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-9s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in G R; do
  bn $X gdn --model qwen3-next --batch 1,8,16,64,128,512
  bn $X kda --model kimi-linear --batch 8,64,512
  bn $X gdn-bf16 --model qwen3-next --state bf16 --batch 32,128
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
export LD_LIBRARY_PATH=/tmp/v/G PYTHONPATH=$PWD/python:/tmp/site
export REPLAYSSM_LIBRARY=/tmp/v/G/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
left=$(( 330 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/verify" --models qwen3-next,kimi-linear --verify 4 \
  --batch 1,8,64,128,512 --min-time 0.08 --commit e8521e0 2>&1 | grep -v "Warning\|warnings.warn" > "$O/verify.log"
el verify; grep -E "^\||^# partial" "$O/verify/peers.txt" 2>/dev/null || tail -n 5 "$O/verify.log"
left=$(( 580 - ($(date +%s) - T0) ))
timeout $left python3 bench/peers.py --out "$O/decode" --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit e8521e0 2>&1 | grep -v "Warning\|warnings.warn" > "$O/decode.log"
el decode; grep -E "^\||^# partial" "$O/decode/peers.txt" 2>/dev/null || tail -n 5 "$O/decode.log"
