#!/usr/bin/env bash
# Call Y (prepared, not run: the session's device time was spent): rows really two chunks ahead.
# By cuobjdump (README, "What the unrolling changed") ptxas issues a streaming warp's next chunk
# just after the current chunk's unpack, in its registers, so each chunk's round trip overlaps
# only the previous chunk's arithmetic. The branch wip/stream-ahead2 (b56ab39) loads two chunks
# ahead into a third buffer where the first two load early (bf16, 16 rows per warp): by cuobjdump
# chunk 2's loads then go out during chunk 0's arithmetic and chunk 3's during chunk 1's, at 63-64
# registers without spills. What should move: at B = 192-512, where the rules load early, the step
# by up to the share of a round trip per chunk left exposed, 1-3% (GDN B = 512 293.7 -> about 288 µs);
# with early loads everywhere (X2), B = 24-128 lose less to early than call R's 1.6-3.8%, or gain.
# E = main 5506dca's kernels (call V), X1 = the branch (early from B = 165 as main), X2 = the branch
# with rssm_stream_early returning 1 (early at every B). Carry [".gpy"]: tar cJf .gpy/py.txz -C DIR
# E X1 X2 (E: libreplayssm.so*, replayssm; X1: libreplayssm.so*, test_cuda_stream; X2: libreplayssm.so*).
# The branch's head e4f2247 adds a SASS ctest (row_loads_ahead_stream) and comments; its kernels are b56ab39's.
set -uo pipefail
O=/tmp/resY; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpy/py.txz -C /tmp/v
V=/tmp/v/E
for l in X1 X2; do
  LD_LIBRARY_PATH=/tmp/v/$l timeout 150 /tmp/v/X1/test_cuda_stream 2>&1 | grep -E "^FAIL|passed" | sed "s/^/$l: /"
done > "$O/checks.txt"; el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
bn() { local lib=$1; shift
  LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$lib" '/staggered/{printf "%-4s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for r in 1 2; do
  for l in E X1 X2; do
    bn $l --model qwen3-next --batch 24,32,64,128,192,512
    bn $l --model kimi-linear --batch 32,64,128,192,512
  done
  el "round $r"
done
