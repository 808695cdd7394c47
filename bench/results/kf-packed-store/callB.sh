#!/usr/bin/env bash
# Call B: N (main + X + W, .gpu/kpb.txz) against M (main). X: K-first packed decode on the pipeline
# stores through the stage buffer (call A). W: K-first verify windows of 3-4 tokens load and store
# their rows by row pairs (one 8- or 4-byte access per pair of channels and one shuffle, where each
# element was one 4- or 2-byte access). Carry [".gpu"].
# Predictions: W moves K-first verify T = 4 (GDN B = 128: 188 us, V-first 160) by 5-10 us (half
# the load instructions; GDN f32 spills 132/136 -> 92/96 bytes), nothing else. X moves the
# crossing of K-first packed per-head / pipeline below today's rules (f32 B = 16, GDN bf16 33,
# KDA bf16 170).
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kpb.txz -C /tmp/v
N=/tmp/v/N/replayssm
{ for t in test_cuda_pipeline test_layout; do echo "$t: $(LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/$t 2>&1 | grep -E "FAIL|passed" | tail -3)"; done
  echo "check --quick: $(LD_LIBRARY_PATH=/tmp/v/N $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tail -3)"
  LD_LIBRARY_PATH=/tmp/v/N timeout 150 $N check --device cuda --filter -kv > "$O/check-kv.txt" 2>&1
  echo "check --filter -kv: $(grep -E "FAIL|passed" "$O/check-kv.txt" | tail -3)"
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for r in 1 2; do for X in M N; do
  for v in "qwen3-next --verify 4 --batch 8,128" "kimi-linear --verify 4 --batch 128" "qwen3-next --verify 4 --batch 128 --state bf16" \
           "kimi-linear --verify 4 --batch 128 --state bf16" "qwen3-next --verify 3 --batch 128"; do
    LD_LIBRARY_PATH=/tmp/v/$X $N bench $C --state-layout kv --model $v 2>&1 |
      awk -v x=$X -v r=$r -v v="$v" '/staggered/{printf "r%s %s %-46s B=%-4s pk %8s rp %8s\n", r, x, v, $1, $5, $6; fflush()}'
  done
done; done | tee "$O/verify.txt"
el verify
# K-first packed decode on N: per-head (--cuda-pipeline 0) against the pipeline (1)
for p in 0 1; do
  for v in "qwen3-next --batch 4,8,12,16" "kimi-linear --batch 4,8,12,16" "qwen3-next --state bf16 --batch 8,16,24,32" \
           "kimi-linear --state bf16 --batch 16,32,64,96,128"; do
    LD_LIBRARY_PATH=/tmp/v/N $N bench $C --state-layout kv --cuda-pipeline $p --model $v 2>&1 |
      awk -v p=$p -v v="$v" '/staggered/{printf "pipe %s %-40s B=%-4s pk %8s rp %8s\n", p, v, $1, $5, $6; fflush()}'
  done
done | tee "$O/crossing.txt"
# the small-batch rule with a K-first bf16 state: packed against replay at B = 5-7 (call A: B = 4 packed, 8 replay)
LD_LIBRARY_PATH=/tmp/v/N $N bench $C --state-layout kv --model qwen3-next --state bf16 --batch 5,6,7 2>&1 |
  awk '/staggered/{printf "gdn-kf-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6; fflush()}' | tee -a "$O/crossing.txt"
el crossing
export LD_LIBRARY_PATH=/tmp/v/M
for lay in kv vk; do
  if [ $lay = kv ]; then k='regex:pipe_kernel<.*\(bool\)0, \(bool\)1>'; else k='regex:pipe_kernel<.*\(bool\)0, \(bool\)0>'; fi
  timeout 100 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
      --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats \
      --kernel-name-base demangled -k "$k" --launch-skip 20 --launch-count 1 -o /tmp/rep-$lay \
      $N bench $C --model qwen3-next --batch 512 --state-layout $lay --min-time 0.01 --repeat 1 > "$O/ncu-run-$lay.txt" 2>&1
  ncu -i /tmp/rep-$lay.ncu-rep --page details --print-details all > "$O/ncu-details-$lay.txt" 2>&1
  ncu -i /tmp/rep-$lay.ncu-rep --page source --print-source sass --csv 2>/dev/null | xz -9 > "$O/ncu-sass-$lay.csv.xz"
  el "ncu $lay"
done
# packed decode of a bf16 state at GDN B = 8 on the per-head kernel: K-first 14.3 us, V-first 7.8 (why)
for lay in kv vk; do
  timeout 100 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      --section SourceCounters --section LaunchStats --kernel-name-base demangled \
      -k 'regex:decode_k128_kernel<\(bool\)0, \(bool\)1, [^,]*0, ' --launch-skip 20 --launch-count 1 -o /tmp/rep8-$lay \
      $N bench $C --model qwen3-next --batch 8 --state bf16 --state-layout $lay --min-time 0.01 --repeat 1 > "$O/ncu8-run-$lay.txt" 2>&1
  ncu -i /tmp/rep8-$lay.ncu-rep --page details --print-details all > "$O/ncu8-details-$lay.txt" 2>&1
  ncu -i /tmp/rep8-$lay.ncu-rep --page source --print-source sass --csv 2>/dev/null | xz -9 > "$O/ncu8-sass-$lay.csv.xz"
  el "ncu8 $lay"
done
