#!/usr/bin/env bash
# Device call 2: where GDN verify T=4 B=128 lost 9% between f6f93f6 (179) and 3357975 (195): four trees between, one run; ncu of main's window kernel.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
cfg="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON"
TR="f8fa3eb 6dc94b3 301f29f 4bf317d"
for t in $TR; do mkdir -p /tmp/s-$t; tar xzf .gpu/t-$t.tar.gz -C /tmp/s-$t; ( cmake -S /tmp/s-$t -B /tmp/b-$t $cfg && cmake --build /tmp/b-$t -j4 --target replayssm_cli ) > "$O/build-$t.log" 2>&1 & done
( cmake -S . -B build-gpu $cfg && cmake --build build-gpu -j4 --target replayssm_cli ) > "$O/build.log" 2>&1 &
wait; el built; for t in $TR; do tail -1 "$O/build-$t.log"; done; tail -1 "$O/build.log"
V="--verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16 --phase staggered --min-time 0.1 --repeat 3"
for r in 1 2; do for t in $TR main; do
  bin=/tmp/b-$t/replayssm; [ $t = main ] && bin=./build-gpu/replayssm
  echo "== round $r $t GDN f32 $(timeout 60 $bin bench --device cuda --model qwen3-next $V | grep -E '^ +[0-9]')"
done; done > "$O/bisect.txt" 2>&1; el bisect; cat "$O/bisect.txt"
timeout 200 ncu --kernel-name-base demangled --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis --section InstructionStats --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio -k "regex:decode_k128_kernel<(false|0), (false|0), 2, 4" --launch-skip 40 --launch-count 1 ./build-gpu/replayssm bench --device cuda --model qwen3-next $V --min-time 0.01 --repeat 1 > "$O/ncu-verify.txt" 2>&1; el ncu
grep -E "decode_k128|stalled|Duration|Throughput|Registers|Warp Cycles|Eligible|Issued|Occupancy|Local" "$O/ncu-verify.txt" | head -60
