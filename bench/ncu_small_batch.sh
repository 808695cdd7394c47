#!/usr/bin/env bash
# ncu of one GDN layer kernel at B=1 inside bench-step's 36-layer graphs (--reps 4): packed (step 5
# of its timing), replay with every row folded (step 5 of the small-batch timing) and plain replay
# (step 5). The launch counts follow bench-step's order of timings. bench/ncu_small_batch.sh OUTDIR [BUILD_DIR]
b=${2:-build}/replayssm
out=${1:-/tmp}
args="bench-step --device cuda --model qwen3-next --layers 36 --batch 1 --reps 4"
sec="--section SpeedOfLight --section WarpStateStats --section LaunchStats --section SchedulerStats --section InstructionStats --section SourceCounters --section MemoryWorkloadAnalysis"
for skip in 1476 2808 180; do
  echo "=== ncu launch-skip $skip"
  timeout 200 ncu --clock-control none $sec -k regex:decode_k128_ --launch-skip $skip --launch-count 1 $b $args > $out/ncu-$skip.txt 2>&1
  grep -E "decode_k128_kernel<|Duration|Executed Ipc A|Warp Cycles Per Issued|Executed Instructions  |No Eligible|Active Warps Per|Registers Per|Grid Size|Block Size|Cluster Size|DRAM Throughput" $out/ncu-$skip.txt
done
