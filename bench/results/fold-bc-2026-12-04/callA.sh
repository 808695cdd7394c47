#!/usr/bin/env bash
# Call A: the pipeline's unstaged fold with each entry's factor evaluated once per warp and shuffled
# (F, fold_ring_rows_bc in replay_pipeline.cu) against main 6a701ed (M). Checks of F (the pipeline
# against the per-head kernel, which keeps fold_ring_rows: bit for bit), then replay in two
# alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
{ LD_LIBRARY_PATH=/tmp/v/F /tmp/v/F/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/F /tmp/v/F/replayssm check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/F/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in M F; do
  bn $X gdn --model qwen3-next --batch 12,16,32,64,128,512
  bn $X kda --model kimi-linear --batch 24,64,128,512
  bn $X gdn-bf16 --state bf16 --model qwen3-next --batch 16,32,128
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
