#!/usr/bin/env bash
# Diagnostic (not a product path): RSSM_DIAG=1 launches the folded layers as plain packed decode,
# 2 replaces the drain with a one-CTA fold-flag kernel, 3 both.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build build-gpu -j16 --target replayssm_cli ) > "$O/build.log" 2>&1
el built; tail -n1 "$O/build.log"
N=build-gpu/replayssm
sum() { awk '/packed step \(N layers\)/{p=$5} /whole replay step/{r=$4} /every row folded/{f=$6} /begin \+ 1 layer/{o=$7} /begin \+ end/{z=$4} END{printf "packed %s replay %s folded %s T1 %s T0 %s", p, r, f, o, z}'; }
for m in qwen3-next kimi-linear; do for b in 1 4 16; do for d in 0 1 2 3; do
  echo "$m B=$b diag $d: $(RSSM_DIAG=$d $N bench-step --device cuda --model $m --layers 36 --batch $b --reps 100 | sum)"
done; done; done | tee "$O/summary.txt"
el done
