#!/usr/bin/env bash
# Call F1: the first part of FlashInfer's packages onto the GPU machine (/tmp/fi), for call F2,
# which must follow while the machine is still warm (it is released 30 s after a call). Carry
# [".fi1"]. What travels (rebuilt 2026-12-05 as flashinfer-2026-12-03's calls A-B had it):
# flashinfer-python 0.7.4, nvidia-cutlass-dsl 4.8.1 (+ libs-base, libs-core, libs-cu13),
# cuda-python 13.4.4, cuda-tile 1.7.0, nvidia-cudnn-frontend 1.32.0, nccl4py 0.6.0, tabulate,
# einops, unpacked from their PyPI wheels into one tree without FlashInfer's C++ sources for its
# run-time-compiled CUDA kernels (data/csrc, cccl, cutlass, spdlog, *.cu, *.cuh: its GDN decode is
# CuTe-DSL, compiled at run time from Python), xz-compressed (87 MiB) in two parts: the first 53,000,000 bytes in .fi1, the rest in .fi2 (a call
# carries 64 MiB with the tree).
set -uo pipefail
mkdir -p /tmp/fi && cp .fi1/fipart.00 /tmp/fi/ && ls -la /tmp/fi
echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
