#!/usr/bin/env bash
# Call BC: the verify windows on m16n8k4 against main (base), correctness first, then timings, in one
# call. Trees of wip/verify-m16: r (the rows with the warp's 8 rows as B), rf (also the start fold,
# A's lower rows zero), p (the pair layout: warp pairs hold 16 rows at alternate channels, fold and
# rows whole tiles), p3 (p with the V-first groups read once per pair and exchanged, so the first
# wait on the checkpoint loads comes 700-960 instructions after them, not 11-22), p4 (p3 with the
# start fold's V-first store by whole groups through the same exchange). All are meant to
# keep main's bits: test_cuda_pipeline's per-head digests (RSSM_TEST_DIGEST) under each library must
# equal base's. Then the full test for p4, T = 4 timings (GDN and KDA, B = 8, 128, 512, two
# alternating rounds; GDN bf16 state, K-first, and the verify pipeline forced at B = 128),
# check --quick against float64 for p4, the full tests of p3 and r (last: a call of 600 s may end
# before them; each step packs what it has into $OUT/res.tgz). Carry [".gpu"]: the library, CLI and
# test_cuda_pipeline of each tree under base/ r/ rf/ p3/ p4/ (libreplayssm.so -> libreplayssm.so.0.4;
# the test binary from a tree with the digest mode): tar cJf .gpu/kp.txz -C DIR base r rf p3 p4.
# (p itself is left out: p3 keeps its arithmetic, and p fails the spill_waits ctest.) As packed on
# 2026-12-04 23:28 UTC: base from main 990c308, p4 from this branch rebased on it; r, rf and p3 from
# the branch before 990c308's barrier in KDA windows that clamp their gates (a rare path).
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
V="base r rf p3 p4"
for v in $V; do
  RSSM_TEST_DIGEST=1 LD_LIBRARY_PATH=/tmp/v/$v timeout 100 /tmp/v/p4/test_cuda_pipeline > "$O/digest-$v.txt" 2>&1
done
for v in $V; do cmp -s "$O/digest-base.txt" "$O/digest-$v.txt" && echo "$v: digests equal to base" || echo "$v: DIGESTS DIFFER"; done | tee "$O/digest-cmp.txt"; el digests
tst() { LD_LIBRARY_PATH=/tmp/v/$1 timeout 170 /tmp/v/$1/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tee "$O/checks-$1.txt"; el "test $1"; }
tst p4
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --verify 4"
bn() { local v=$1 tag=$2; shift 2; LD_LIBRARY_PATH=/tmp/v/$v /tmp/v/$v/replayssm bench $C "$@" | awk -v t="$v/$tag" '/staggered/{printf "%-16s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for r in 1 2; do for v in base p4 p3 r rf; do
  bn $v gdn --model qwen3-next --batch 8,128,512
  bn $v kda --model kimi-linear --batch 8,128,512
done; el "round $r"; done
for v in base p4 p3 r rf; do
  bn $v gdn-bf16 --model qwen3-next --batch 128 --state bf16
  bn $v gdn-pipe --model qwen3-next --batch 128 --cuda-pipeline 1
  bn $v gdn-kf --model qwen3-next --batch 128 --state-layout kv
done; el extra
LD_LIBRARY_PATH=/tmp/v/p4 timeout 120 /tmp/v/p4/replayssm check --device cuda --quick 2>&1 | tail -5 | tee "$O/check-p4.txt"; el check
tst p3; tst r
