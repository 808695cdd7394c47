#!/usr/bin/env bash
# Call V: verify windows of 3-4 tokens (f32 V-first state) that read the state where they use it.
# The per-head kernel holds a head's state in 32 of its 64 registers a thread from round 1 to the
# rows, so an SM holds 2 CTAs (heads) and a window of T = 4 at B = 128 is bound by the latency
# inside them (about 10 us a CTA, 15.5 waves: 159.8 us GDN, 187.1 KDA). LATE reads the state
# from L2 where it is used (round 1 only prefetches the CTA's rows; the start fold works on the
# checkpoint in place, a round at a time), so the kernel fits 40 registers and 3 CTAs an SM
# (ptxas: GDN 16 bytes of spills, KDA 4; no spill store waits for a global load).
# M = main (be642a4's machine code), L3 = LATE at 3 CTAs an SM, L4 = at 4 (32 registers: GDN 52
# bytes of spills, KDA 28, none waiting for a load; 1-2 rows in flight at the rows), L2 = LATE at 2
# (what the late reads cost alone), L3p / L4p = L3 / L4 with the lane's rows prefetched into L1
# (prefetch.global.L1, no register) before the ring weights, so that the rows' loads hit L1. What should move: if the window is bound by CTAs in flight, L3 at B = 64-512 by up to
# a third (GDN B = 128 159.8 -> about 110-130 us: 10.3 waves instead of 15.5, each CTA one to
# three L2 round trips longer, L2 shows how much; L4 7.75 waves, more round trips); B = 8 (one
# wave) no better, likely worse.
# Carry [".gpv"]: tar cJf .gpv/pv.txz -C DIR M L3 L4 L3p L4p L2 (M also: replayssm, dump_window_q,
# test_cuda_pipeline). About 7 minutes.
# A shorter call: VARIANTS="M L3 L4" BATCHES=8,128,512 NCU= bash callV.sh (about 3.5 minutes).
set -uo pipefail
VARIANTS=${VARIANTS:-M L3 L4 L3p L4p L2} BATCHES=${BATCHES:-8,64,128,512} NCU=${NCU-M L3 L4}
O=/tmp/resV; rm -rf "$O"; mkdir -p "$O"
# everything lands in /tmp/resV, packed into $OUT/resV.tgz at each milestone (a call brings back 8 files)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/resV.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/w && mkdir -p /tmp/w && tar xJf .gpv/pv.txz -C /tmp/w
V=/tmp/w/M
# bits: every output and state tensor after verify windows and commits (128 cases), against M's
for X in $VARIANTS; do (LD_LIBRARY_PATH=/tmp/w/$X timeout 240 $V/dump_window_q - > "$O/hash-$X.txt" 2>&1) & done
{ for X in L3 L4; do
    echo "== $X"
    LD_LIBRARY_PATH=/tmp/w/$X timeout 150 $V/replayssm check --device cuda --quick 2>&1 | tail -2
    LD_LIBRARY_PATH=/tmp/w/$X timeout 150 $V/test_cuda_pipeline 2>&1 | grep -E "^FAIL|passed"
  done; wait
  grep -c ": [0-9a-f]*$" "$O/hash-M.txt"
  for X in ${VARIANTS#M }; do cmp -s "$O/hash-M.txt" "$O/hash-$X.txt" && echo "$X: every hash equal to M's" || echo "$X: hashes DIFFER"; done
} > "$O/checks.txt" 2>&1; el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --verify 4"
bn() { local lib=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/w/$lib "$V/replayssm" bench $C "$@" |
    awk -v t="$tag" '/staggered/{printf "%-16s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for r in 1 2; do
  for X in $VARIANTS; do
    bn $X "$X/qwen3-next" --model qwen3-next --batch $BATCHES
    bn $X "$X/kimi-linear" --model kimi-linear --batch $BATCHES
  done
  el "round $r"
  [ $(( $(date +%s) - T0 )) -gt 330 ] && { el "no second round: the call's 600 s"; break; }
done
# CTAs per SM as the H200 runs them: ncu's launch and occupancy sections of one GDN window at B = 128
for X in $NCU; do
  [ $(( $(date +%s) - T0 )) -gt 480 ] && { el "no ncu for $X: the call's 600 s"; break; }
  LD_LIBRARY_PATH=/tmp/w/$X timeout 60 ncu --kernel-name-base demangled -k regex:"decode_k128_kernel<false, false, 2, 4" \
    --launch-count 1 --section LaunchStats --section Occupancy "$V/replayssm" bench $C --model qwen3-next --batch 128 \
    --repeat 1 > "$O/ncu-occupancy-$X.txt" 2>&1
  el "ncu $X: rc $?"
done
