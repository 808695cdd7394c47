#!/usr/bin/env bash
# Call Q: the streaming kernel with its chunks really double-buffered. In call S's library (S) ptxas
# gave a warp's next chunk of 4 rows the registers of the current one (the chunk loop was rolled), so
# the next loads went out only once the current rows had been used: one chunk in flight per warp, a
# DRAM round trip per chunk, also in the bf16 streaming the rules use from B = 31. S4 (branch
# wip/stream-warp c8fb201) unrolls the loop (next chunk's loads before the current chunk's
# arithmetic, by cuobjdump) and with RSSM_STREAM_EARLY=1 issues the first two chunks before the
# token's preparation (a warp of 8 rows then has all 8 in flight, as FLA's and the per-head
# kernel's). Same bits (test_cuda_stream). Timings against the per-head kernel and S's streaming in
# the same run, then ncu at GDN B = 512. S5 (branch wip/stream-unroll b67d88a) is main with the loop
# unrolled and the first two chunks early (not for 16 f32 rows): the change to merge if it wins. Carry [".gpq"]: S/ (call S's library, CLI,
# tests), S4/ and S5/ (libraries; S4 also bench_copy_shapes of main 2026-12-05, with the register
# cap): tar cJf .gpq/pq.txz -C DIR S S4 S5. To rebuild it: a CUDA build (-DRSSM_CUDA=ON, Release) of
# wip/stream-warp b28116c for S (libreplayssm.so*, replayssm, test_cuda_stream), of c8fb201 for S4
# (libreplayssm.so*, and main's bench_copy_shapes), of wip/stream-unroll b67d88a for S5 (libreplayssm.so*).
set -uo pipefail
O=/tmp/resQ; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/resQ.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/v && mkdir -p /tmp/v && tar xJf .gpq/pq.txz -C /tmp/v
V=/tmp/v/S
for t in "S4 1 1" "S5 4 0"; do
  set -- $t
  RSSM_STREAM_WARPS=$2 RSSM_STREAM_EARLY=$3 LD_LIBRARY_PATH=/tmp/v/$1 timeout 100 "$V/test_cuda_stream" 2>&1 |
    grep -E "^FAIL|passed" | sed "s/^/$1, warps $2, early $3: /"
done | tee "$O/checks.txt"; el test
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3"
# library, tag, warps per CTA, prefetch, early, rows per warp (0: the per-head kernel), model tag, bench flags
bn() { local lib=$1 tag=$2 nw=$3 pf=$4 e=$5 rw=$6 m=$7; shift 7
  RSSM_STREAM_WARPS=$nw RSSM_STREAM_PF=$pf RSSM_STREAM_EARLY=$e LD_LIBRARY_PATH=/tmp/v/$lib "$V/replayssm" bench $C \
    --cuda-stream "$rw" "$@" | awk -v t="$lib/$tag/$m" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$O/bench.txt"; }
# rows per warp -1: the rules (bf16: streamed by 4 warps of 16 rows from B = 31)
F="--slot-order random --model qwen3-next --batch 8,16,64,512"
H="--slot-order random --model qwen3-next --state bf16 --batch 16,32,64,512"
for r in 1 2; do
  bn S ph 4 0 0 0 gdn $F
  bn S4 w1r8e 1 0 1 8 gdn $F
  bn S4 w1r8 1 0 0 8 gdn $F
  bn S rule 4 0 0 -1 gdn-bf16 $H
  bn S4 rule 4 0 0 -1 gdn-bf16 $H
  bn S5 rule 4 0 0 -1 gdn-bf16 $H
  bn S4 w1r8e 1 0 1 8 gdn-bf16 $H
  el "round $r"
done
bn S4 w2r8e 2 0 1 8 gdn $F
bn S4 w4r16 4 0 0 16 gdn $F
bn S4 w1r16e 1 0 1 16 gdn-bf16 $H
bn S ph 4 0 0 0 kda --slot-order random --model kimi-linear --batch 8,16,64,512
bn S4 w1r8e 1 0 1 8 kda --slot-order random --model kimi-linear --batch 8,16,64,512
bn S rule 4 0 0 -1 kda-bf16 --slot-order random --model kimi-linear --state bf16 --batch 32,128,512
bn S4 rule 4 0 0 -1 kda-bf16 --slot-order random --model kimi-linear --state bf16 --batch 32,128,512
bn S5 rule 4 0 0 -1 kda-bf16 --slot-order random --model kimi-linear --state bf16 --batch 32,128,512
el extra
# the copy over launch shapes again, now with the register cap beside the shared-memory one
timeout 120 /tmp/v/S4/bench_copy_shapes 64 512 > "$O/copy-shapes.txt" 2>&1; el shapes
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,smsp__inst_executed.sum
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
for s in long_scoreboard barrier lg_throttle drain wait short_scoreboard no_instruction; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
B="bench --device cuda --model qwen3-next --batch 512 --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.01 --repeat 1"
for c in "S ph 4 0 0 0 -1" "S ph-nopf 4 0 0 0 0" "S4 w1r8e 1 0 1 8 -1"; do
  set -- $c
  RSSM_STREAM_WARPS=$3 RSSM_STREAM_PF=$4 RSSM_STREAM_EARLY=$5 LD_LIBRARY_PATH=/tmp/v/$1 timeout 100 ncu --clock-control none \
    --metrics $M -k regex:"decode_k128_kernel|stream_kernel" --launch-count 1 "$V/replayssm" $B --cuda-stream "$6" \
    --cuda-prefetch "$7" > "$O/ncu-$2.txt" 2>&1
  el "ncu $2"
done
