#!/usr/bin/env bash
# Call D: at 2ff46ce (the commit named in the README; .gpu/d.txz): K-first packed decode on
# the pipeline (forced) against the rules' kernels (per-head; none streams a K-first state), f32 and
# bf16 state, GDN and KDA; then K-first replay at the new crossings as the rules choose. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/d.txz -C /tmp/v
export LD_LIBRARY_PATH=/tmp/v/N
N=/tmp/v/N/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # tag args...
  local tag=$1; shift
  $N bench $C "$@" | awk -v t="$tag" '/staggered/{printf "%-22s B=%-4s pk %8s rp %8s\n", t, $1, $5, $6; fflush()}'
}
for r in 1 2; do for p in -1 1; do
  bn "gdn-kf pipe$p" --cuda-pipeline $p --model qwen3-next --batch 8,16,32,64,128,256,512
  bn "kda-kf pipe$p" --cuda-pipeline $p --model kimi-linear --batch 8,16,32,64,128,256,512
  bn "gdn-kf-bf16 pipe$p" --cuda-pipeline $p --model qwen3-next --state bf16 --batch 16,32,64,128,512
  bn "kda-kf-bf16 pipe$p" --cuda-pipeline $p --model kimi-linear --state bf16 --batch 16,32,64,128,512
  el "round $r pipe$p"
done; done 2>&1 | tee "$O/packed.txt"
{ bn "gdn-kf-bf16 rule" --model qwen3-next --state bf16 --batch 24,32,33,40
  bn "kda-kf-bf16 rule" --model kimi-linear --state bf16 --batch 48,53,54,64; } 2>&1 | tee "$O/rule.txt"
el done
