#!/usr/bin/env bash
# Small-batch steps with the planner's drain: build this tree and db40e5c side by side, the
# CUDA checks of the change, then bench-step over small batches for both trees.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/base && tar xzf .gpu/base.tar.gz -C /tmp/base
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build build-gpu -j12 ) > "$O/build.log" 2>&1 &
( cmake -S /tmp/base -B /tmp/base/build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build /tmp/base/build -j4 --target replayssm_cli ) > "$O/build-base.log" 2>&1 &
wait; el built; tail -n2 "$O/build.log" "$O/build-base.log"
N=build-gpu/replayssm; B=/tmp/base/build/replayssm
( $N check --suite runtime --device cuda 2>&1 | grep -E "small|FAIL|passed" ) > "$O/check-runtime.txt"; el runtime; cat "$O/check-runtime.txt"
( build-gpu/test_graph_vs_eager 2>&1 | tail -9 ) > "$O/graph.txt"; el graph; cat "$O/graph.txt"
( build-gpu/test_errors 2>&1 | tail -3 ) > "$O/errors.txt"; cat "$O/errors.txt"
( compute-sanitizer --tool memcheck build-gpu/test_graph_vs_eager 3 2>&1 | tail -6 ) > "$O/memcheck.txt"; el memcheck; cat "$O/memcheck.txt"
( compute-sanitizer --tool racecheck build-gpu/test_graph_vs_eager 2 2>&1 | tail -4 ) > "$O/racecheck.txt"; el racecheck; cat "$O/racecheck.txt"
for m in qwen3-next kimi-linear; do
  for b in 1 2 4 8 12 16; do
    for t in new base; do
      X=$N; [ $t = base ] && X=$B
      r=$($X bench-step --device cuda --model $m --layers 36 --batch $b 2>&1)
      echo "$r" >> "$O/bench-step-$t.txt"
      echo "$m B=$b $t: $(echo "$r" | awk '/packed step \(N layers\)/{p=$5} /whole replay step/{r=$4} /every row folded/{f=$6} END{printf "packed %s replay %s folded %s", p, r, f}')"
    done
  done
done | tee "$O/summary.txt"
el done
