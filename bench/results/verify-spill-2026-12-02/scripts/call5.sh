#!/usr/bin/env bash
# Device call 5: GDN K-first verify loads v after the start fold (not parked): this tree against main 0a642ce; check.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/vec /tmp/main && gunzip -c .gpu/vec.gz > /tmp/vec/fla-reference.txt && tar xzf .gpu/main.tar.gz -C /tmp/main
cfg="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON"
( cmake -S . -B build-gpu $cfg -DRSSM_VECTORS=/tmp/vec/fla-reference.txt && cmake --build build-gpu -j12 --target replayssm_cli ) > "$O/build.log" 2>&1 &
( cmake -S /tmp/main -B /tmp/bmain $cfg && cmake --build /tmp/bmain -j6 --target replayssm_cli ) > "$O/build-main.log" 2>&1 &
wait; el built
N=./build-gpu/replayssm
V="--batch 128 --ring-len 16 --ring bf16 --io bf16 --phase staggered --min-time 0.1 --repeat 3"
for r in 1 2; do for t in main new; do bin=$N; [ $t = main ] && bin=/tmp/bmain/replayssm
  for c in "qwen3-next --verify 4 --state-layout kv" "qwen3-next --verify 4"; do
    echo "r$r $t $c: $(timeout 60 $bin bench --device cuda --model $c $V | grep -E '^ +[0-9]' | awk '{print $7, $8, $9}')"
  done; done; done 2>&1 | tee "$O/verify-ab.txt"; el "verify A/B"
echo "check: $(timeout 120 $N check --device cuda | grep -E 'FAIL|passed')"
