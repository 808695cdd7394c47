#!/usr/bin/env bash
# Call B: fold_ring_rows itself evaluating GDN's entry factors once per warp (G: every kernel that
# folds GDN rows without staging: the pipeline's, the per-head kernel's bf16-state and K-first
# replay, start folds, the drain), KDA's loop as it was, against main 6a701ed (M). Checks of G
# (the quick matrices' printed errors must equal M's line for line), then replay on the per-head
# kernel and the pipeline in two alternating rounds, then packed decode of a bf16 state at
# B = 12-32 by split and on the pipeline, and verify windows (T = 4, B = 128) by split (no code
# change: the launch switches). Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
{ LD_LIBRARY_PATH=/tmp/v/G /tmp/v/G/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/G /tmp/v/G/test_layout 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
for X in M G; do for p in -1 1; do
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/G/replayssm check --device cuda --quick --cuda-pipeline $p > "$O/check-$X-p$p.txt" 2>&1
done; done
for p in -1 1; do
  tail -1 "$O/check-G-p$p.txt"
  if diff -q "$O/check-M-p$p.txt" "$O/check-G-p$p.txt" >/dev/null; then echo "check --cuda-pipeline $p: G's lines equal M's"; else echo "check --cuda-pipeline $p: lines DIFFER"; diff "$O/check-M-p$p.txt" "$O/check-G-p$p.txt" | head -20; fi
done 2>&1 | tee -a "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/G/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-14s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in M G; do
  bn $X gdn --model qwen3-next --batch 4,8,16,32
  bn $X gdn-bf16 --state bf16 --model qwen3-next --batch 4,8,12,16,32
  bn $X gdn-kf --state-layout kv --model qwen3-next --batch 8,16,64
  bn $X kda --model kimi-linear --batch 8,64,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
for X in G; do
  bn $X gdn-bf16 --state bf16 --model qwen3-next --batch 12,16,24,32
  bn $X gdn-bf16-s4 --state bf16 --model qwen3-next --batch 12,16,24,32 --cuda-split 4
  bn $X gdn-bf16-s1 --state bf16 --model qwen3-next --batch 12,16,24,32 --cuda-split 1
  bn $X gdn-bf16-pipe --state bf16 --model qwen3-next --batch 12,16,24,32 --cuda-pipeline 1
  bn $X gdn-bf16-st8 --state bf16 --model qwen3-next --batch 12,16,24,32 --cuda-stream 8
  bn $X kda-bf16 --state bf16 --model kimi-linear --batch 16,32
  bn $X kda-bf16-s4 --state bf16 --model kimi-linear --batch 16,32 --cuda-split 4
  bn $X kda-bf16-pipe --state bf16 --model kimi-linear --batch 16,32 --cuda-pipeline 1
  for sp in 0 2 4; do
    bn $X gdn-v4-s$sp --model qwen3-next --verify 4 --batch 128 --cuda-split $sp
    bn $X kda-v4-s$sp --model kimi-linear --verify 4 --batch 128 --cuda-split $sp
  done
done 2>&1 | tee "$O/sweep.txt"
el done
