#!/usr/bin/env bash
# Call Z4: the streaming kernel's programmatic launch (pdl), on the kernel that loads the token
# first (main 7f7f65d, F). Calls Z and Z3 on an H100 (one round each) found: pdl as main launches
# the streaming kernel loses 0.4-6.7% to no pdl; without its L2 prefetch before the wait (P) it
# won at every B = 12-64, GDN and KDA, by 0.2-2.4%; a later trigger won more where it fit the
# grid: before the last chunk's stores (T) at B = 12-16 by 2.5-5.3%, after chunk 0 (Q) at GDN
# B = 18-32 by up to 9.6%. Those variants ran on the kernel before F. Here, on F, two rounds if
# the call's time allows: FP = no prefetch; FQ / FT = Q / T's trigger with the prefetch; FPQ /
# FPT = both. What should move: if pdl without the prefetch wins on the H200 too, the rules
# launch the streaming kernel with pdl (GDN B = 24-64 about 1-2%); if FPT wins at B = 12-16, the
# streaming kernel could take B = 16 from the per-head kernel (H200 13.39 us without pdl, 13.75 by
# the rules; FlashInfer 12.18). F at 32 rows and the per-head kernel (rw0) at the same batches
# show where streaming should start on this card.
# Carry [".gpz4"]: tar cJf .gpz4/pz4.txz -C DIR F FP FQ FT FPQ FPT (F: libreplayssm.so*,
# replayssm, test_cuda_stream, test_launch_rules; the others libreplayssm.so*). About 8 minutes.
set -uo pipefail
O=/tmp/resZ4; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v4 && mkdir -p /tmp/v4 && tar xJf .gpz4/pz4.txz -C /tmp/v4
V=/tmp/v4/F
{
  LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1
  LD_LIBRARY_PATH=$V timeout 200 $V/test_cuda_stream 2>&1 | grep -E "^FAIL|passed"
} > "$O/checks.txt"; el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
bn() { local lib=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v4/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
SB=12,16,20,24,28,32,64
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    bn F "F/$m/rw16/pdl0" --model $m --batch $SB --cuda-stream 16 --cuda-pdl 0
    for l in F FP FQ FT FPQ FPT; do bn $l "$l/$m/rw16/pdl1" --model $m --batch $SB --cuda-stream 16 --cuda-pdl 1; done
    bn F "F/$m/rw32/pdl0" --model $m --batch $SB --cuda-stream 32 --cuda-pdl 0
    bn F "F/$m/rw0/rules" --model $m --batch $SB --cuda-stream 0
    bn F "F/$m/rules" --model $m --batch 1,8,16,24,32,64,128,512
  done
  el "round $r"
  [ $(( $(date +%s) - T0 )) -gt 290 ] && { el "no second round: the call's 600 s"; break; }
done
