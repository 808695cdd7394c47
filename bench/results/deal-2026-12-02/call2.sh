#!/usr/bin/env bash
# Call 2: where the replay pipeline's time goes at B = 32 and 64, staggered (the per-item trace of
# a -DRSSM_PIPE_TRACE=ON build: the last launch of the bench, i.e. one layer of one step), GDN with the
# folding rows first (default) and in plain order, KDA by default; then the folding-rows-first
# threshold for GDN at B = 72-120 (balance 1 against 0, twice); then checks and an A/B of GDN's fold
# factors by shuffle (shfl: fold_ring_rows takes entry i's e^{Gs - G_i} from lane i) against main (15abc2e).
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs2.txz -C /tmp
N=/tmp/main/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 1"
{ for t in "qwen3-next 32 staggered -1" "qwen3-next 64 staggered -1" "qwen3-next 64 staggered 0" \
           "qwen3-next 32 staggered 0" "kimi-linear 32 staggered -1" "kimi-linear 32 staggered 0" \
           "qwen3-next 64 inphase -1"; do
    set -- $t; f="$O/trace-$1-$2-$3-bal$4.csv"
    RSSM_PIPE_TRACE_FILE=$f LD_LIBRARY_PATH=/tmp/trace $N bench $C --model $1 --batch $2 --phase $3 \
      --cuda-pipeline-balance $4 2>&1 | awk -v l="$t" '/staggered|inphase/{printf "%s: pk %s rp %s\n", l, $5, $6}'
    python3 bench/pipe_trace.py "$f"
  done; } 2>&1 | tee "$O/traces.txt"
el traces
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for bal in 1 0; do
  LD_LIBRARY_PATH=/tmp/main $N bench $C --model qwen3-next --batch 72,80,88,96,104,112,120 --cuda-pipeline-balance $bal 2>&1 |
    awk -v l="bal=$bal" '/staggered/{printf "%-6s B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/threshold.txt"
el threshold
export LD_LIBRARY_PATH=/tmp/shfl
{ /tmp/shfl/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"
  /tmp/shfl/test_graph_vs_eager 2>&1 | tail -1; } 2>&1 | tee "$O/checks-shfl.txt"
el checks
for r in 1 2; do for v in main shfl; do
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --batch 32,48,64,128 2>&1 | awk -v l="$v" '/staggered/{printf "%-5s f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  LD_LIBRARY_PATH=/tmp/$v $N bench $C --model qwen3-next --state bf16 --batch 8,16,64 2>&1 | awk -v l="$v" '/staggered/{printf "%-5s bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done; done | tee "$O/ab-shfl.txt"
el done
