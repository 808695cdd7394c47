#!/usr/bin/env bash
# Call Q3 (prepared, for the next session, on an H100 and on an H200): does the back end read the
# DRAM bandwidth per SM as expected, so that f32 replay leaves the pipeline from B = 52 (GDN) / 48
# (KDA) on an H100 and stays on it on an H200? The rules' replay row against the pipeline and the
# per-head kernel forced; on an H100 it should equal the per-head kernel from B = 52 (Q2: GDN B = 64
# 61.20 against 63.31 on the pipeline; KDA B = 512 425.56 against 443.10), on an H200 the pipeline.
# nvidia-smi's memory clock and the bus width give the figure the back end computes. Then the same
# question with a bf16 state (B = 64-512), which the bound leaves on the pipeline, unmeasured.
# Carry [".gpzN"] (a build of main with rssm_pipe_until; PKG=.gpzN/pzN.txz, folder M). About 3 minutes.
set -uo pipefail
O=/tmp/resQ3; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,memory.total --format=csv > "$O/info.txt"
rm -rf /tmp/vq && mkdir -p /tmp/vq && tar xJf "${PKG:?PKG=.gpzN/pzN.txz}" -C /tmp/vq
V=/tmp/vq/M
C="--device cuda --state f32 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench$r.txt"; }
for r in 1 2; do
  for m in qwen3-next:gdn kimi-linear:kda; do
    for v in rule:-1 pipe:1 perhead:0; do
      bn "${m#*:}/${v%%:*}" --model ${m%%:*} --batch 44,48,52,56,64,512 --cuda-pipeline ${v#*:}
    done
    # a bf16 state keeps the H200's rules everywhere: is the per-head kernel faster there on an H100 too?
    bn "${m#*:}/bf16/pipe" --model ${m%%:*} --state bf16 --batch 64,128,512 --cuda-pipeline 1
    bn "${m#*:}/bf16/perhead" --model ${m%%:*} --state bf16 --batch 64,128,512 --cuda-pipeline 0
  done
  el "round $r"
done
