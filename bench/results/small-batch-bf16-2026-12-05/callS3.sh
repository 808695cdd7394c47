#!/usr/bin/env bash
# Call S3: main with the streaming kernel's small-batch path (102c66a) and the bf16 limits of
# RSSM_PLAN_SMALL_BATCH_AUTO: the runtime suites on CUDA (test_runtime cuda, test_graph_vs_eager),
# test_cuda_stream, test_launch_rules; then bench-step with a bf16 state at B = 16-32, where call S2
# timed folded steps only on the per-head kernel. Carry [".gpzC"] (PKG=.gpzC/pzC.txz: the library,
# replayssm and those tests, folder M). Writes /tmp/resS3. About 3 minutes.
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resS3
V=$(call_unpack /tmp/vs3 "${PKG:?PKG=.gpzC/pzC.txz}") || exit 1
for t in "test_runtime cuda" test_graph_vs_eager test_cuda_stream test_launch_rules; do
  n=${t%% *}
  LD_LIBRARY_PATH=$V timeout 180 $V/$t > "$O/$n.txt" 2>&1
  echo "$n: $(tail -1 "$O/$n.txt")" | tee -a "$O/checks.txt"
done
el "checks"
st() {
  LD_LIBRARY_PATH=$V "$V/replayssm" bench-step --device cuda --layers 36 --io bf16 "$@" |
    awk -v t="$*" '/packed step|whole replay step|every row folded/{printf "%-44s %s\n", t, $0; fflush()}' >> "$O/step$r.txt"
}
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    for B in 16 20 24 28 32; do st --model $m --state bf16 --batch $B; done
  done
  el "round $r"
done
