#!/usr/bin/env bash
# Call A: E (K-first state copies from one elected lane; the replay pipeline as a programmatic
# dependent launch under --cuda-pdl 1) against M (main, 54ce49c), .gpu/pdl.txz. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/pdl.txz -C /tmp/v
N=/tmp/v/E/replayssm
{ for t in test_cuda_pipeline test_layout; do echo "$t: $(LD_LIBRARY_PATH=/tmp/v/E /tmp/v/E/$t 2>&1 | grep -E "FAIL|passed" | tail -3)"; done
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-18s %s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in M E; do
  bn $X gdn-kf-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --batch 64,512
  bn $X kda-kf-pipe --state-layout kv --cuda-pipeline 1 --model kimi-linear --batch 512
  bn $X gdn-kf-bf16-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --state bf16 --batch 8,64,512
  bn $X gdn-vf --model qwen3-next --batch 64,512
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
# the pipeline as a programmatic dependent launch: one layer call and its cursor move per step (bench),
# and 36 layers' calls and one cursor move per step (bench-step)
for r in 1 2; do for P in 0 1; do
  bn E gdn-vf-pdl$P --model qwen3-next --batch 16,64,128,512 --cuda-pdl $P
  bn E kda-vf-pdl$P --model kimi-linear --batch 64,512 --cuda-pdl $P
  bn E gdn-kf-pdl$P --state-layout kv --model qwen3-next --batch 64,512 --cuda-pdl $P
  el "pdl round $r $P"
done; done 2>&1 | tee "$O/pdl-bench.txt"
for r in 1 2; do for P in 0 1; do for m in qwen3-next kimi-linear; do for b in 64 512; do
  echo "== $m B=$b pdl $P round $r"
  LD_LIBRARY_PATH=/tmp/v/E $N bench-step --device cuda --model $m --layers 36 --batch $b --io bf16 --reps 80 \
    --small-batch 0 --cuda-pdl $P 2>&1 | tail -4
done; done; el "step round $r $P"; done; done 2>&1 | tee "$O/pdl-step.txt"
el done
