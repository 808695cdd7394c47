#!/usr/bin/env bash
# Call B: FlashInfer's second half, unpacked next to the first (call A); the small-batch memory
# chains (bench_latency_floor, with the read-only chain of replay); the peer table with a bf16
# state (replayssm and FlashInfer). Carry [".fi2", ".gpu"] (.fi2 also holds apache-tvm-ffi's wheel,
# which FlashInfer imports).
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X
/tmp/X/bench_latency_floor 1 2 4 8 16 32 64 | tee "$O/latency-floor.txt"
el floor
if [ -f /tmp/fi/fipart.00 ]; then
  cat /tmp/fi/fipart.00 .fi2/fipart.01 > /tmp/fi/slim.tar.xz
  echo "$(cat .fi2/sha)  /tmp/fi/slim.tar.xz" | sha256sum -c && mkdir -p /tmp/fisite && tar xJf /tmp/fi/slim.tar.xz -C /tmp/fisite
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/fisite .fi2/apache_tvm_ffi-*.whl
else
  echo "FlashInfer's first half is not here (the machine was not kept): FlashInfer skips"
fi
el unpacked
export PYTHONPATH=$PWD/python:/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages
export REPLAYSSM_LIBRARY=/tmp/X/libreplayssm.so MPLBACKEND=Agg PYTHONUNBUFFERED=1
python3 - <<'PY' 2>&1 | grep -v "Warning\|warnings.warn" | tail -n 25 | tee "$O/fi-smoke.txt"
import time, torch
import flashinfer
print("flashinfer", flashinfer.__version__)
from flashinfer.gdn_decode import gated_delta_rule_decode_pretranspose as f
B, H, HV, K = 8, 16, 32, 128
g = torch.Generator(device="cuda").manual_seed(0)
bf = lambda *s: torch.randn(*s, generator=g, device="cuda").bfloat16()
for dt in (torch.float32, torch.bfloat16):
    pool = torch.zeros(2 * B, HV, K, K, device="cuda", dtype=dt)
    slot = torch.arange(B, device="cuda", dtype=torch.int32)
    t0 = time.time()
    o, _ = f(bf(B, 1, H, K), bf(B, 1, H, K), bf(B, 1, HV, K), None, torch.zeros(HV, device="cuda"), bf(B, 1, HV),
             torch.zeros(HV, device="cuda"), bf(B, 1, HV), initial_state=pool, initial_state_indices=slot)
    torch.cuda.synchronize()
    print(dt, "first call", round(time.time() - t0, 1), "s", tuple(o.shape), o.dtype, float(pool.float().abs().max()))
PY
el smoke
timeout 380 python3 bench/peers.py --out "$O/peers-bf16" --state bf16 --models qwen3-next,kimi-linear \
  --batch 1,2,4,8,16,32,64,128,256,512 --min-time 0.08 --commit 423ecd7 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers-bf16.log"
el peers-bf16; grep -E "^#|^\||^##" "$O/peers-bf16/peers.txt" 2>/dev/null || tail -n 40 "$O/peers-bf16.log"
