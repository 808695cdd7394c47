#!/usr/bin/env bash
# The planner's small-batch folds (rssm_plan_set_small_batch) on a GPU: the runtime suite on
# CUDA (its small-batch cases included), then `bench-step` over small batches for the GDN and
# KDA presets (36 layers, one CUDA graph per step): packed decode, replay, and replay with every
# row folded every step. Prints a table (and CSV) of the three and their ratios.
#   bench/run_small_batch.sh OUTDIR [BUILD_DIR] [BATCHES]
set -uo pipefail
out=${1:?usage: bench/run_small_batch.sh OUTDIR [BUILD_DIR] [BATCHES]}
b=${2:-build}/replayssm
batches=${3:-1 2 4 8 12 16 24 32 48 64}
mkdir -p "$out"
log="$out/gpu-bench-step-small.txt"
{
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
  echo "commit: ${RSSM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "=== replayssm check --suite runtime --device cuda"
  $b check --suite runtime --device cuda | grep -E 'small|FAIL|passed'
  for model in qwen3-next kimi-linear; do
    for B in $batches; do
      echo "=== replayssm bench-step --device cuda --model $model --layers 36 --batch $B"
      $b bench-step --device cuda --model "$model" --layers 36 --batch "$B"
    done
  done
} > "$log" 2>&1
# model, B, packed us, replay us, folded us (from the bench-step lines)
awk '/^=== replayssm bench-step/ { m = $7; B = $11 }
     /packed step \(N layers\)/ { pk = $5 }
     /whole replay step/ { rp = $4 }
     /every row folded/ { printf "%s,%s,%s,%s,%s,%.3f,%.3f\n", m, B, pk, rp, $6, pk / rp, pk / $6 }' "$log" \
  > "$out/gpu-bench-step-small.csv"
grep -E 'small|FAIL|passed' "$log"
echo "model,B,packed_us,replay_us,folded_us,replay_x,folded_x"
cat "$out/gpu-bench-step-small.csv"
