#!/usr/bin/env bash
# Call Q1: GDN replay with an f32 state where an H100 trails SGLang's ReplaySSM decode in the peer
# table (pdl-rules-2026-12-05/ call P8: B = 8 13.15 against 12.40 us, B = 64 62.41 against 61.06):
# does any launch switch the rules leave off win there on the H100? The rules were timed on the
# H200. B = 6 / 8 / 10 by the rules (per-head kernel, whole-ring read, no pdl, split 1) against pdl
# at the wait, 2 CTAs a head, no whole-ring read, and the replay pipeline; B = 48 / 64 / 80 (the
# pipeline, 3 producers) against 2 producers and the per-head kernel. Two rounds in one call.
# Carry [".gpz9"] (main b3fe554's build, M). About 2 minutes.
set -uo pipefail
O=/tmp/resQ1; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/vq && mkdir -p /tmp/vq && tar xJf .gpz9/pz9.txz -C /tmp/vq
V=/tmp/vq/M
C="--device cuda --model qwen3-next --state f32 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-16s %s\n", t, $0; fflush()}' >> "$O/bench$r.txt"; }
for r in 1 2; do
  bn rule --batch 6,8,10
  bn pdl1 --batch 6,8,10 --cuda-pdl 1
  bn split2 --batch 6,8,10 --cuda-split 2
  bn ring0 --batch 6,8,10 --cuda-ring-read 0
  bn pipe --batch 6,8,10 --cuda-pipeline 1
  bn ruleL --batch 48,64,80
  bn prod2 --batch 48,64,80 --cuda-pipeline-producers 2
  bn perhead --batch 48,64,80 --cuda-pipeline 0
  el "round $r"
done
