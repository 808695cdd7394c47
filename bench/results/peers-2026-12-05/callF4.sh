#!/usr/bin/env bash
# Call F4, the last of three on one warm machine: a build of main on the device (test_launch_rules,
# test_cuda_stream bit for bit), the bf16 streaming rule's row against the per-head kernel forced
# (B = 6-17, both models), then the bf16 peer table beside FlashInfer 0.7.4 in one process. Owed on
# the H200 since b3fe554's rule was timed on an H100 only (../stream-wave-2026-12-05/ call F3).
# A call carries 64 MiB with the tree (13 MB now), so FlashInfer's pruned tree (90.8 MB, the recipe
# and its parts' history: ../flashinfer-bf16-2026-12-05/) travels ahead in two parts of 45 MB:
#   carry [".fa"]: mkdir -p /tmp/fi && cp .fa/fipart.00 /tmp/fi/
#   carry [".fb"]: cp .fb/fipart.01 .fb/sha /tmp/fi/
# then this script, carry [".gpzN", ".whl"] (apache-tvm-ffi from .whl); PKG=.gpzN/pzN.txz (folder
# M), COMMIT=the build's commit. Writes /tmp/resF4. About 4 minutes.
set -uo pipefail
O=/tmp/resF4; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
rm -rf /tmp/vf && mkdir -p /tmp/vf && tar xJf "${PKG:?PKG=.gpzN/pzN.txz}" -C /tmp/vf
V=/tmp/vf/M
if [ -f /tmp/fi/fipart.00 ] && [ -f /tmp/fi/fipart.01 ]; then
  cat /tmp/fi/fipart.00 /tmp/fi/fipart.01 > /tmp/fi/slim.tar.xz
  echo "$(cat /tmp/fi/sha)  /tmp/fi/slim.tar.xz" | sha256sum -c && rm -rf /tmp/fisite && mkdir -p /tmp/fisite &&
    tar xJf /tmp/fi/slim.tar.xz -C /tmp/fisite
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/fisite .whl/apache_tvm_ffi-*.whl
else
  echo "FlashInfer's parts are not here (the machine was not kept): FlashInfer skips"
fi
el unpacked
{ LD_LIBRARY_PATH=$V timeout 60 $V/test_launch_rules 2>&1 | tail -1
  LD_LIBRARY_PATH=$V timeout 120 $V/test_cuda_stream 2>&1 | grep -v "^PASS" | tail -5; } > "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --min-time 0.05 --repeat 3 --slot-order random --state bf16"
for m in qwen3-next kimi-linear; do
  for v in rule:-1 s0:0; do
    LD_LIBRARY_PATH=$V "$V/replayssm" bench $C --model $m --batch 6,7,8,9,12,13,14,16,17 --cuda-stream ${v#*:} |
      awk -v t="M/$m/${v%%:*}" '/staggered/{printf "%-20s %s\n", t, $0; fflush()}' >> "$O/bench.txt"
  done
done
el bench
export PYTHONPATH=$PWD/python:/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages
export REPLAYSSM_LIBRARY=$V/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
timeout $(( 560 - ($(date +%s) - T0) )) python3 bench/peers.py --out "$O/peers-bf16" --state bf16 \
  --models qwen3-next,kimi-linear --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit "${COMMIT:?}" 2>&1 |
  grep -v "Warning\|warnings.warn" > "$O/peers-bf16.log"
el peers-bf16
