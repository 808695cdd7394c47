#!/usr/bin/env bash
# Call E: the final tree Z (Y's 219 kernels by cuobjdump; the launch rules put KDA batches of one
# word on the pipeline from B = 20, K-first from 16) against H (2751481), both by their rules.
# Racecheck of a KDA case of the quick matrix with the pipeline forced (one word: the KDA
# BAL_WORD kernels), check --quick by rule, then two alternating rounds. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kp.txz -C /tmp/v
f="kda/L=64/state=f32,ring=bf16,io=bf16/H=2,HV=4,K=128"
{ echo "=== compute-sanitizer --tool racecheck replayssm check --device cuda --quick --cuda-pipeline 1 --filter $f"
  LD_LIBRARY_PATH=/tmp/v/Z timeout 150 compute-sanitizer --tool racecheck /tmp/v/Z/replayssm check --device cuda --quick \
    --cuda-pipeline 1 --filter "$f" 2>&1 | grep -E "PASS|FAIL|passed|SUMMARY|rror" | head -20; } > "$O/racecheck.txt"
cat "$O/racecheck.txt"; el racecheck
LD_LIBRARY_PATH=/tmp/v/Z /tmp/v/Z/replayssm check --device cuda --quick > "$O/check.txt" 2>&1; echo "rc=$?" >> "$O/check.txt"
tail -2 "$O/check.txt"; el check
C="--device cuda --model kimi-linear --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/Z/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-10s %-2s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in H Z; do
  bn $X kda --batch 16,20,24,32,36
  bn $X kda-bf16 --state bf16 --batch 20,24
  bn $X kda-kf --state-layout kv --batch 16,20
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
el done
