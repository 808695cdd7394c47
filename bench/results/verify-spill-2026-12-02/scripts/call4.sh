#!/usr/bin/env bash
# Device call 4: a616af2 (v parked except GDN bf16 state) against main 0a642ce, one run; checks of a616af2.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/vec /tmp/main && gunzip -c .gpu/vec.gz > /tmp/vec/fla-reference.txt && tar xzf .gpu/main.tar.gz -C /tmp/main
cfg="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON"
( cmake -S . -B build-gpu $cfg -DRSSM_VECTORS=/tmp/vec/fla-reference.txt && cmake --build build-gpu -j12 --target replayssm_cli test_errors test_graph_vs_eager ) > "$O/build.log" 2>&1 &
( cmake -S /tmp/main -B /tmp/bmain $cfg && cmake --build /tmp/bmain -j6 --target replayssm_cli ) > "$O/build-main.log" 2>&1 &
wait; el built; tail -n1 "$O/build.log"; tail -n1 "$O/build-main.log"
N=./build-gpu/replayssm
V="--batch 128 --ring-len 16 --ring bf16 --io bf16 --phase staggered --min-time 0.1 --repeat 3"
for r in 1 2; do for t in main new; do bin=$N; [ $t = main ] && bin=/tmp/bmain/replayssm
  for c in "qwen3-next --verify 4" "qwen3-next --verify 4 --state bf16" "qwen3-next --verify 3" "kimi-linear --verify 4" "qwen3-next --verify 4 --state-layout kv"; do
    echo "r$r $t $c: $(timeout 60 $bin bench --device cuda --model $c $V | grep -E '^ +[0-9]' | awk '{print $7, $8, $9}')"
  done; done; done > "$O/verify-ab.txt" 2>&1; el "verify A/B"; cat "$O/verify-ab.txt"
echo "new GDN verify T=4 B=512: $(timeout 60 $N bench --device cuda --model qwen3-next --verify 4 --batch 512 --ring-len 16 --ring bf16 --io bf16 --min-time 0.1 | grep -E '^ +[0-9]' | awk '{print $7, $8, $9}')" | tee -a "$O/verify-ab.txt"
{ echo "=== check --device cuda"; timeout 120 $N check --device cuda | grep -E "FAIL|passed"
  echo "=== runtime"; timeout 40 $N check --device cuda --suite runtime | grep -E "FAIL|passed"
  echo "=== test_errors"; timeout 30 ./build-gpu/test_errors | tail -n1
  echo "=== test_graph_vs_eager"; timeout 60 ./build-gpu/test_graph_vs_eager | tail -n1
} > "$O/check.txt" 2>&1; el checked; cat "$O/check.txt"
