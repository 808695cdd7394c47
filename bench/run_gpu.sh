#!/usr/bin/env bash
# Builds on a GPU machine and records the GPU results: the whole test suite (CUDA cases run
# there), a 36-layer runtime step in one CUDA graph, the serving simulation at Qwen3-Next
# layer shapes (packed vs replay, with and without speculative decoding), and the Python
# tests with torch on CUDA. Usage: bench/run_gpu.sh OUTDIR [vectors-file]
set -uo pipefail
out=${1:?usage: bench/run_gpu.sh OUTDIR [vectors]}
vec=${2:-}
mkdir -p "$out"
{
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
} > "$out/gpu-info.txt"
cat "$out/gpu-info.txt"
cfg=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90)
[ -n "$vec" ] && cfg+=(-DRSSM_VECTORS="$(realpath "$vec")")
cmake -S . -B build "${cfg[@]}" > "$out/gpu-build.log" 2>&1 && cmake --build build -j"$(nproc)" >> "$out/gpu-build.log" 2>&1 \
  || { tail -30 "$out/gpu-build.log"; exit 1; }
ctest --test-dir build --output-on-failure > "$out/gpu-ctest.log" 2>&1
tail -25 "$out/gpu-ctest.log"
./build/replayssm bench-step --device cuda --layers 36 --batch 64 --reps 160 | tee "$out/gpu-bench-step.txt"
sim=(./build/replayssm simulate --device cuda --model qwen3-next --batch 256 --requests 768 --arrival-gap 0 --gen 32,64)
{ echo "command: ${sim[*]}"; "${sim[@]}"; } | tee "$out/gpu-simulate.txt"
{ echo "command: ${sim[*]} --spec 4"; "${sim[@]}" --spec 4; } | tee "$out/gpu-simulate-spec.txt"
python3 -m pytest python/tests -q -rs > "$out/gpu-pytest.log" 2>&1
tail -15 "$out/gpu-pytest.log"
