#!/usr/bin/env bash
# Call C: the pipeline's GDN end folds with the folding rows first (BAL) staged as f32 in the state
# buffer (fold_ring_rows_staged, 43 instructions per entry and warp, the stage held through the
# fold) as the plain order's are, under RSSM_EXP_STAGE_FOLD=1 (S, an experiment build), against S
# with 0 and F2 (5d76833: the unstaged fold by shuffled factors). Checks of S with staging on
# (bit for bit against the per-head kernel), then GDN f32 replay in two alternating rounds.
# Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
{ RSSM_EXP_STAGE_FOLD=1 LD_LIBRARY_PATH=/tmp/v/S /tmp/v/S/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  RSSM_EXP_STAGE_FOLD=1 LD_LIBRARY_PATH=/tmp/v/S /tmp/v/S/replayssm check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib stage tag args...
  local X=$1 sf=$2 tag=$3; shift 3
  RSSM_EXP_STAGE_FOLD=$sf LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/S/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X$sf '/staggered/{printf "%-10s %-3s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for V in "F2 0" "S 0" "S 1"; do
  bn $V gdn --model qwen3-next --batch 16,20,24,32,48,64,128
  el "round $r $V"
done; done 2>&1 | tee "$O/bench.txt"
el done
