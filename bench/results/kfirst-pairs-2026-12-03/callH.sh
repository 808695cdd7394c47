#!/usr/bin/env bash
# Call H: call G's bit check, run to its end (in call G the hashes were read before dump_window had
# written them): dump_window over both layouts for M and X, the full check matrix's K-first cases
# (`--filter -kv`, no golden vectors) and test_cuda_pipeline with X. Carry [".gpu"] (s19.txz).
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/s19.txz -C /tmp/v
for X in M X; do LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/dump_window_q - > "$O/hash-$X.txt" 2>&1 & done
LD_LIBRARY_PATH=/tmp/v/X /tmp/v/T/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tee "$O/checks.txt"
LD_LIBRARY_PATH=/tmp/v/X /tmp/v/T/replayssm check --device cuda --vectors none --filter -kv > "$O/check-kv.txt" 2>&1
grep -E "FAIL|passed" "$O/check-kv.txt" | tee -a "$O/checks.txt"
el check
wait
{ grep -c ": [0-9a-f]*$" "$O/hash-M.txt"
  cmp -s "$O/hash-M.txt" "$O/hash-X.txt" && echo "X: every hash equal to M's" || echo "X: hashes DIFFER"; } | tee -a "$O/checks.txt"
el done
