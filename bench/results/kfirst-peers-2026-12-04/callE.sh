#!/usr/bin/env bash
# Call E: the whole test suite on the H200 at the tree's commit: a CUDA build there (cmake, -j16, with
# the golden vectors of ../shared/vectors carried as .gpu/vec.gz), ctest, then the Python tests
# against that library (torch and transformers of the image). Carry [".gpu"].
set -uo pipefail
O=/tmp/res; mkdir -p "$O" # packed into $OUT/res.tgz at each milestone (the tool brings back 8 files)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; tar czf "${OUT:-/tmp}/res.tgz" -C "$O" .; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$O/info.txt"
gunzip -c .gpu/vec.gz > /tmp/vec.txt
( cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DRSSM_CUDA=ON \
    -DRSSM_VECTORS=/tmp/vec.txt > /dev/null && cmake --build build-gpu -j16 ) > "$O/build.log" 2>&1
el built; tail -n1 "$O/build.log"
(cd build-gpu && timeout 300 ctest -j4 --output-on-failure) > "$O/ctest.txt" 2>&1
el ctest; grep -E "tests passed|tests failed|Failed|\*\*\*" "$O/ctest.txt" | head -20
export REPLAYSSM_LIBRARY=$PWD/build-gpu/libreplayssm.so PYTHONPATH=$PWD/python REPLAYSSM_VECTORS=/tmp/vec.txt
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$O/info.txt"
left=$(( 570 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest -q -rs python/tests > "$O/pytest.txt" 2>&1
el pytest; tail -n 15 "$O/pytest.txt"
