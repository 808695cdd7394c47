#!/usr/bin/env bash
# Call C: the kept tree (T: four tensor copies, L2 promotion 128 B, states at a fixed 1024-byte
# aligned offset) against main's 9576227 (M). Checks of T, then K-first f32 replay in two
# alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kt3.txz -C /tmp/v
{ LD_LIBRARY_PATH=/tmp/v/T /tmp/v/T/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/T /tmp/v/T/test_layout 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/T /tmp/v/T/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/$X/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-10s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in M T; do
  bn $X gdn-kf --model qwen3-next --batch 12,16,64,128,512
  bn $X kda-kf --model kimi-linear --batch 24,64,128,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
bn T gdn-kf-p1 --model qwen3-next --batch 8,10 --cuda-pipeline 1 | tee -a "$O/bench.txt"
bn T gdn-kf-p0 --model qwen3-next --batch 8,10 --cuda-pipeline 0 | tee -a "$O/bench.txt"
el done
