#!/usr/bin/env bash
# Call B: the verify pipeline's per-item marks (a diagnostic build: verify_pipeline.cu with
# RSSM_PIPE_TRACE defined in that file alone), T = 4: GDN B = 8 / 128, KDA B = 128, GDN bf16 state
# B = 128; the last launch of each bench run. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/N
R=/tmp/v/N/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --cuda-pipeline 1"
tr() { local tag=$1; shift; RSSM_PIPE_TRACE_FILE=$O/tr-$tag.csv $R bench $C "$@" | grep staggered; }
tr gdn128 --model qwen3-next --verify 4 --batch 128
tr gdn8 --model qwen3-next --verify 4 --batch 8
tr kda128 --model kimi-linear --verify 4 --batch 128
tr gdn128-bf16 --model qwen3-next --state bf16 --verify 4 --batch 128
ls -la $O; cd $O && tar czf /tmp/r.tgz *.csv && mv /tmp/r.tgz res.tgz
