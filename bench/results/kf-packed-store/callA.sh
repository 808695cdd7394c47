#!/usr/bin/env bash
# Prepared on branch next/kfirst (not run yet). Three libraries built on the dev VM, in
# .gpu/kps.txz: M (main), X (the branch's first commit: K-first packed decode on the pipeline stores
# through the stage's buffer), Y (the branch's head: X plus K-first bf16 rows by one 16-byte access
# per lane and channel). Y/ also holds replayssm, test_cuda_pipeline and test_layout.
# Bits first (Y), then timings, M X Y M X Y, then ncu of M's replay pipeline at GDN B = 512, K-first
# against V-first (where K-first's 9% goes). Carry [".gpu"].
# Predictions: X moves K-first packed decode on the pipeline towards V-first's per-head packed
# decode (GDN B = 512: 666.9 -> about 560-600 us), nothing else; Y moves K-first bf16 decode on the
# per-head kernel (GDN B = 8 packed 14.29, replay 12.69 us) by a few percent (half the loads, no
# shuffles), nothing with an f32 state.
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kps.txz -C /tmp/v
N=/tmp/v/Y/replayssm
{ LD_LIBRARY_PATH=/tmp/v/Y /tmp/v/Y/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/Y /tmp/v/Y/test_layout 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/Y $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  LD_LIBRARY_PATH=/tmp/v/Y $N check --device cuda --quick --cuda-pipeline 1 --filter K=128,V=128 2>&1 | grep -E "FAIL|passed"
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X $N bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-16s %-2s B=%-4s pk %8s rp %8s\n", t, x, $1, $5, $6; fflush()}'
}
for r in 1 2; do for X in M X Y; do
  bn $X gdn-kf-pipe --cuda-pipeline 1 --model qwen3-next --batch 64,512
  bn $X kda-kf-pipe --cuda-pipeline 1 --model kimi-linear --batch 512
  bn $X gdn-kf-bf16-pipe --cuda-pipeline 1 --model qwen3-next --state bf16 --batch 64,512
  bn $X gdn-kf-bf16 --model qwen3-next --state bf16 --batch 1,2,4,8,16,32
  bn $X kda-kf-bf16 --model kimi-linear --state bf16 --batch 1,2,4,8,32
  bn $X gdn-kf --model qwen3-next --batch 8
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
export LD_LIBRARY_PATH=/tmp/v/M
for lay in kv vk; do
  if [ $lay = kv ]; then k='regex:pipe_kernel<.*, false, true>'; else k='regex:pipe_kernel<.*, false, false>'; fi
  timeout 150 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
      --section WarpStateStats --section SchedulerStats --section SourceCounters --section LaunchStats \
      --kernel-name-base demangled -k "$k" --launch-skip 20 --launch-count 1 -o /tmp/rep-$lay \
      $N bench ${C% --state-layout kv} --model qwen3-next --batch 512 --state-layout $lay --min-time 0.01 --repeat 1 > "$O/ncu-run-$lay.txt" 2>&1
  ncu -i /tmp/rep-$lay.ncu-rep --page details --print-details all > "$O/ncu-details-$lay.txt" 2>&1
  ncu -i /tmp/rep-$lay.ncu-rep --page source --print-source sass --csv 2>/dev/null | xz -9 > "$O/ncu-sass-$lay.csv.xz"
  el "ncu $lay"
done
