#!/usr/bin/env bash
# Call 2: how many tokens a warp of the ring weights takes (NTOK products in one reduce-scatter),
# by gate: A = GDN 4 / KDA 1, B = GDN 2 / KDA 2 (call 1's N: 4 / 4), against ff465d6 (H). Hashes of
# every output and state tensor after verify windows T = 1..8 (dump_window), verify timings in
# alternating rounds, then the peer benchmark's verify rows with A (FLA and SGLang from their
# wheels). Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
mkdir -p /tmp/v && tar xJf .gpu/all.txz -C /tmp/v
for X in A B; do cp /tmp/v/H/replayssm /tmp/v/$X/; done # the CLI takes the library from the path
( bash bench/install_peer_wheels.sh .whl /tmp/site > "$O/pip.txt" 2>&1 ) &
for X in H A B; do LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/A/dump_window - > "$O/hash-$X.txt"; done
{ for X in A B; do cmp -s "$O/hash-H.txt" "$O/hash-$X.txt" && echo "$X: every hash equal to H's" || echo "$X: hashes DIFFER"; done
  grep -c ": [0-9a-f]*$" "$O/hash-H.txt"; } | tee "$O/checks.txt"
el hashes
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
bn() { # lib tag args...
  local X=$1 tag=$2; shift 2
  LD_LIBRARY_PATH=/tmp/v/$X /tmp/v/$X/replayssm bench $C "$@" | awk -v t="$tag" -v x=$X '/staggered/{printf "%-12s %s %s\n", t, x, $0; fflush()}'
}
for r in 1 2; do for X in H A B; do
  bn $X kda-T4 --model kimi-linear --verify 4 --batch 8,128,512
  bn $X kda-T4-bf16 --model kimi-linear --state bf16 --verify 4 --batch 128
  bn $X gdn-T4 --model qwen3-next --verify 4 --batch 8,128
  bn $X gdn-T3 --model qwen3-next --verify 3 --batch 128
  el "round $r $X"
done; done 2>&1 | tee "$O/bench.txt"
wait
export LD_LIBRARY_PATH=/tmp/v/A PYTHONPATH=$PWD/python:/tmp/site
export REPLAYSSM_LIBRARY=/tmp/v/A/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
for m in qwen3-next kimi-linear; do
  left=$(( 400 - ($(date +%s) - T0) )); [ $left -gt 30 ] || break
  timeout $left python3 bench/peers.py --out "$O/verify-$m" --models $m --verify 4 --batch 8,128,512 \
    --min-time 0.08 --commit "lib A of call 2" 2>&1 | grep -v "Warning\|warnings.warn" > "$O/verify-$m.log"
  el "verify $m"; grep -E "^\|" "$O/verify-$m/peers.txt" 2>/dev/null || tail -n 5 "$O/verify-$m.log"
done
