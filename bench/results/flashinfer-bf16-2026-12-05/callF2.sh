#!/usr/bin/env bash
# Call F2: FlashInfer's second part joined to the first (call F1, same warm machine), a smoke test,
# then the peer table with a bf16 state in one process: replayssm (main's build from PKG, default
# .gpz8/pz8.txz, folder M) against FlashInfer 0.7.4's bf16-state GDN decode, GDN and KDA, B = 1-512.
# The bf16 target (issue 28): replayssm <= FlashInfer at every B; on the H200 at 423ecd7 FlashInfer
# took 3.16 / 7.87 / 12.18 / 21.91 us at B = 1 / 8 / 16 / 32 against ours 2.97 / 8.00 / 13.72 / 22.99
# from later calls: this run gives the same-run ratio on the rules main has now. Carry [".fi2",
# ".gpz8"] (.fi2 also holds apache-tvm-ffi's wheel, which FlashInfer imports). About 5 minutes.
set -uo pipefail
O=/tmp/resF2; rm -rf "$O"; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > "$O/info.txt"
PKG=${PKG:-.gpz8/pz8.txz}
rm -rf /tmp/vf && mkdir -p /tmp/vf && tar xJf "$PKG" -C /tmp/vf
V=/tmp/vf/M
if [ -f /tmp/fi/fipart.00 ]; then
  cat /tmp/fi/fipart.00 .fi2/fipart.01 > /tmp/fi/slim.tar.xz
  echo "$(cat .fi2/sha)  /tmp/fi/slim.tar.xz" | sha256sum -c && rm -rf /tmp/fisite && mkdir -p /tmp/fisite &&
    tar xJf /tmp/fi/slim.tar.xz -C /tmp/fisite
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/fisite .fi2/apache_tvm_ffi-*.whl
else
  echo "FlashInfer's first part is not here (the machine was not kept): FlashInfer skips"
fi
el unpacked
export PYTHONPATH=$PWD/python:/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages
export REPLAYSSM_LIBRARY=$V/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" > "$O/fi-smoke.txt" 2>&1
el smoke
timeout $(( 560 - ($(date +%s) - T0) )) python3 bench/peers.py --out "$O/peers-bf16" --state bf16 \
  --models qwen3-next,kimi-linear --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit 2b45496 2>&1 |
  grep -v "Warning\|warnings.warn" > "$O/peers-bf16.log"
el peers-bf16
