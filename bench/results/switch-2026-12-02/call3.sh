#!/usr/bin/env bash
# Call 3: the kept library (early state copy; pipeline from 4.5 heads per SM for GDN, 9 for KDA; folding
# rows first up to 40 heads per CTA for GDN with an f32 state, 32 with bf16): checks, the CLI bench at the
# default switches, then the peer benchmark for GDN and KDA (fla-core 0.6.0, sglang 0.5.23 from wheels).
# Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs8.txz -C /tmp
W=""
for f in .whl/*.whl; do
  b=$(basename $f); n=${b%%-*}
  case $n in fla_core) m=fla;; sglang) m=sglang_never_present;; pyzmq) m=zmq;; attrs) m=attr;; *) m=$n;; esac
  python3 -c "import $m" 2>/dev/null || W="$W $f"
done
( echo "installing:$W"; python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $W 2>&1 ) > "$O/pip.txt" &
export LD_LIBRARY_PATH=/tmp/final
N=/tmp/final/replayssm
{ /tmp/final/test_cuda_pipeline 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --quick --cuda-pipeline 1 2>&1 | grep -E "FAIL|passed"
  $N check --device cuda --cuda-pipeline 1 --filter "K=128,V=128/" 2>&1 | grep -E "FAIL|passed"
  $N check --suite runtime --device cuda 2>&1 | grep -E "FAIL|passed"
  /tmp/final/test_graph_vs_eager 2>&1 | tail -1; } 2>&1 | tee "$O/checks.txt"
el checks
C="--device cuda --ring-len 16 --ring bf16 --io bf16 --slot-order random --min-time 0.05 --repeat 3"
{ $N bench $C --model qwen3-next --batch 16,18,19,24,28,32,64,128,144,160,176,256,512 2>&1 | awk '/staggered/{printf "final gdn-f32  B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model qwen3-next --state bf16 --batch 18,19,32,128,136 2>&1 | awk '/staggered/{printf "final gdn-bf16 B=%-4s pk %8s rp %8s\n", $1, $5, $6}'
  $N bench $C --model kimi-linear --batch 32,37,38,64,128,512 2>&1 | awk '/staggered/{printf "final kda-f32  B=%-4s pk %8s rp %8s\n", $1, $5, $6}'; } | tee "$O/bench.txt"
el bench
wait
if ! python3 -c "import IPython" 2>/dev/null; then
  mkdir -p /tmp/site/IPython
  printf 'class HTML:\n    def __init__(self, data=None):\n        self.data = data\n\n\ndef display(*objs, **kw):\n    pass\n' > /tmp/site/IPython/display.py
  printf 'version_info = (9, 0, 0)\n\n\ndef get_ipython():\n    return None\n' > /tmp/site/IPython/__init__.py; echo "IPython: stand-in" >> "$O/pip.txt"
fi
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/final/libreplayssm.so MPLBACKEND=Agg
timeout 300 python3 bench/peers.py --out "$O/peers" --models qwen3-next,kimi-linear --batch 1,8,16,19,24,32,40,64,128,160,512 --min-time 0.1 --commit "$(git rev-parse --short HEAD)" 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^\||^##" "$O/peers/peers.txt" 2>/dev/null || tail -n 30 "$O/peers.log"
