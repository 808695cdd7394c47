#!/usr/bin/env bash
# Call E: F, the final library (main + X + P padded only where a stage can spare 512 bytes: a bf16
# state or packed decode; an f32 state's replay keeps the rotated blocks), against N (X) and Q (X + P
# everywhere), .gpu/kpe.txz. F's rotated-block kernels are N's machine code up to register choice
# in two of them (GDN BAL, KDA), its padded ones Q's layout with other address arithmetic.
# Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kpe.txz -C /tmp/v
N=/tmp/v/F/replayssm
{ for t in test_cuda_pipeline test_layout; do echo "$t: $(LD_LIBRARY_PATH=/tmp/v/F /tmp/v/F/$t 2>&1 | grep -E "FAIL|passed" | tail -3)"; done
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-18s %s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in N Q F; do
  bn $X gdn-kf-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --batch 64,512
  bn $X kda-kf-pipe --state-layout kv --cuda-pipeline 1 --model kimi-linear --batch 512
  bn $X gdn-kf-bf16-pipe --state-layout kv --cuda-pipeline 1 --model qwen3-next --state bf16 --batch 8,64,512
  bn $X kda-kf-bf16-pipe --state-layout kv --cuda-pipeline 1 --model kimi-linear --state bf16 --batch 16
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
