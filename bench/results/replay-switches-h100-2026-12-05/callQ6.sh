#!/usr/bin/env bash
# Call Q6: the KDA rules after call Q5 on the device (8db9dc4's rules had KDA f32 replay on the
# pipeline from B = 38 on an H200, where Q5 found the per-head kernel 2-2.5% faster at B = 38 and
# 44; the rules now start it at B = 48, and on a slow-memory GPU leave it from B = 31). KDA f32
# replay B = 36-64, the rules' row against the pipeline (the rules' producers, and 3) and the
# per-head kernel; test_launch_rules. On an H200 the rules' row should equal the per-head kernel
# at B = 36-44 and the pipeline from 48; on an H100 the per-head kernel everywhere here. Carry
# [".gpzN"] (PKG=.gpzN/pzN.txz, folder M). Writes /tmp/resQ6. About 2 minutes.
set -uo pipefail
O=/tmp/resQ6; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{ date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,memory.total --format=csv; } > "$O/info.txt"
rm -rf /tmp/vq && mkdir -p /tmp/vq && tar xJf "${PKG:?PKG=.gpzN/pzN.txz}" -C /tmp/vq
V=/tmp/vq/M
LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1 > "$O/checks.txt"
C="--device cuda --state f32 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C --model kimi-linear --batch 36,40,44,48,52,56,60,64 "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench$r.txt"; }
for r in 1 2; do
  bn kda/rule --cuda-pipeline -1
  bn kda/pipe --cuda-pipeline 1
  bn kda/pipe3 --cuda-pipeline 1 --cuda-pipeline-producers 3
  bn kda/perhead --cuda-pipeline 0
  el "round $r"
done
