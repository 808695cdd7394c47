#!/usr/bin/env bash
# Call Z6: the launch rules' programmatic launch as main now takes it (packed decode of an f32
# state triggers the next grid before the rows' arithmetic at B = 5-8 and after the token's
# preparation at B = 9-33; the streaming kernel launches with pdl at every B), from calls Z2 and
# Z5 on an H100. Checks the rules pick as forced, and measures the bands' edges: f32 B = 5-10 and
# 24-64 with every trigger (0-3), a bf16 state on the per-head kernel at B = 5-8, the streaming
# kernel at B = 128-512 by rule against pdl off. Expected: rules = the fastest forced value within
# the spread at every B; B = 7 and 33-48 decide the edges. Carry [".gpz6"] (tar cJf .gpz6/pz6.txz
# -C DIR N; N: the library with the new rules, replayssm, test_cuda_stream, test_launch_rules).
# About 5 minutes a round; a second round in a second call with CHECKS=0.
set -uo pipefail
O=/tmp/resZ6; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v6 && mkdir -p /tmp/v6 && tar xJf .gpz6/pz6.txz -C /tmp/v6
V=/tmp/v6/N
if [ "${CHECKS:-1}" = 1 ]; then
  {
    LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1
    LD_LIBRARY_PATH=$V timeout 200 $V/test_cuda_stream 2>&1 | grep -E "^FAIL|passed"
    LD_LIBRARY_PATH=$V timeout 240 $V/replayssm check --device cuda --quick --vectors none 2>&1 | grep -E "^FAIL|passed"
  } > "$O/checks.txt"
  el checks
fi
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random"
bn() { local tag=$1; shift
  LD_LIBRARY_PATH=$V "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
E=5,6,7,8,9,10,24,28,33,36,40,48,64
for m in qwen3-next kimi-linear; do
  bn "N/$m/f32/rules" --model $m --batch 1,2,4,$E
  for p in 0 1 2 3; do bn "N/$m/f32/pdl$p" --model $m --batch $E --cuda-pdl $p; done
  for p in 1 2 3; do bn "N/$m/bf16/pdl$p" --model $m --state bf16 --batch 5,6,7,8 --cuda-stream 0 --cuda-pdl $p; done
  bn "N/$m/s16/rules" --model $m --state bf16 --batch 128,192,256,384,512
  bn "N/$m/s16/pdl0" --model $m --state bf16 --batch 128,192,256,384,512 --cuda-pdl 0
done
el round
