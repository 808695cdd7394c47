#!/usr/bin/env bash
# Call 1 (library of 92e5801): where the per-head kernel and the pipeline cross now that a GDN unit of
# the folding-rows-first order is one value head (pipeline forced on / off at B = 16-36), where the
# folding-rows-first order stops paying (balance forced on / off at B = 104-160), then the peer benchmark
# for GDN (fla-core 0.6.0, sglang 0.5.23 from wheels, as fold-2026-12-02/call8.sh). Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs6.txz -C /tmp
W=""
for f in .whl/*.whl; do
  b=$(basename $f); n=${b%%-*}
  case $n in fla_core) m=fla;; sglang) m=sglang_never_present;; pyzmq) m=zmq;; attrs) m=attr;; *) m=$n;; esac
  python3 -c "import $m" 2>/dev/null || W="$W $f"
done
( echo "installing:$W"; python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $W 2>&1 ) > "$O/pip.txt" &
export LD_LIBRARY_PATH=/tmp/head
N=/tmp/head/replayssm
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
for p in 0 1; do
  $N bench $C --model qwen3-next --batch 16,20,24,28,32,36 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --batch 16,20,24,28,32,36 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model kimi-linear --batch 16,20,24,28,32,36 --cuda-pipeline $p 2>&1 | awk -v l="pipe$p" '/staggered/{printf "%-6s kda-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/switch.txt"
el switch
for b in 0 1; do
  $N bench $C --model qwen3-next --batch 104,112,120,128,136,144,160 --cuda-pipeline-balance $b 2>&1 | awk -v l="bal$b" '/staggered/{printf "%-6s gdn-f32  B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --batch 112,128,144,160 --cuda-pipeline-balance $b 2>&1 | awk -v l="bal$b" '/staggered/{printf "%-6s gdn-bf16 B=%-4s pk %8s rp %8s\n", l, $1, $5, $6}'
done | tee "$O/balance.txt"
el balance
wait
if ! python3 -c "import IPython" 2>/dev/null; then
  mkdir -p /tmp/site/IPython
  printf 'class HTML:\n    def __init__(self, data=None):\n        self.data = data\n\n\ndef display(*objs, **kw):\n    pass\n' > /tmp/site/IPython/display.py
  printf 'def get_ipython():\n    return None\n' > /tmp/site/IPython/__init__.py; echo "IPython: stand-in" >> "$O/pip.txt"
fi
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/head/libreplayssm.so
timeout 320 python3 bench/peers.py --out "$O/peers" --models qwen3-next --batch 1,8,16,24,32,48,64,96,128 --min-time 0.1 --commit "$(git rev-parse --short HEAD)" 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^\|" "$O/peers/peers.txt" 2>/dev/null || tail -n 30 "$O/peers.log"
