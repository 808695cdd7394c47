#!/usr/bin/env bash
# Call G: K-first rows loaded and stored by lane pairs (X: lanes 2m, 2m + 1 read one channel's 32
# bytes in one instruction and swap halves by a shuffle) against main's 041f464 (M): bits (the
# layouts' test, the quick matrix, dump_window over both layouts), then K-first packed and replay
# decode in alternating rounds. Libraries built on the dev VM (nvcc 13.0, sm_90) in .gpu/s19.txz
# (T: the CLI and tools). Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/s19.txz -C /tmp/v
for X in M X; do (LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/dump_window_q - > "$O/hash-$X.txt" 2>&1) & done
{ LD_LIBRARY_PATH=/tmp/v/X /tmp/v/T/test_layout 2>&1 | tail -n 1
  LD_LIBRARY_PATH=/tmp/v/X /tmp/v/T/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  wait
  grep -c ": [0-9a-f]*$" "$O/hash-M.txt"
  cmp -s "$O/hash-M.txt" "$O/hash-X.txt" && echo "X: every hash equal to M's" || echo "X: hashes DIFFER"
} 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in M X; do
  bn $X gdn-kf --model qwen3-next --batch 8,64,512
  bn $X kda-kf --model kimi-linear --batch 8,64
  bn $X gdn-kf-bf16 --model qwen3-next --state bf16 --batch 64
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
