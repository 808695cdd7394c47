#!/usr/bin/env bash
# Call Z2: the per-head kernel's programmatic launch (pdl), with call Z's package. The rules
# launch the per-head kernel programmatically on grids up to a wave and, for packed decode,
# from above two waves (f32) to 3.5 waves, because with an f32 state grids of about a wave lost
# up to 10% with it (GDN B = 8 11.14 -> 12.03 us) and larger ones 2-5% (B = 64); a bf16 state
# gains 10% at B = 8. Its pdl path is the streaming kernel's (prefetch, wait, trigger), which
# loses 2-5% with pdl at B = 12-28 (call X). P / Q / T / R change both kernels alike: no
# prefetch / the trigger after the token's preparation (the first barrier, the rows' loads
# issued) / before the rows' arithmetic and stores / no trigger. What should move: if a later trigger takes pdl's loss away, pdl wins at f32 B = 6-8
# and 64-512 too (GDN B = 8 11.14 -> about 10.2 us, FLA 10.1; the target is 9.0).
# Packed decode on the per-head kernel (--cuda-stream 0), f32 and bf16 state, GDN and KDA, pdl
# forced off (W) and on (W, P, Q, T, R), two rounds. Carry [".gpz"], about 5 minutes.
set -uo pipefail
O=/tmp/resZ2; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
[ -d /tmp/v/W ] || { rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpz/pz.txz -C /tmp/v; }
V=/tmp/v/W
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --cuda-stream 0"
bn() { local lib=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    bn W "W/$m/f32/pdl0" --model $m --batch 2,4,6,8,12,16,32,64,128,512 --cuda-pdl 0
    for l in W P Q T R; do bn $l "$l/$m/f32/pdl1" --model $m --batch 2,4,6,8,12,16,32,64,128,512 --cuda-pdl 1; done
    bn W "W/$m/bf16/pdl0" --model $m --batch 4,6,8,12,16,20 --state bf16 --cuda-pdl 0
    for l in W P Q T R; do bn $l "$l/$m/bf16/pdl1" --model $m --batch 4,6,8,12,16,20 --state bf16 --cuda-pdl 1; done
  done
  el "round $r"
  [ $(( $(date +%s) - T0 )) -gt 300 ] && { el "no second round: the call's 600 s"; break; }
done
