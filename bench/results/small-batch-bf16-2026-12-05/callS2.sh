#!/usr/bin/env bash
# Call S2 (prepared for an H200): where the planner's small-batch folds pay with a bf16 state.
# RSSM_PLAN_SMALL_BATCH_AUTO folds every row up to 2 value heads per SM (B = 8 at 32 heads), as
# bench-step measured with an f32 state (../launch-rules-2026-12-02/). With a bf16 state one
# layer's packed decode on the per-head kernel (what a folded step runs) beat replay by far more
# past that in call F4 (../peers-2026-12-05/callF4/bench.txt, H200, µs per layer call, per-head
# packed against replay): GDN B = 12 / 16 / 17 10.90 / 13.80 / 15.02 against 14.36 / 16.11 /
# 17.61, KDA 11.61 / 14.31 / 15.41 against 16.47 / 19.00 / 19.91. Whole steps (36 layers, one
# CUDA graph, the planner's drain included): packed, replay and folded, bf16 state, B = 8-32,
# with the f32 state's B = 8 and 12 beside them. With PKG2, a build of main with
# stream-fold-every.patch (git am; the streaming kernel takes small-batch steps, B = 8 and 14-16
# with a bf16 state, with the per-head kernel's row check; not yet run on a GPU), first its
# test_cuda_stream (bit for bit against the per-head kernel, and a row that does not fold), then
# the same bf16 steps. Last, the streaming kernel's programmatic launch on this GPU (the rules launch
# it so at every B from H100 calls only, stream-pdl-2026-12-05/): bf16 packed decode by the rules
# against --cuda-pdl 0, B = 24-512 (bench$r.txt). Carry [".gpzN"] (and ".gpzM"; a build of main
# with bench-step --state; PKG=.gpzN/pzN.txz, PKG2=.gpzM/pzM.txz, folder M in each). Writes
# /tmp/resS2. About 6 minutes (8 with PKG2).
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resS2
V1=$(call_unpack /tmp/vb "${PKG:?PKG=.gpzN/pzN.txz}") || exit 1
V2=
if [ -n "${PKG2:-}" ]; then
  V2=$(call_unpack /tmp/vb2 "$PKG2") || exit 1
  LD_LIBRARY_PATH=$V2 timeout 180 "$V2/test_cuda_stream" > "$O/stream-patched.txt" 2>&1
  tail -1 "$O/stream-patched.txt"
  el "test_cuda_stream (patched)"
fi
# st BUILD ARGS...: bench-step's packed, replay and folded lines, tagged with the build and ARGS
st() { local v=$1; shift
  LD_LIBRARY_PATH=$v "$v/replayssm" bench-step --device cuda --layers 36 --io bf16 "$@" |
    awk -v t="${v#/tmp/} $*" '/packed step|whole replay step|every row folded/{printf "%-52s %s\n", t, $0; fflush()}' \
      >> "$O/step$r.txt"; }
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    for B in 8 12 16 20 24 32; do st "$V1" --model $m --state bf16 --batch $B; done
    for B in 8 12; do st "$V1" --model $m --state f32 --batch $B; done
    if [ -n "$V2" ]; then
      for B in 8 14 16; do st "$V2" --model $m --state bf16 --batch $B; done
    fi
  done
  el "round $r"
done
V=$V1
C="--device cuda --state bf16 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    bench_rows "$m/rule" "$O/bench$r.txt" $C --model $m --batch 24,32,64,128,512
    bench_rows "$m/pdl0" "$O/bench$r.txt" $C --model $m --batch 24,32,64,128,512 --cuda-pdl 0
  done
  el "stream pdl, round $r"
done
