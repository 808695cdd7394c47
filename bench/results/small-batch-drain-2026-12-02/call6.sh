#!/usr/bin/env bash
# Diagnostic (not committed): packed decode launched in thread-block clusters of RSSM_PACKED_CS CTAs.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build build-gpu -j16 --target replayssm_cli ) > "$O/build.log" 2>&1
el built; tail -n1 "$O/build.log"
N=build-gpu/replayssm
for m in qwen3-next kimi-linear; do for cs in 1 2 4 8; do
  RSSM_PACKED_CS=$cs $N bench --device cuda --model $m --batch 1,2,4,6,8 --ring-len 16 --ring bf16 --io bf16 --slot-order random > "$O/bench-$m-cs$cs.txt" 2>&1
  echo "$m cs=$cs: $(awk '/^ *[0-9]+ /{printf "B=%s %s | ", $1, $5}' "$O/bench-$m-cs$cs.txt")"
done; done | tee "$O/summary.txt"
el done
