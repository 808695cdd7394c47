#!/usr/bin/env bash
# Call D: old (770c382, .gpu/libs.txz) against new (the rows' loads after the gate inputs,
# .gpu/new.txz), alternating in one call; and the experiment build (.gpu/exp.txz: new plus
# RSSM_K128_RING_FIRST, the whole ring copied and landed before the rows are requested) at the
# batches of one to two waves. Prints "tag B packed replay" (us, staggered; replay in phase after
# a slash where run). Carry [".gpu"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
for l in old new exp; do mkdir -p /tmp/$l; done
tar xJf .gpu/libs.txz -C /tmp/old && tar xJf .gpu/new.txz -C /tmp/new && tar xJf .gpu/exp.txz -C /tmp/exp
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
row() { # tag lib env bench-args...
    local tag=$1 lib=$2 e=$3; shift 3
    env $e LD_LIBRARY_PATH=/tmp/$lib/X /tmp/$lib/X/replayssm bench $C "$@" 2>&1 | tee -a "$O/raw.txt" |
        awk -F'|' -v t="$tag" '/^ *[0-9]/{split($1, a, " "); split($2, b, " "); ph = a[3] (a[4] == "" ? "" : "/" a[4]);
             printf "%-22s B=%-4s %-9s pk %8s rp %8s\n", t, a[1], ph, b[1], b[2]}'
}
for lib in old new; do
    row "$lib gdn" $lib "" --model qwen3-next --batch 1,2,4,8,12,14,16
    row "$lib kda" $lib "" --model kimi-linear --batch 1,8,32
    row "$lib gdn-verify4" $lib "" --model qwen3-next --verify 4 --batch 8,128 --phase staggered
    row "$lib kda-verify4" $lib "" --model kimi-linear --verify 4 --batch 8,128 --phase staggered
done
for v in rule spec ringfirst; do
    case $v in rule) E="" F="";; spec) E="" F="--cuda-ring-read 1";; ringfirst) E="RSSM_K128_RING_FIRST=1" F="--cuda-ring-read 1";; esac
    row "exp $v" exp "$E" --model qwen3-next --batch 4,8,12,14 --phase both $F
done
for v in rule ringfirst; do
    E=""; [ $v = ringfirst ] && E="RSSM_K128_RING_FIRST=1"
    row "exp $v" exp "$E" --model qwen3-next --verify 4 --batch 8,128 --phase staggered
done
