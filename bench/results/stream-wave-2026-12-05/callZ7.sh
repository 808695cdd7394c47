#!/usr/bin/env bash
# Call Z7: does packed decode of a bf16 state stream faster where the streaming grid fits one wave?
# With 16 rows per warp a head is 2 CTAs of 4 warps, 8 resident per SM (launch bounds), so 132 SMs
# hold B = 16.5 at 32 value heads in one wave: B = 16 streamed beat the per-head kernel in every
# run (H200 call X without pdl 13.39 against 13.75 us; H100 call Z5 with pdl 14.88 against 15.45,
# KDA 15.07 against 15.79), B = 20 (1.2 waves) lost by 10%. Here B = 12-20 streamed by 16 rows
# and B = 6-10 by 8 rows (4 CTAs a head: one wave at B = 8) against the per-head kernel, and
# B = 24-40 by 32 rows (one CTA a head: one wave up to B = 33) against 16 rows (two waves at B = 32),
# both models, two rounds in one call. Expected: streaming ahead where its grid fills most of one
# wave (16 rows at B = 15-16, 8 rows at B = 8, 32 rows at B = 28-33), behind just past a wave.
# Then the same one-wave grids with an f32 state (streaming lost at every B there in call R, at
# other sizes), against the per-head kernel by the rules (pdl 3 at B = 8, 2 at 16 and 32).
# Carry [".gpz8", ".wsg"] (main 2b45496's build, M: 8a68725's kernels and rules; .wsg holds sglang's
# wheel, left in /tmp/whl for call P8, since the tree, the build and every wheel exceed what one call
# carries). About 4 minutes.
set -uo pipefail
if [ -d .wsg ]; then mkdir -p /tmp/whl && cp .wsg/*.whl /tmp/whl/; fi
O=/tmp/resZ7; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v7 && mkdir -p /tmp/v7 && tar xJf .gpz8/pz8.txz -C /tmp/v7
V=/tmp/v7/M
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local f=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/$f"; }
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    S="--model $m --state bf16"
    bn bench$r.txt "M/$m/s0" $S --batch 12,14,15,16,17,20 --cuda-stream 0
    bn bench$r.txt "M/$m/s16" $S --batch 12,14,15,16,17,20 --cuda-stream 16
    bn bench$r.txt "M/$m/s0b" $S --batch 6,8,10 --cuda-stream 0
    bn bench$r.txt "M/$m/s8" $S --batch 6,8,10 --cuda-stream 8
    bn bench$r.txt "M/$m/s16b" $S --batch 24,28,32,33,40 --cuda-stream 16
    bn bench$r.txt "M/$m/s32" $S --batch 24,28,32,33,40 --cuda-stream 32
    F="--model $m --state f32"
    bn bench$r.txt "M/$m/f32/s0" $F --batch 8,16,32 --cuda-stream 0
    bn bench$r.txt "M/$m/f32/s8" $F --batch 8 --cuda-stream 8
    bn bench$r.txt "M/$m/f32/s16" $F --batch 16 --cuda-stream 16
    bn bench$r.txt "M/$m/f32/s32" $F --batch 32 --cuda-stream 32
  done
  el "round $r"
done
