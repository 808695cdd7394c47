#!/usr/bin/env bash
# Call B: why tiled K-first f32 replay lost at KDA B = 512 in call A (344.8 -> 369.8 us). Two
# scratch builds of the working tree read the tensor map's L2 promotion from RSSM_KF_L2 (0 none,
# 2 128 B, 3 256 B: the CUtensorMapL2promotion values): T32, four copies of 32 rows x 32 blocks
# (call A's T); T8, sixteen copies of 32 rows x 8 blocks, issued block range by block range so
# that each 16 KiB of the head is read by four copies in a row. M: main's 9576227. Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/kt2.txz -C /tmp/v
{ LD_LIBRARY_PATH=/tmp/v/T8 /tmp/v/T/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 --state-layout kv"
bn() { # lib l2 tag args...
  local X=$1 p=$2 tag=$3; shift 3
  RSSM_KF_L2=$p LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/T/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X-$p '/staggered/{printf "%-8s %-6s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for XP in M:3 T32:3 T32:0 T32:2 T8:3 T8:0; do X=${XP%:*}; P=${XP#*:}
  bn $X $P kda-kf --model kimi-linear --batch 64,512
  bn $X $P gdn-kf --model qwen3-next --batch 16,512
done; el "round $r"; done 2>&1 | tee "$O/bench.txt"
el done
