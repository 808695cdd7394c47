#!/usr/bin/env bash
# Where the folded step's time goes: bench-step (PDL by rule and off), then ncu kernel durations.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON > /dev/null && cmake --build build-gpu -j16 --target replayssm_cli ) > "$O/build.log" 2>&1
el built; tail -n1 "$O/build.log"
N=build-gpu/replayssm
sum() { awk '/packed step \(N layers\)/{p=$5} /whole replay step/{r=$4} /every row folded/{f=$6} /begin \+ 1 layer/{o=$7} /begin \+ end/{z=$4} END{printf "packed %s replay %s folded %s T1 %s T0 %s", p, r, f, o, z}'; }
for m in qwen3-next kimi-linear; do for b in 1 4 16; do
  echo "$m B=$b: $($N bench-step --device cuda --model $m --layers 36 --batch $b | sum)"
done; done | tee "$O/summary.txt"
for b in 1 4; do echo "qwen3-next B=$b pdl0: $($N bench-step --device cuda --model qwen3-next --layers 36 --batch $b --cuda-pdl 0 | sum)"; done | tee -a "$O/summary.txt"
for L in 1 4; do echo "qwen3-next B=1 layers $L: $($N bench-step --device cuda --model qwen3-next --layers $L --batch 1 | sum)"; done | tee -a "$O/summary.txt"
el bench
for b in 1 4 16; do
ncu --kernel-name-base demangled -k "regex:drain_kernel|fold_every|plan_fold_kernel|plan_seq_kernel|cursor_kernel|decode_k128_kernel<\(bool\)0, \(bool\)0, \(int\)0" --launch-count 400 --metrics gpu__time_duration.sum --csv $N bench-step --device cuda --model qwen3-next --layers 4 --batch $b --reps 5 > "$O/ncu-b$b.csv" 2> "$O/ncu-b$b.err"
python3 - "$O/ncu-b$b.csv" $b <<'PY'
import csv, sys, collections, re
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value")
d = collections.defaultdict(list)
for r in rows[1:]:
    name = re.sub(r"\(.*", "", r[ki]) + ("<" + r[ki].split("<")[1][:40] if "<" in r[ki] else "")
    d[name].append(float(r[vi].replace(",", "")))
for k, v in d.items():
    v.sort(); print(f"B={sys.argv[2]} {k[:90]:90s} n={len(v):3d} median {v[len(v)//2]/1000:.2f} us  min {v[0]/1000:.2f}")
PY
done | tee "$O/ncu-summary.txt"
el done
