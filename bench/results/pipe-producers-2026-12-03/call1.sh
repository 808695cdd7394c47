#!/usr/bin/env bash
# Call 1: the replay pipeline with 3 and 4 producer warps (-DPNP=3/4, .gpu/pnp.txz X3/X4) against
# HEAD's 2 (.gpu/final.txz X), same CLI; checks of the 4-producer library first. Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/fin /tmp/pnp
tar xJf .gpu/final.txz -C /tmp/fin && tar xJf .gpu/pnp.txz -C /tmp/pnp
cp /tmp/fin/X/replayssm /tmp/fin/X/test_cuda_pipeline /tmp/fin/X/test_graph_vs_eager /tmp/pnp/
declare -A LIB=([p2]=/tmp/fin/X [p3]=/tmp/pnp/X3 [p4]=/tmp/pnp/X4)
{ echo "p4 test_cuda_pipeline: $(LD_LIBRARY_PATH=${LIB[p4]} /tmp/pnp/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed" | tail -3)"
  echo "p4 test_graph_vs_eager: $(LD_LIBRARY_PATH=${LIB[p4]} /tmp/pnp/test_graph_vs_eager 2>&1 | grep -E "FAIL|passed" | tail -3)"
  echo "p4 check --quick --cuda-pipeline 1: $(LD_LIBRARY_PATH=${LIB[p4]} /tmp/pnp/replayssm check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed" | tail -3)"
} 2>&1 | tee "$O/checks.txt"
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
run() { # variant, label, args...
    local v=$1 lab=$2; shift 2
    LD_LIBRARY_PATH=${LIB[$v]} /tmp/pnp/replayssm bench $C "$@" 2>&1 | awk -v l="$v $lab" '/^ *[0-9].*staggered/{print l, $0}'
}
for v in p2 p4 p3 p2 p4; do
    run $v gdn --model qwen3-next --batch 16,32,64,128,512
    run $v kda --model kimi-linear --batch 64,128,512
    run $v gdn-pipe --model qwen3-next --batch 4,8,12 --cuda-pipeline 1
    run $v kda-pipe --model kimi-linear --batch 8,16,32 --cuda-pipeline 1
done 2>&1 | tee "$O/ab.txt"
