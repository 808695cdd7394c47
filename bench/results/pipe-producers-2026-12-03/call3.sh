#!/usr/bin/env bash
# Call 3: the kept change (.gpu/np.txz: 3 producer warps launched, A.producers of them taking
# items, cuda_pipeline_producers forcing 1-3): checks first, then the producers' sweep, 2 against
# 3, GDN f32 / bf16 and KDA replay on the pipeline (one round: the device time left). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/np.txz -C /tmp/v
N=/tmp/v/N; export LD_LIBRARY_PATH=$N
{ for t in test_cuda_pipeline; do echo "$t: $($N/$t 2>&1 | grep -E "FAIL|passed" | tail -4)"; done
  echo "check --quick --cuda-pipeline 1: $($N/replayssm check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed" | tail -3)"
} 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { local lab=$1; shift; $N/replayssm bench $C "$@" 2>&1 | awk -v l="$lab" '/^ *[0-9].*staggered/{print l, $0; fflush()}'; }
for p in 2 3; do
    run "np$p gdn" --cuda-pipeline 1 --model qwen3-next --batch 12,16,24,32,48,64,128,512 --cuda-pipeline-producers $p
    run "np$p kda" --cuda-pipeline 1 --model kimi-linear --batch 64,128,512 --cuda-pipeline-producers $p
    run "np$p gdn-bf16" --cuda-pipeline 1 --model qwen3-next --state bf16 --batch 32,128 --cuda-pipeline-producers $p
done 2>&1 | tee "$O/sweep.txt"
run "per-head gdn" --cuda-pipeline 0 --model qwen3-next --batch 12,16 2>&1 | tee -a "$O/sweep.txt"
