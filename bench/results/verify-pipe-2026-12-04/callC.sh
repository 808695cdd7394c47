#!/usr/bin/env bash
# Call C: the producers' token rows by cp.async (no registers held for them), the ring copied first
# on a CTA's first items, ring weights two entries a round. N: the library, T: the same with the
# per-item marks (RSSM_PIPE_TRACE defined in verify_pipeline.cu). test_cuda_pipeline (bit for bit),
# then verify + commit, T = 4, per-head (-1) against the pipeline (1), two rounds; marks with T.
# Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for f in gdn128:"--model qwen3-next --batch 128" kda128:"--model kimi-linear --batch 128" gdn8:"--model qwen3-next --batch 8"; do
  tag=${f%%:*}; RSSM_PIPE_TRACE_FILE=$O/tr-$tag.csv LD_LIBRARY_PATH=/tmp/v/T /tmp/v/T/replayssm bench $C ${f#*:} --verify 4 --cuda-pipeline 1 | grep staggered
done
el traces
export LD_LIBRARY_PATH=/tmp/v/N
R=/tmp/v/N/replayssm
bn() { local tag=$1; shift; $R bench $C "$@" | awk -v t="$tag" '/staggered/{printf "%-14s %s\n", t, $0; fflush()}'; }
for r in 1 2; do for P in -1 1; do
  bn gdn-T4/p$P --model qwen3-next --verify 4 --batch 8,64,128,512 --cuda-pipeline $P
  bn kda-T4/p$P --model kimi-linear --verify 4 --batch 8,64,128,512 --cuda-pipeline $P
  bn gdn-T4-bf16/p$P --model qwen3-next --state bf16 --verify 4 --batch 128 --cuda-pipeline $P
done; el "round $r"; done 2>&1 | tee "$O/bench.txt"
/tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tee "$O/checks.txt"; el test
cd $O && tar czf /tmp/r.tgz *.csv *.txt && mv /tmp/r.tgz res.tgz
