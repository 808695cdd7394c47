#!/usr/bin/env bash
# Call D: verify windows that issue the speculative ring copy before the rows' loads (N) and, on
# top of it, the K-first f32 window loading its rows after the token preparation (L), against
# main's f54d085 (R): bit for bit (dump_window on a 20-slot pool: GDN and KDA, f32 and bf16 state,
# both layouts, T = 1..8), N's and L's checks, verify timings in alternating rounds. Libraries
# built on the dev VM (nvcc 13.0, sm_90) in .gpu/s17.txz (T: the CLI and tools). Carry [".gpu"].
set -uo pipefail
# everything lands in /tmp/res, packed into $OUT/res.tgz at each milestone (the tool brings back 8 files)
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/s17.txz -C /tmp/v
for X in R N L; do (LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/dump_window_q - > "$O/hash-$X.txt" 2>&1) & done
{ for X in N L; do
    echo "== $X"
    LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
    LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  done; wait
  grep -c ": [0-9a-f]*$" "$O/hash-R.txt"
  for X in N L; do cmp -s "$O/hash-R.txt" "$O/hash-$X.txt" && echo "$X: every hash equal to R's" || echo "$X: hashes DIFFER"; done
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in R N L; do
  bn $X gdn-kf-T4 --model qwen3-next --state-layout kv --verify 4 --batch 8,128
  bn $X kda-kf-T4 --model kimi-linear --state-layout kv --verify 4 --batch 128
  if [ $X != L ]; then
    bn $X gdn-T4 --model qwen3-next --verify 4 --batch 8,128,512
    bn $X gdn-T3 --model qwen3-next --verify 3 --batch 128
    bn $X gdn-T8 --model qwen3-next --verify 8 --batch 128
    bn $X gdn-T4-bf16 --model qwen3-next --state bf16 --verify 4 --batch 128
    bn $X kda-T4 --model kimi-linear --verify 4 --batch 8,128
  fi
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
