#!/usr/bin/env bash
# Tensor parallelism and the prefill/decode hand-off on a GPU machine (issue 6). Builds nothing:
#   bench/run_tp.sh BUILD_DIR OUT_DIR
# BUILD_DIR holds a CUDA build with NCCL (CMake prints "replayssm: NCCL ..."). Runs
#   simulate --tp 1 (the NCCL path with a 1-rank communicator) and, when nvidia-smi shows at
#   least 2 GPUs, simulate --tp 2 (one process per GPU); each also runs packed and replay on the
#   whole layer and checks that the tp run's token streams are identical to them;
#   handoff on one GPU (NCCL send/recv to self) and, with 2 GPUs, GPU 0 -> GPU 1;
# writing logs, JSON and CSV into OUT_DIR. NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
# The exit status is non-zero when any run failed or any stream/continuation differed.
set -uo pipefail
build=${1:?usage: bench/run_tp.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/run_tp.sh BUILD_DIR OUT_DIR}
b=$build/replayssm
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
gpus=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
{
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1) x $gpus"
  echo "commit: ${RSSM_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
} | tee "$out/tp-info.txt"
fail=0
run() { # name, command...
  local name=$1; shift
  echo "=== $*" | tee "$out/$name.txt"
  timeout 170 "$@" >> "$out/$name.txt" 2>&1 || { echo "FAILED (exit $?): $name"; fail=1; }
  tail -14 "$out/$name.txt"; echo
}
# 4 layers: the size of the recorded runs (tp/, 7b6d484), and each rank builds its own weights
sim=(simulate --device cuda --model qwen3-next --layers 4 --batch 64 --requests 256 --arrival-gap 0 --gen 32,64)
tps=(1); [ "$gpus" -ge 2 ] && tps+=(2)
for tp in "${tps[@]}"; do
  run "tp-simulate-tp$tp" "$b" "${sim[@]}" --tp "$tp"
  run "tp-simulate-tp$tp-json" "$b" "${sim[@]}" --tp "$tp" --json
done
ho=(handoff --device cuda --model qwen3-next --requests 16 --prompt 256 --pre 8 --gen 24)
run tp-handoff-1gpu "$b" "${ho[@]}" --ranks 1 --csv "$out/tp-handoff-1gpu.csv"
run tp-handoff-1gpu-kda "$b" handoff --device cuda --model kimi-linear --requests 16 --prompt 256 --pre 8 --gen 24 \
  --ring bf16 --csv "$out/tp-handoff-1gpu-kda.csv"
[ "$gpus" -ge 2 ] && run tp-handoff-2gpu "$b" "${ho[@]}" --ranks 2 --csv "$out/tp-handoff-2gpu.csv"
exit $fail
