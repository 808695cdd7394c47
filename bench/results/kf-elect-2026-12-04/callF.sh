#!/usr/bin/env bash
# Call F: ncu of the final tree's GDN B = 512 f32 replay on the pipeline, K-first against V-first
# (library X of call E, .gpu/kfx.txz): stall reasons and per-instruction counts. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kfx.txz -C /tmp/v
N=/tmp/v/X/replayssm
export LD_LIBRARY_PATH=/tmp/v/X
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.01 --repeat 1"
for lay in kv vk; do
  if [ $lay = kv ]; then k='regex:pipe_kernel<.*\(bool\)0, \(bool\)1>'; else k='regex:pipe_kernel<.*\(bool\)0, \(bool\)0>'; fi
  timeout 80 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
      --section LaunchStats --kernel-name-base demangled -k "$k" --launch-skip 20 --launch-count 1 -o /tmp/rep-$lay \
      $N bench $C --model qwen3-next --batch 512 --state-layout $lay > "$O/ncu-run-$lay.txt" 2>&1
  ncu -i /tmp/rep-$lay.ncu-rep --page details --print-details all 2>&1 | xz -9 > "$O/ncu-details-$lay.txt.xz"
  ncu -i /tmp/rep-$lay.ncu-rep --page source --print-source sass --csv 2>/dev/null | xz -9 > "$O/ncu-sass-$lay.csv.xz"
  el "ncu $lay"
done
