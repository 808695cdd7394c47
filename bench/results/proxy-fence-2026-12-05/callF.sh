#!/usr/bin/env bash
# Call F: the replay pipeline's proxy fence (main since 2026-12-05). The consumers write a stage's
# state buffer through the generic proxy (GDN f32 V-first end folds staged there; K-first packed
# decode's new state put there) and hand it to the next item's TMA copy by an mbarrier; main puts a
# fence.proxy.async.shared::cta before that hand-over (16 pipeline kernels). First the
# full test_cuda_pipeline with it (the pipeline against the per-head kernel, bit for bit), then two
# alternating rounds of timings, base (main 990c308) against F (the fence on main 8d36ded; the
# rest alike), on the paths that run it: GDN f32 V-first replay (pipeline from B = 12), K-first packed
# decode f32 (from B = 16) and bf16 (from B = 5), KDA K-first packed. Before the timings,
# test_cuda_bad_rows under both libraries. Carry [".gpf"]: base/ and F/ (library, CLI; F also
# test_cuda_pipeline and test_cuda_bad_rows): tar cJf .gpf/pf.txz -C DIR base F.
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpf/pf.txz -C /tmp/v
LD_LIBRARY_PATH=/tmp/v/F timeout 170 /tmp/v/F/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tee "$O/checks-F.txt"; el test
# rows with out-of-range metadata (main 6af24de): F has the verify pipeline's bad-ring fix (8d36ded),
# base does not (its far-off ring base is expected to fail there, with later cases if the error sticks)
for v in F base; do
  LD_LIBRARY_PATH=/tmp/v/$v timeout 120 /tmp/v/F/test_cuda_bad_rows > "$O/bad-rows-$v.txt" 2>&1; echo "rc=$?" >> "$O/bad-rows-$v.txt"
  grep -E "^FAIL|passed" "$O/bad-rows-$v.txt" | head -12
done; el "bad rows"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { local v=$1 tag=$2; shift 2; LD_LIBRARY_PATH=/tmp/v/$v /tmp/v/$v/replayssm bench $C "$@" | awk -v t="$v/$tag" '/staggered/{printf "%-14s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
for r in 1 2; do for v in base F; do
  bn $v gdn --model qwen3-next --batch 16,32,64,512
  bn $v gdn-kf --model qwen3-next --state-layout kv --batch 16,64,512
  bn $v gdn-kf-bf16 --model qwen3-next --state-layout kv --state bf16 --batch 5,8,32,128
  bn $v kda-kf --model kimi-linear --state-layout kv --batch 16,64
done; el "round $r"; done
