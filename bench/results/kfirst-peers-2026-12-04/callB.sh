#!/usr/bin/env bash
# Call B: K-first replay on the pipeline (N, built on the dev VM at the commit named in the README,
# in .gpu/b.txz with its tests) against 6bbc433 (M, .gpu/a.txz), where K-first replay ran on the
# per-head kernel at every B. Bits and float64 first (N): test_cuda_pipeline (both layouts, every
# deal, against the per-head kernel), test_layout, check --quick as the rules choose and with the
# pipeline forced, racecheck of the forced pipeline; then K-first replay in alternating rounds
# M, N, M, N; then N's crossing of pipeline and per-head kernel for K-first states. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/a.txz -C /tmp/v && mv /tmp/v/T /tmp/v/M && tar xJf .gpu/b.txz -C /tmp/v
N=/tmp/v/N/replayssm
{ LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/test_layout 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/N $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/N $N check --device cuda --quick --cuda-pipeline 1 --filter K=128,V=128 2>&1 | grep -E "FAIL|kv|passed"
  LD_LIBRARY_PATH=/tmp/v/N timeout 150 compute-sanitizer --tool racecheck $N check --device cuda --quick --cuda-pipeline 1 \
    --filter K=128,V=128 2>&1 | grep -E "FAIL|passed|SUMMARY|Error|error" | head -20
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-16s %-2s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in M N; do
  bn $X gdn-kf --state-layout kv --model qwen3-next --batch 16,32,64,128,256,512
  bn $X kda-kf --state-layout kv --model kimi-linear --batch 16,32,64,128,512
  bn $X gdn-kf-bf16 --state-layout kv --model qwen3-next --state bf16 --batch 32,128,512
  bn $X gdn-vf --model qwen3-next --batch 64,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
for p in 0 1; do
  bn N "gdn-kf pipe$p" --cuda-pipeline $p --state-layout kv --model qwen3-next --batch 8,10,12,14,16,20,24
  bn N "gdn-kf-bf16 pipe$p" --cuda-pipeline $p --state-layout kv --model qwen3-next --state bf16 --batch 8,10,12,14,16,20,24
  bn N "kda-kf pipe$p" --cuda-pipeline $p --state-layout kv --model kimi-linear --batch 12,16,20,24,28,32,40
  bn N "kda-kf-bf16 pipe$p" --cuda-pipeline $p --state-layout kv --model kimi-linear --state bf16 --batch 8,12,16,20,24,28
  el "crossing pipe$p"
done 2>&1 | tee "$O/crossing.txt"
el done
