#!/usr/bin/env bash
# Call Q4: below the bound. Call Q3 (bad250e's build, an H100) showed the bandwidth read working
# (the rules' replay row equal to the per-head kernel from GDN B = 52 and KDA B = 48) and the
# per-head kernel also ahead at KDA B = 44 (46.37 against 48.45 us on the pipeline), below the
# bound. Where does each model's f32 replay first gain from the pipeline on an H100 (GDN B = 12-52,
# KDA B = 16-48, including KDA's one-word batches from B = 20)? On an H200 the same rows check the
# H200's rules (the pipeline from GDN B = 12, KDA one-word from 20 and from 38). Carry [".gpzN"]
# (PKG=.gpzN/pzN.txz, folder M). Writes /tmp/resQ4. About 4 minutes.
set -uo pipefail
O=/tmp/resQ4; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,memory.total --format=csv > "$O/info.txt"
rm -rf /tmp/vq && mkdir -p /tmp/vq && tar xJf "${PKG:?PKG=.gpzN/pzN.txz}" -C /tmp/vq
V=/tmp/vq/M
C="--device cuda --state f32 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench$r.txt"; }
for r in 1 2; do
  for v in rule:-1 pipe:1 perhead:0; do
    bn "gdn/${v%%:*}" --model qwen3-next --batch 12,16,20,24,28,32,36,40,44,48,52,64 --cuda-pipeline ${v#*:}
    bn "kda/${v%%:*}" --model kimi-linear --batch 16,20,24,28,32,36,38,40,42,44,48,64 --cuda-pipeline ${v#*:}
  done
  el "round $r"
done
