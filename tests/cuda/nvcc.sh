#!/usr/bin/env bash
# Prints the path of a CUDA 13.0 nvcc: NVCC, else nvcc on PATH, else one
# installed from PyPI into VENV (default target/test-tools/cudavenv). The
# PyPI packages are pinned together to 13.0 (an unpinned nvidia-nvvm brings
# a front end whose PTX the 13.0 ptxas rejects) and need no GPU.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -n "${NVCC:-}" ]; then echo "$NVCC"; exit 0; fi
if command -v nvcc >/dev/null; then command -v nvcc; exit 0; fi
venv="${1:-${CARGO_TARGET_DIR:-$root/target}/test-tools/cudavenv}"
n="$venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc"
if ! ls $n >/dev/null 2>&1; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "nvidia-cuda-nvcc==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-runtime==13.0.*" \
        "nvidia-cuda-crt==13.0.*" "nvidia-cuda-cccl==13.0.*" >&2
fi
# nvlink's link-time optimization (-dlto) loads libnvvm from nvvm/lib64 beside
# bin, where the PyPI packages do not put it (they ship lib/libnvvm.so.4).
cu="$(dirname "$(ls $n | head -n1)")/.."
if [ ! -e "$cu/nvvm/lib64/libnvvm.so" ] && [ -e "$cu/lib/libnvvm.so.4" ]; then
    mkdir -p "$cu/nvvm/lib64" && ln -sf ../../lib/libnvvm.so.4 "$cu/nvvm/lib64/libnvvm.so"
fi
ls $n | head -n1
