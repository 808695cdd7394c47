#!/usr/bin/env bash
# Call D: Q (main + X + P, .gpu/kpd.txz) against N (main + X + W, call B's library; W touches only
# the verify windows, so N's pipeline is X's). P: K-first blocks staged padded (16 bytes after each)
# instead of rotated, one bulk copy a block from one lane, plain shared-memory addresses. Carry [".gpu"].
# Prediction (call B's ncu, GDN B = 512 replay: K-first executes 158.4M instructions against V-first's
# 134.9M, at the same issue rate; the block copies' per-lane loop, R2UR/ELECT/UBLKCP and address
# arithmetic, is about 10M of the 24M more): K-first replay and packed on the pipeline 3-6% faster
# at B = 512, V-first unchanged.
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kpd.txz -C /tmp/v
N=/tmp/v/Q/replayssm
{ for t in test_cuda_pipeline test_layout; do echo "$t: $(LD_LIBRARY_PATH=/tmp/v/Q /tmp/v/Q/$t 2>&1 | grep -E "FAIL|passed" | tail -3)"; done
  echo "check --filter -kv: $(LD_LIBRARY_PATH=/tmp/v/Q timeout 150 $N check --device cuda --filter -kv 2>&1 | grep -E "FAIL|passed" | tail -3)"
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-18s %s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in N Q; do
  bn $X gdn-kf-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --batch 64,512
  bn $X kda-kf-pipe --state-layout kv --cuda-pipeline 1 --model kimi-linear --batch 512
  bn $X gdn-kf-bf16-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --state bf16 --batch 8,64,512
  bn $X kda-kf-bf16-pipe --state-layout kv --cuda-pipeline 1 --model kimi-linear --state bf16 --batch 16
  bn $X gdn-vf-control --model qwen3-next --batch 512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
