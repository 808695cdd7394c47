#!/usr/bin/env bash
# Call 1: the verify windows' ring weights by reduce-scatter (N, this change) against ff465d6 (H,
# the kernels of b80acdf): bits of every output and state tensor after verify windows T = 1..8
# (dump_window), the pipeline's bitwise test and the float64 checks on N, then verify timings in
# alternating rounds. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/head.txz -C /tmp/v && tar xJf .gpu/new.txz -C /tmp/v
{ # the dump tool is linked against the soname; the library under test is chosen by the path
  LD_LIBRARY_PATH=/tmp/v/H /tmp/v/N/dump_window /tmp/v/H.bin | tail -n 2
  LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/dump_window /tmp/v/N.bin | tail -n 2
  ls -l /tmp/v/H.bin /tmp/v/N.bin | awk '{print $5, $9}'
  cmp /tmp/v/H.bin /tmp/v/N.bin && echo "dump_window: H and N bitwise equal"
  LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/$X/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in H N; do
  bn $X gdn-T4 --model qwen3-next --verify 4 --batch 8,64,128,512
  bn $X kda-T4 --model kimi-linear --verify 4 --batch 8,64,128,512
  bn $X gdn-T3 --model qwen3-next --verify 3 --batch 128
  bn $X gdn-T8 --model qwen3-next --verify 8 --batch 128
  bn $X gdn-T4-bf16 --model qwen3-next --state bf16 --verify 4 --batch 128
  bn $X kda-T4-bf16 --model kimi-linear --state bf16 --verify 4 --batch 128
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
