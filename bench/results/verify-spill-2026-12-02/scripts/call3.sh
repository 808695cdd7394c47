#!/usr/bin/env bash
# Device call 3: v parked in shared memory for the MMA windows, KDA's ring base parked, GDN f32 verify's ring offset:
# this tree against main (0a642ce) in one run (verify T=4 and T=3 at B=128, both gates, f32 / bf16 state, both layouts);
# this tree's checks; ncu of its GDN window kernel.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/vec /tmp/main && gunzip -c .gpu/vec.gz > /tmp/vec/fla-reference.txt && tar xzf .gpu/main.tar.gz -C /tmp/main
cfg="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON"
( cmake -S . -B build-gpu $cfg -DRSSM_VECTORS=/tmp/vec/fla-reference.txt && cmake --build build-gpu -j12 --target replayssm_cli test_errors ) > "$O/build.log" 2>&1 &
( cmake -S /tmp/main -B /tmp/bmain $cfg && cmake --build /tmp/bmain -j6 --target replayssm_cli ) > "$O/build-main.log" 2>&1 &
wait; el built; tail -1 "$O/build.log" "$O/build-main.log"
N=./build-gpu/replayssm
V="--batch 128 --ring-len 16 --ring bf16 --io bf16 --phase staggered --min-time 0.1 --repeat 3"
for r in 1 2; do for t in main new; do bin=$N; [ $t = main ] && bin=/tmp/bmain/replayssm
  for cfg2 in "qwen3-next --verify 4" "qwen3-next --verify 4 --state bf16" "kimi-linear --verify 4" "kimi-linear --verify 4 --state bf16" "qwen3-next --verify 4 --state-layout kv" "qwen3-next --verify 3" "kimi-linear --verify 3"; do
    [ $r = 2 ] && [ "${cfg2#*--verify 3}" != "$cfg2" ] && continue
    echo "r$r $t $cfg2: $(timeout 60 $bin bench --device cuda --model $cfg2 $V | grep -E '^ +[0-9]' | awk '{print $7, $8, $9}')"
  done; done; done > "$O/verify-ab.txt" 2>&1; el "verify A/B"; cat "$O/verify-ab.txt"
for t in main new; do bin=$N; [ $t = main ] && bin=/tmp/bmain/replayssm; for m in qwen3-next kimi-linear; do
  echo "$t $m replay: $(timeout 60 $bin bench --device cuda --model $m --batch 1,8,64,512 --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 | grep -E '^ +[0-9]' | awk '{printf "B=%s %s/%s  ", $1, $5, $6}')"
done; done > "$O/decode-ab.txt" 2>&1; el decode; cat "$O/decode-ab.txt"
{ echo "=== check --device cuda"; timeout 120 $N check --device cuda | grep -E "FAIL|passed"
  echo "=== runtime"; timeout 40 $N check --device cuda --suite runtime | grep -E "FAIL|passed"
  echo "=== test_errors"; timeout 30 ./build-gpu/test_errors | tail -1
} > "$O/check.txt" 2>&1; el checked; cat "$O/check.txt"
timeout 150 ncu --kernel-name-base demangled --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio -k "regex:decode_k128_kernel<\\(bool\\)0, \\(bool\\)0, \\(int\\)2, \\(int\\)4" --launch-skip 10 --launch-count 1 $N bench --device cuda --model qwen3-next --verify 4 $V --min-time 0.01 --repeat 1 > "$O/ncu-verify.txt" 2>&1; el ncu
grep -E "decode_k128|stalled|Duration|Throughput|Warp Cycles|Eligible|Issued Warp|Occupancy|==ERR|==WARN" "$O/ncu-verify.txt" | head -40
