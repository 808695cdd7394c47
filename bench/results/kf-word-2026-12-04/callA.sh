#!/usr/bin/env bash
# Call A: the K-first GDN one-word start as its own instantiation (BAL_WORD). M is 07f0d6f (main),
# W is M plus the instantiation: the 199 kernels of M are unchanged by cuobjdump, 8 new ones.
# Checks of W (test_cuda_pipeline: replay at 24 rows on every layout; check --quick with the
# pipeline forced), then M against W in two alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
LD_LIBRARY_PATH=/tmp/v/W /tmp/v/W/test_cuda_pipeline > "$O/test_cuda_pipeline.txt" 2>&1; echo "rc=$?" >> "$O/test_cuda_pipeline.txt"
tail -3 "$O/test_cuda_pipeline.txt"; el tests
LD_LIBRARY_PATH=/tmp/v/W /tmp/v/W/replayssm check --device cuda --quick --cuda-pipeline 1 > "$O/check.txt" 2>&1; echo "rc=$?" >> "$O/check.txt"
tail -3 "$O/check.txt"; el check
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/W/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in M W; do
  bn $X gdn-kf --state-layout kv --model qwen3-next --batch 12,16,20,24,32,48
  bn $X gdn-kf-bf16 --state-layout kv --state bf16 --model qwen3-next --batch 16,24,32
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
