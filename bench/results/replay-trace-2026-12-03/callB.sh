#!/usr/bin/env bash
# Call B: the ring's bytes land before the rows of S0 are requested (RSSM_K128_RING_FIRST with the
# whole-ring read, --cuda-ring-read 1: copy the ring, wait for it, then load the rows), against the
# rule and the whole-ring read alone; plain experiment build (.gpu/exp.txz) and the trace build
# (.gpu/trace.txz) at B = 8. Carry [".gpu"].
set -uo pipefail
O=$OUT/raw && mkdir -p $O /tmp/E /tmp/T
tar xJf .gpu/exp.txz -C /tmp/E && tar xJf .gpu/trace.txz -C /tmp/T
ARGS="--device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for round in 1 2; do
    for B in 4 8 12 14; do
        for v in rule spec ringwait; do
            case $v in
            rule) E="" F="" ;;
            spec) E="" F="--cuda-ring-read 1" ;;
            ringwait) E="RSSM_K128_RING_FIRST=1" F="--cuda-ring-read 1" ;;
            esac
            env $E LD_LIBRARY_PATH=/tmp/E /tmp/E/replayssm bench $ARGS --batch $B --phase both $F > $O/r$round-b$B-$v.txt 2>&1
            echo "r$round B=$B $v: $(grep -E '^ +'$B' +16 ' $O/r$round-b$B-$v.txt | tr -s ' ' | cut -d'|' -f1,2 | tr '\n' ';')"
        done
    done
done
for m in qwen3-next kimi-linear; do
    for v in rule ringwait; do
        E=""; [ $v = ringwait ] && E="RSSM_K128_RING_FIRST=1"
        env $E LD_LIBRARY_PATH=/tmp/E /tmp/E/replayssm bench $ARGS --model $m --verify 4 --batch 8,128 --phase staggered > $O/verify-$m-$v.txt 2>&1
        echo "verify T=4 $m $v: $(grep -E '^ +(8|128) ' $O/verify-$m-$v.txt | tr -s ' ' | cut -d'|' -f1,2 | tr '\n' ';')"
    done
done
for v in spec ringwait; do
    E=""; [ $v = ringwait ] && E="RSSM_K128_RING_FIRST=1"
    env $E LD_LIBRARY_PATH=/tmp/T RSSM_PIPE_TRACE_FILE=$O/t-b8-$v /tmp/T/replayssm bench $ARGS --batch 8 --cuda-ring-read 1 > $O/trace-b8-$v.txt 2>&1
done
python3 bench/k128_trace.py $O/t-b8-*.k128.csv > $OUT/summary.txt 2>&1
grep -E "csv|spans" $OUT/summary.txt
rm -f $O/*.k128.csv && tar czf $OUT/raw.tgz -C $OUT raw && rm -rf $O
