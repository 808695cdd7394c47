#!/usr/bin/env bash
# Device call 15: the Python binding with CUDA tensors (torch 2.11, transformers of the image): hf (greedy, packed, assisted), torch ops, fla.
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p "$O"
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/vec && gunzip -c .gpu/vec.gz > /tmp/vec/fla-reference.txt
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) torch $(python3 -c 'import torch;print(torch.__version__)') transformers $(python3 -c 'import transformers;print(transformers.__version__)')" | tee "$O/info.txt"
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON -DRSSM_VECTORS=/tmp/vec/fla-reference.txt && cmake --build build-gpu -j16 --target replayssm ) > "$O/build.log" 2>&1
el "built"; tail -1 "$O/build.log"
export PYTHONPATH=$PWD/python REPLAYSSM_LIBRARY=$PWD/build-gpu/libreplayssm.so
timeout 300 python3 -m pytest -q -p no:cacheprovider python/tests/test_hf.py -k "cuda" > "$O/test_hf_cuda.txt" 2>&1; el "hf rc=$?"; tail -3 "$O/test_hf_cuda.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_torch.py python/tests/test_fla.py -k "cuda or torch or compile or graph or ring_verify" > "$O/pytest.txt" 2>&1; el "torch rc=$?"; tail -3 "$O/pytest.txt"
