#!/usr/bin/env bash
# Call Z3: streaming warps that load the token's inputs before the slot's round trip, with call Z's
# package. In main's streaming kernel (cuobjdump) the token's k, q, gates and v are loaded only
# after the row's slot has arrived (the branch on a padding row holds them), and then behind the
# first chunk's rows: two round trips in a row before a warp's first arithmetic, and with early
# loads the token's inputs queue behind 8 rows (call Y: early loses 0.7-1.5% below B = 99). F =
# branch wip/stream-token-first (a4e4f63, on wip/stream-rw32): the token's inputs and v are loaded
# right after the slot and before its use (as the per-head kernel's round 0 stages them); the
# arithmetic is unchanged (the same bits). The token's
# arithmetic (norms by shuffles, gates, exponentials) then runs while the rows fly instead of after
# they land. What should move: at B = 12-64, where a warp's start decides, the step by that
# arithmetic and the token's queueing behind the rows, 2-4% (GDN B = 16 13.39 -> about 13.0 us,
# B = 32 22.99 -> about 22.3); with early loads at every B (F2) the loss below B = 99 may turn
# into a gain. Large B unchanged (bandwidth-bound).
# Carry [".gpz"] (W, F, F2 from it), about 6 minutes.
set -uo pipefail
O=/tmp/resZ3; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
[ -d /tmp/v/F ] || { rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpz/pz.txz -C /tmp/v; }
V=/tmp/v/W
for l in F F2; do
  LD_LIBRARY_PATH=/tmp/v/$l timeout 200 /tmp/v/F/test_cuda_stream 2>&1 | grep -E "^FAIL|passed" | sed "s/^/$l: /"
done > "$O/checks.txt"; el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
bn() { local lib=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
SB=12,16,20,24,28,32,48,64
for r in 1 2; do
  for m in qwen3-next kimi-linear; do
    for l in W F F2; do
      bn $l "$l/$m/rw16/pdl0" --model $m --batch $SB --cuda-stream 16 --cuda-pdl 0
      bn $l "$l/$m/rw32/pdl0" --model $m --batch $SB --cuda-stream 32 --cuda-pdl 0
    done
    for l in W F; do bn $l "$l/$m/rules" --model $m --batch 24,32,64,128,192,512; done
  done
  el "round $r"
  [ $(( $(date +%s) - T0 )) -gt 300 ] && { el "no second round: the call's 600 s"; break; }
done
