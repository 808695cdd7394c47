#!/usr/bin/env bash
# Call A: the first half of FlashInfer's packages onto the GPU machine (/tmp/fi), for calls B-D
# while it stays warm. Carry [".fi1"]. What travels: flashinfer-python 0.7.4, nvidia-cutlass-dsl
# 4.8.1 (+ libs-base, libs-core, libs-cu13), cuda-python, cuda-tile, nvidia-cudnn-frontend,
# nccl4py, tabulate, einops, unpacked from their PyPI wheels into one tree with FlashInfer's C++
# sources for its run-time-compiled CUDA kernels left out (data/csrc, cccl, cutlass, spdlog, *.cu:
# its GDN and KDA decode are CuTe-DSL kernels, which need none of them), xz-compressed, in two
# parts (the wheels are 204 MiB, a call carries 64).
set -uo pipefail
mkdir -p /tmp/fi && cp .fi1/fipart.00 /tmp/fi/ && ls -la /tmp/fi
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
