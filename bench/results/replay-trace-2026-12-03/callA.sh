#!/usr/bin/env bash
# Call A: where GDN replay's step goes at B = 8 and 14 (the per-head kernel), from a trace build
# (cmake -DRSSM_CUDA=ON -DRSSM_PIPE_TRACE=ON: library and CLI carried as .gpu/trace.txz), and two
# launch experiments of that build: no cluster (RSSM_K128_CS1; safe in this benchmark, where decode
# never starts with a fold) and the whole ring copied before the rows of S0 are loaded
# (RSSM_K128_RING_FIRST, with --cuda-ring-read 1). The plain build (.gpu/libs.txz) times the same
# steps without the trace's stores. Carry [".gpu"].
set -uo pipefail
O=$OUT/raw && mkdir -p $O
mkdir -p /tmp/T /tmp/P && tar xJf .gpu/trace.txz -C /tmp/T && tar xJf .gpu/libs.txz -C /tmp/P
ARGS="--device cuda --model qwen3-next --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for B in 8 14; do
    LD_LIBRARY_PATH=/tmp/P/X /tmp/P/X/replayssm bench $ARGS --batch $B --phase both > $O/plain-b$B.txt 2>&1
    echo "plain B=$B: $(grep -E '^ +'$B' +16 ' $O/plain-b$B.txt | tr -s ' ' | tr '\n' ';')"
    for v in base cs1 spec specfirst specfirst-cs1; do
        case $v in
        base) E="" F="" ;;
        cs1) E="RSSM_K128_CS1=1" F="" ;;
        spec) E="" F="--cuda-ring-read 1" ;;
        specfirst) E="RSSM_K128_RING_FIRST=1" F="--cuda-ring-read 1" ;;
        specfirst-cs1) E="RSSM_K128_RING_FIRST=1 RSSM_K128_CS1=1" F="--cuda-ring-read 1" ;;
        esac
        env $E LD_LIBRARY_PATH=/tmp/T RSSM_PIPE_TRACE_FILE=$O/t-b$B-$v /tmp/T/replayssm bench $ARGS --batch $B $F \
            > $O/trace-b$B-$v.txt 2>&1
        echo "trace B=$B $v: $(grep -E '^ +'$B' +16 ' $O/trace-b$B-$v.txt | tr -s ' ')"
    done
done
# verify windows (whole-ring reads by rule for GDN T = 3-4): ring first or not
for v in base specfirst; do
    E=""; [ $v = specfirst ] && E="RSSM_K128_RING_FIRST=1"
    env $E LD_LIBRARY_PATH=/tmp/T /tmp/T/replayssm bench $ARGS --verify 4 --batch 128 --phase staggered > $O/verify-$v.txt 2>&1
    echo "trace verify T=4 B=128 $v: $(grep -E '^ +128 ' $O/verify-$v.txt | tr -s ' ')"
done
python3 bench/k128_trace.py $O/t-b8-*.k128.csv $O/t-b14-*.k128.csv > $OUT/summary.txt 2>&1
grep -E "csv|spans" $OUT/summary.txt
tar czf $OUT/raw.tgz -C $OUT raw && rm -rf $O
