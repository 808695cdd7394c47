#!/usr/bin/env bash
# Call 8: the peer benchmark for GDN at B = 8-32 with the staged fold in one round (v8), SGLang included:
# its import chain needs packages the image lacks; each wheel is installed only when its module is missing,
# and IPython (imported by sglang.utils for two names) gets a two-name stand-in when absent.
# Carry [".gpu", ".whl"].
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
tar xJf .gpu/libs.txz -C /tmp
W=""
for f in .whl/*.whl; do
  b=$(basename $f); n=${b%%-*}
  case $n in fla_core) m=fla;; sglang) m=sglang_never_present;; pyzmq) m=zmq;; attrs) m=attr;; *) m=$n;; esac
  python3 -c "import $m" 2>/dev/null || W="$W $f"
done
echo "installing:$W" | tee "$O/pip.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $W >> "$O/pip.txt" 2>&1
if ! python3 -c "import IPython" 2>/dev/null; then
  mkdir -p /tmp/site/IPython
  printf 'class HTML:\n    def __init__(self, data=None):\n        self.data = data\n\n\ndef display(*objs, **kw):\n    pass\n' > /tmp/site/IPython/display.py
  : > /tmp/site/IPython/__init__.py; echo "IPython: stand-in" >> "$O/pip.txt"
fi
export PYTHONPATH=$PWD/python:/tmp/site REPLAYSSM_LIBRARY=/tmp/v8/libreplayssm.so
if ! python3 -c "import sglang.kernels.ops.attention.linear.fused_recurrent_linear_replayssm" > /tmp/imp.txt 2>&1; then
  tail -3 /tmp/imp.txt | tee -a "$O/pip.txt"; exit 3
fi
el installed
timeout 420 python3 bench/peers.py --out "$O/peers" --models qwen3-next --batch 8,12,16,20,24,28,32 --min-time 0.1 --commit "ac496ac+fold-round" 2>&1 | grep -v "Warning\|warnings.warn" > "$O/peers.log"
el peers; grep -E "^\|" "$O/peers/peers.txt" 2>/dev/null || tail -n 30 "$O/peers.log"
