#!/usr/bin/env bash
# Builds on a GPU machine and records the GPU results, in two phases that each fit one
# device call (the build directory is reused by the second):
#   bench/run_gpu.sh check OUTDIR [vectors]  build, ctest (CUDA cases run here), the full
#                                            equivalence matrix + golden vectors on CUDA,
#                                            compute-sanitizer memcheck and racecheck
#   bench/run_gpu.sh bench OUTDIR            kernel benchmarks (GDN and KDA presets, B in
#                                            1..512, L in 8/16/32, bf16 state, verify T=4),
#                                            a 36-layer runtime step in one CUDA graph, the
#                                            serving simulation at Qwen3-Next layer shapes,
#                                            the Python tests with torch on CUDA
# RSSM_COMMIT names the source commit where the tree has no .git. (The committed results were
# taken when the script still timed two variants of the fast kernels; see bench/results.)
set -uo pipefail
phase=${1:?usage: bench/run_gpu.sh check|bench OUTDIR [vectors]}
out=${2:?usage: bench/run_gpu.sh check|bench OUTDIR [vectors]}
vec=${3:-}
mkdir -p "$out"
b=./build/replayssm
info() {
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
  echo "commit: ${RSSM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
}
if [ "$phase" = check ]; then
  info | tee "$out/gpu-info.txt"
  cfg=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90)
  # NCCL for simulate --tp / handoff: the CUDA toolkit's, else the one PyTorch's wheels carry
  nccl=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)
  [ -n "$nccl" ] && cfg+=(-DNCCL_ROOT="$nccl")
  [ -n "$vec" ] && cfg+=(-DRSSM_VECTORS="$(realpath "$vec")")
  { cmake -S . -B build "${cfg[@]}" && cmake --build build -j"$(nproc)"; } > "$out/gpu-build.log" 2>&1 \
    || { tail -30 "$out/gpu-build.log"; exit 1; }
  ctest --test-dir build --output-on-failure -j4 > "$out/gpu-ctest.log" 2>&1; tail -22 "$out/gpu-ctest.log"
  { info; echo "=== replayssm check --device cuda --vectors ${vec:-none}";
      $b check --device cuda --vectors "${vec:-none}" | grep -v '^PASS'; } > "$out/gpu-check.txt" 2>&1
  { echo "=== replayssm check --device cuda --vectors none --cuda-split 1 (small batches otherwise split heads)";
    $b check --device cuda --vectors none --cuda-split 1 | grep -v '^PASS' | tail -2
    echo "=== replayssm check --device cuda --vectors none --cuda-pipeline 1 --cuda-pipeline-balance 0|1 (the pipeline at every size, both orders)"
    for bal in 0 1; do
      $b check --device cuda --vectors none --cuda-pipeline 1 --cuda-pipeline-balance $bal | grep -v '^PASS' | tail -1
    done
    echo "=== replayssm check --suite runtime --device cuda"; $b check --suite runtime --device cuda | tail -1
  } >> "$out/gpu-check.txt" 2>&1
  cat "$out/gpu-check.txt"
  { info
    echo "=== compute-sanitizer --tool memcheck replayssm check --device cuda --quick --vectors none"
    timeout 150 compute-sanitizer --tool memcheck $b check --device cuda --quick --vectors none 2>&1 | grep -v '^PASS' | tail -4
    echo "=== compute-sanitizer --tool racecheck replayssm check --device cuda --quick --vectors none --filter L=16"
    timeout 100 compute-sanitizer --tool racecheck $b check --device cuda --quick --vectors none --filter L=16 2>&1 \
      | grep -v '^PASS' | tail -4
  } > "$out/gpu-sanitizer.txt" 2>&1
  cat "$out/gpu-sanitizer.txt"
  exit 0
fi
# bench phase
info | tee "$out/gpu-info.txt"
run() { echo "=== $*"; "$@"; echo; }
{
  info
  run $b bench --device cuda --model qwen3-next --batch 1,8,32,64,128,256,512 --ring-len 16 --ring bf16 --io bf16 --csv "$out/gpu-bench-gdn.csv"
  run $b bench --device cuda --model kimi-linear --batch 1,8,32,64,128,256,512 --ring-len 16 --ring bf16 --io bf16 --csv "$out/gpu-bench-kda.csv"
  run $b bench --device cuda --model qwen3-next --state bf16 --ring bf16 --batch 512 --ring-len 16 --io bf16
  run $b bench --device cuda --model qwen3-next --verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16 --phase both
  run $b bench --device cuda --model kimi-linear --verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16
  run $b bench --device cuda --model qwen3-next --batch 64,512 --ring-len 8,32 --ring bf16 --io bf16
  run $b bench --device cuda --model qwen3-next --batch 64,512 --ring-len 16 --ring bf16 --io bf16 --phase inphase
} > "$out/gpu-bench.txt" 2>&1
grep -E "^#####|^===|^ +[0-9]+ +[0-9]+ " "$out/gpu-bench.txt"
{ for m in qwen3-next kimi-linear; do for B in 1 8 64 512; do
    run $b bench-step --device cuda --model $m --layers 36 --batch $B --reps 160; done; done
  run $b bench-step --device cuda --layers 36 --batch 64 --reps 160 --phase inphase; } | tee "$out/gpu-bench-step.txt"
# simulate (qwen3-next: 36 layers, bf16 weights and activations; each run about 2 minutes)
sim=($b simulate --device cuda --model qwen3-next --batch 256 --requests 2048 --arrival-gap 0 --gen 32,64)
{ echo "command: ${sim[*]}"; timeout 300 "${sim[@]}"; } > "$out/gpu-simulate.txt" 2>&1; tail -16 "$out/gpu-simulate.txt"
{ echo "command: ${sim[*]} --ring bf16"; timeout 300 "${sim[@]}" --ring bf16; } > "$out/gpu-simulate-ring-bf16.txt" 2>&1; tail -16 "$out/gpu-simulate-ring-bf16.txt"
{ echo "command: ${sim[*]} --spec 4"; timeout 300 "${sim[@]}" --spec 4; } > "$out/gpu-simulate-spec.txt" 2>&1; tail -16 "$out/gpu-simulate-spec.txt"
{ echo "command: ${sim[*]} --profile"; timeout 300 "${sim[@]}" --profile; } > "$out/gpu-simulate-profile.txt" 2>&1; tail -10 "$out/gpu-simulate-profile.txt"
timeout 120 build/bench_dense_gemm > "$out/gpu-dense-gemm.txt" 2>&1; cat "$out/gpu-dense-gemm.txt"
timeout 120 python3 -m pytest python/tests -q -rs > "$out/gpu-pytest.log" 2>&1; tail -12 "$out/gpu-pytest.log"
# several GPUs (issue 6): simulate --tp through NCCL and the prefill/decode hand-off
timeout 200 bench/run_tp.sh build "$out/tp" > "$out/gpu-tp.txt" 2>&1; tail -40 "$out/gpu-tp.txt"
