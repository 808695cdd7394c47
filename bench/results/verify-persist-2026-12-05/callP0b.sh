#!/usr/bin/env bash
# Call P0b (run after P0, on the same warm H100): the persistent grid forced with split 1, against it off, GDN
# B = 128; then test_cuda_pipeline with room to finish (P0's 90 s cut it short). Carry [".gpzA", ".gpzP", ".gpzQ"];
# bash bench/results/verify-persist-2026-12-05/callP0b.sh; tar czf $OUT/r.tgz -C /tmp resP0b
set -uo pipefail
. bench/call_lib.sh
call_begin /tmp/resP0b
V=$(call_unpack /tmp/vq .gpzQ/pzQ.txz)
VP=$(call_unpack /tmp/vp .gpzP/pzP.txz)
for s in "--cuda-persist 1 --cuda-split 1" "--cuda-persist 0 --cuda-split 1"; do
  timeout 60 bash -c ". bench/call_lib.sh; V=$V; bench_rows 'Q $s' $O/v.txt --device cuda --model qwen3-next \
    --verify 4 --batch 128 --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3 $s"
  echo "rc $?"
done
cat $O/v.txt
LD_LIBRARY_PATH=$V timeout 150 "$VP/test_cuda_pipeline" > $O/tp.txt 2>&1
echo "tp rc $?"
tail -5 $O/tp.txt
