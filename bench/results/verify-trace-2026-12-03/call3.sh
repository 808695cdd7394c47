#!/usr/bin/env bash
# Call 3: the start fold on the FP64 tensor cores (.gpu/new.txz, N) against HEAD (.gpu/final.txz,
# F): checks of N, verify windows A/B (two rounds, alternating), then ncu's per-instruction stall
# samples of N's GDN T = 4 window (B = 128). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/final.txz -C /tmp/v && tar xJf .gpu/new.txz -C /tmp/v
{ echo "test_cuda_pipeline: $(LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)"
  echo "check: $(LD_LIBRARY_PATH=/tmp/v/N /tmp/v/N/replayssm check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tail -5)"
  for lib in F N; do LD_LIBRARY_PATH=/tmp/v/$lib timeout 200 /tmp/v/$lib/replayssm check --device cuda --filter verify > "$O/check-verify-$lib.txt" 2>&1
      echo "check --filter verify ($lib): $(grep -E "FAIL|passed" "$O/check-verify-$lib.txt" | tail -3)"; done; } | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --batch 128"
for r in 1 2; do for lib in F N; do
    X="LD_LIBRARY_PATH=/tmp/v/$lib /tmp/v/$lib/replayssm bench $C"
    for v in "qwen3-next --verify 4" "kimi-linear --verify 4" "qwen3-next --verify 4 --state bf16" "qwen3-next --verify 3" \
             "qwen3-next --verify 4 --state-layout kv" "kimi-linear --verify 4 --state bf16"; do
        eval "$X --model $v" 2>&1 | awk -v l=$lib -v r=$r -v v="$v" '/staggered/{printf "r%s %s %-40s %s\n", r, l, v, $0; fflush()}'
    done
done; done | tee "$O/ab.txt"
export LD_LIBRARY_PATH=/tmp/v/N
timeout 200 ncu --section SourceCounters --section WarpStateStats --section InstructionStats \
    --kernel-name-base demangled -k 'regex:decode_k128_kernel<.*2, .*4, .*>' --launch-skip 30 --launch-count 1 -o /tmp/rep \
    /tmp/v/N/replayssm bench $C --verify 4 --model qwen3-next --min-time 0.01 --repeat 1 > "$O/ncu-run.txt" 2>&1
ncu -i /tmp/rep.ncu-rep --page details --print-details all > "$O/ncu-details.txt" 2>&1
ncu -i /tmp/rep.ncu-rep --page source --print-source sass --csv > "$O/ncu-sass.csv" 2>&1
xz -9 "$O/ncu-sass.csv"; grep -m2 "decode_k128" "$O/ncu-details.txt"; tail -2 "$O/ncu-run.txt"
