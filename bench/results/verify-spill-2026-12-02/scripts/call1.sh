#!/usr/bin/env bash
# Device call 1 (2026-12-02, second session): GDN verify's spills: f6f93f6 / main (0a642ce) / this tree (offset
# addressing in the f32 verify kernels), one run; this tree's checks; the Python tests on CUDA; ncu of the T=4 window.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/vec /tmp/main /tmp/f6f && gunzip -c .gpu/vec.gz > /tmp/vec/fla-reference.txt
tar xzf .gpu/main.tar.gz -C /tmp/main && tar xzf .gpu/f6f.tar.gz -C /tmp/f6f
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
cfg="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON"
( cmake -S . -B build-gpu $cfg -DRSSM_VECTORS=/tmp/vec/fla-reference.txt && cmake --build build-gpu -j16 --target replayssm_cli replayssm ) > "$O/build.log" 2>&1 &
( cmake -S /tmp/main -B /tmp/bmain $cfg && cmake --build /tmp/bmain -j8 --target replayssm_cli ) > "$O/build-main.log" 2>&1 &
( cmake -S /tmp/f6f -B /tmp/bf6f $cfg && cmake --build /tmp/bf6f -j8 --target replayssm_cli ) > "$O/build-f6f.log" 2>&1 &
wait; el "built"; tail -1 "$O/build.log" "$O/build-main.log" "$O/build-f6f.log"
N=./build-gpu/replayssm
V="--verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16 --phase staggered --min-time 0.1 --repeat 3"
for r in 1 2; do for t in f6f main new; do
  bin=$N; [ $t = main ] && bin=/tmp/bmain/replayssm; [ $t = f6f ] && bin=/tmp/bf6f/replayssm
  echo "== round $r $t GDN f32"; timeout 60 $bin bench --device cuda --model qwen3-next $V | grep -E "^ +[0-9]"
  [ $t = f6f ] && continue
  echo "== round $r $t GDN bf16 state"; timeout 60 $bin bench --device cuda --model qwen3-next $V --state bf16 | grep -E "^ +[0-9]"
  echo "== round $r $t KDA f32"; timeout 60 $bin bench --device cuda --model kimi-linear $V | grep -E "^ +[0-9]"
done; done > "$O/verify-ab.txt" 2>&1; el "verify A/B"; cat "$O/verify-ab.txt"
{ echo "=== check --device cuda"; timeout 120 $N check --device cuda | grep -E "FAIL|passed"
  echo "=== runtime"; timeout 40 $N check --device cuda --suite runtime | grep -E "FAIL|passed"
} > "$O/check.txt" 2>&1; el checked; cat "$O/check.txt"
( PYTHONPATH=$PWD/python REPLAYSSM_LIBRARY=$PWD/build-gpu/libreplayssm.so timeout 200 python3 -m pytest -q -p no:cacheprovider python/tests/test_hf.py python/tests/test_torch.py python/tests/test_fla.py -k cuda 2>&1 | tail -15 ) > "$O/pytest.txt"; el pytest; cat "$O/pytest.txt"
timeout 150 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats --section InstructionStats --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio -k regex:decode_k128_kernel --launch-skip 40 --launch-count 1 $N bench --device cuda --model qwen3-next --verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16 --phase staggered --min-time 0.01 --repeat 1 > "$O/ncu-verify.txt" 2>&1; el ncu
grep -E "decode_k128|stalled|Duration|Throughput|Registers|Stall|Warp Cycles|Eligible|Issued|Achieved Occ|Theoretical Occ|Block Limit|Local" "$O/ncu-verify.txt" | head -60
