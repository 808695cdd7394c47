#!/usr/bin/env bash
# Call Q5: the rules after call Q4 (KDA f32 replay off the pipeline from B = 31 on a slow-memory
# GPU) on the device: test_launch_rules, then the rules' replay row against the pipeline and the
# per-head kernel forced, KDA B = 28-64 and GDN B = 48-64, two rounds. On an H100 the rules' row
# should equal the pipeline at KDA B = 28 and the per-head kernel from 32 (Q4: 36.59 / 41.46 /
# 46.34 at B = 32 / 38 / 44); on an H200 the pipeline at KDA B = 28, the per-head kernel at 32,
# the pipeline from 38, and GDN the pipeline. Carry [".gpzN"] (PKG=.gpzN/pzN.txz, folder M).
# Writes /tmp/resQ5. About 2 minutes.
set -uo pipefail
O=/tmp/resQ5; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{ date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,memory.total --format=csv; } > "$O/info.txt"
rm -rf /tmp/vq && mkdir -p /tmp/vq && tar xJf "${PKG:?PKG=.gpzN/pzN.txz}" -C /tmp/vq
V=/tmp/vq/M
LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1 > "$O/checks.txt"
C="--device cuda --state f32 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench$r.txt"; }
for r in 1 2; do
  for v in rule:-1 pipe:1 perhead:0; do
    bn "kda/${v%%:*}" --model kimi-linear --batch 28,32,38,44,64 --cuda-pipeline ${v#*:}
    bn "gdn/${v%%:*}" --model qwen3-next --batch 48,52,64 --cuda-pipeline ${v#*:}
  done
  el "round $r"
done
