#!/usr/bin/env bash
# Small-batch steps: the drain plus packed decode's kernel with its row check in round 1.
# Checks on CUDA, then bench-step over small batches.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(git rev-parse --short HEAD 2>/dev/null) + working tree" | tee "$O/info.txt"
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build build-gpu -j16 ) > "$O/build.log" 2>&1
el built; tail -n1 "$O/build.log"
N=build-gpu/replayssm
{ $N check --device cuda 2>&1 | tail -2; $N check --suite runtime --device cuda 2>&1 | grep -E "small|FAIL|passed";
  build-gpu/test_graph_vs_eager 2>&1 | tail -5; build-gpu/test_errors 2>&1 | tail -1;
  (cd build-gpu && ctest -R "spill_waits|layout" 2>&1 | tail -3); } > "$O/checks.txt" 2>&1
el checks; grep -E "FAIL|passed|tests" "$O/checks.txt"
sum() { awk '/packed step \(N layers\)/{p=$5} /whole replay step/{r=$4} /every row folded/{f=$6} /begin \+ 1 layer/{o=$7} /begin \+ end/{z=$4} END{printf "packed %s replay %s folded %s T1 %s T0 %s", p, r, f, o, z}'; }
for m in qwen3-next kimi-linear; do for b in 1 2 4 8 12 16 24; do
  $N bench-step --device cuda --model $m --layers 36 --batch $b > "$O/bench-step-$m-$b.txt" 2>&1
  echo "$m B=$b: $(sum < "$O/bench-step-$m-$b.txt")"
done; done | tee "$O/summary.txt"
el done
