#!/usr/bin/env bash
# Call S2 (prepared for an H200): where the planner's small-batch folds pay with a bf16 state.
# RSSM_PLAN_SMALL_BATCH_AUTO folds every row up to 2 value heads per SM (B = 8 at 32 heads), as
# bench-step measured with an f32 state (../launch-rules-2026-12-02/). With a bf16 state one
# layer's packed decode on the per-head kernel (what a folded step runs) beat replay by far more
# past that in call F4 (../peers-2026-12-05/callF4/bench.txt, H200, µs per layer call, per-head
# packed against replay): GDN B = 12 / 16 / 17 10.90 / 13.80 / 15.02 against 14.36 / 16.11 /
# 17.61, KDA 11.61 / 14.31 / 15.41 against 16.47 / 19.00 / 19.91. Whole steps (36 layers, one
# CUDA graph, the planner's drain included): packed, replay and folded, bf16 state, B = 8-32,
# with the f32 state's B = 8 and 12 beside them. Carry [".gpzN"] (a build of main with
# bench-step --state; PKG=.gpzN/pzN.txz, folder M). Writes /tmp/resS2. About 3 minutes.
set -uo pipefail
O=/tmp/resS2; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{ date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,memory.total --format=csv; } > "$O/info.txt"
rm -rf /tmp/vb && mkdir -p /tmp/vb && tar xJf "${PKG:?PKG=.gpzN/pzN.txz}" -C /tmp/vb
V=/tmp/vb/M
st() { LD_LIBRARY_PATH=$V "$V/replayssm" bench-step --device cuda --layers 36 --io bf16 "$@" |
  awk -v t="$*" '/packed step|whole replay step|every row folded/{printf "%-48s %s\n", t, $0; fflush()}' >> "$O/step$r.txt"; }
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    for B in 8 12 16 20 24 32; do st --model $m --state bf16 --batch $B; done
    for B in 8 12; do st --model $m --state f32 --batch $B; done
  done
  el "round $r"
done
