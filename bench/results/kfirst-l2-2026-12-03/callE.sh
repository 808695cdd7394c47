#!/usr/bin/env bash
# Call E: K-first checkpoint loads that ask L2 for 256 (P2) or 128 (P1) bytes around each miss
# (ld.global .L2::256B / .L2::128B) against main's f54d085 (R): checks (the layouts' bits, the
# quick matrix, dump_window over both layouts), K-first packed and replay decode and verify timed
# in alternating rounds, a V-first control. Libraries built on the dev VM (nvcc 13.0, sm_90) in
# .gpu/s18.txz (T: the CLI and tools). Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/s18.txz -C /tmp/v
LIBS=$(ls -d /tmp/v/[RP]* | xargs -n1 basename | tr '\n' ' ')
for X in $LIBS; do (LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/dump_window_q - > "$O/hash-$X.txt" 2>&1) & done
{ for X in $LIBS; do
    [ $X = R ] && continue
    echo "== $X"
    LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/test_layout 2>&1 | tail -n 1
    LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
    LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  done; wait
  grep -c ": [0-9a-f]*$" "$O/hash-R.txt"
  for X in $LIBS; do cmp -s "$O/hash-R.txt" "$O/hash-$X.txt" && echo "$X: every hash equal to R's" || echo "$X: hashes DIFFER"; done
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in $LIBS; do
  bn $X gdn-kf --model qwen3-next --state-layout kv --batch 1,8,64,512
  bn $X kda-kf --model kimi-linear --state-layout kv --batch 8,64
  bn $X gdn-kf-bf16 --model qwen3-next --state-layout kv --state bf16 --batch 64
  bn $X gdn-kf-T4 --model qwen3-next --state-layout kv --verify 4 --batch 128
  bn $X gdn-vf --model qwen3-next --batch 64
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
