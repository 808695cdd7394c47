#!/usr/bin/env bash
# Call C: the rows' loads after the gate inputs (kargs.zero dependency, decode_k128.cu `after`):
# bitwise tests and float64 checks of the new build (.gpu/new.txz), then the CLI bench of the old
# (.gpu/libs.txz, 770c382) and new libraries in one call, alternating, at the batches the per-head
# kernel runs (replay, packed, verify T = 4). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/old /tmp/new && tar xJf .gpu/libs.txz -C /tmp/old && tar xJf .gpu/new.txz -C /tmp/new
run() { LD_LIBRARY_PATH=/tmp/$1/X /tmp/$1/X/replayssm "${@:2}"; }
{ for t in test_cuda_stream test_cuda_pipeline test_graph_vs_eager; do
      echo "$t: $(LD_LIBRARY_PATH=/tmp/new/X /tmp/new/X/$t 2>&1 | grep -E "FAIL|passed" | tail -3)"; done
  echo "check: $(run new check --device cuda --quick 2>&1 | grep -E "FAIL|passed" | tail -3)"; } 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for round in 1 2; do
    for lib in old new; do
        run $lib bench $C --model qwen3-next --batch 1,2,4,8,12,14,16 > "$O/r$round-$lib-gdn.txt" 2>&1
        run $lib bench $C --model kimi-linear --batch 1,4,8,16,32 > "$O/r$round-$lib-kda.txt" 2>&1
        run $lib bench $C --model qwen3-next --state bf16 --batch 8,16 > "$O/r$round-$lib-gdn-bf16.txt" 2>&1
        run $lib bench $C --model qwen3-next --verify 4 --batch 8,128 --phase staggered > "$O/r$round-$lib-gdn-verify.txt" 2>&1
        run $lib bench $C --model kimi-linear --verify 4 --batch 8,128 --phase staggered > "$O/r$round-$lib-kda-verify.txt" 2>&1
    done
done
for f in gdn kda gdn-bf16 gdn-verify kda-verify; do
    for round in 1 2; do
        paste <(awk -F'|' '/^ *[0-9].*staggered/{split($1, a, " "); split($2, b, " "); print a[1], b[1], b[2]}' "$O/r$round-old-$f.txt") \
              <(awk -F'|' '/^ *[0-9].*staggered/{split($2, b, " "); print b[1], b[2]}' "$O/r$round-new-$f.txt") | sed "s/^/$f r$round B=/"
    done
done | column -t | tee "$O/ab.txt"
