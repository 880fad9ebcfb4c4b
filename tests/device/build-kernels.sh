#!/usr/bin/env bash
# Builds the device library (ishmem_device.spv) and the device tests'
# kernels (kernels.spv, sweep.spv) into OUTDIR, each checked by spirv-val:
# the SPIR-V the CPU device's tests run (tests/device/test-device.sh) and
# the Level Zero device's test loads (tests/ze/run.sh). Needs clang-14,
# llvm-spirv-14 and spirv-tools.
#   tests/device/build-kernels.sh OUTDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: build-kernels.sh OUTDIR}"
mkdir -p "$out"
"$root/device-lib/build.sh" "$out" >/dev/null
FLAGS=(-cl-std=CL3.0 -Xclang -finclude-default-header
    -Xclang "-cl-ext=-all,+__opencl_c_atomic_order_seq_cst,+__opencl_c_atomic_order_acq_rel,+__opencl_c_atomic_scope_all_devices,+__opencl_c_atomic_scope_device,+cl_khr_int64_base_atomics,+cl_khr_int64_extended_atomics,+__opencl_c_program_scope_global_variables,+__opencl_c_int64,+cl_khr_fp64,+__opencl_c_fp64,+cl_khr_subgroups,+__opencl_c_subgroups,+__opencl_c_generic_address_space"
    -target spir64 -Os -Werror -I "$root/device-lib/include")
clang-14 "${FLAGS[@]}" -emit-llvm -c "$root/tests/device/kernels.cl" -o "$out/kernels.bc"
llvm-spirv-14 --spirv-max-version=1.3 "$out/kernels.bc" -o "$out/kernels.spv"
spirv-val "$out/kernels.spv"
# -O0: llvm-spirv 14 misorders blocks of these loop nests at -Os too.
clang-14 "${FLAGS[@]}" -O0 -emit-llvm -c "$root/tests/device/sweep.cl" -o "$out/sweep.bc"
llvm-spirv-14 --spirv-max-version=1.3 "$out/sweep.bc" -o "$out/sweep.spv"
spirv-val "$out/sweep.spv"
# The SYCL header's declarations, compiled as C++ for OpenCL (no SYCL
# compiler needed): tests/sycl/kernels.clcpp.
clang-14 -cl-std=clc++2021 "${FLAGS[@]:1}" -I "$root/bindings/c/include" -emit-llvm -c "$root/tests/sycl/kernels.clcpp" \
    -o "$out/sycl_decls.bc"
llvm-spirv-14 --spirv-max-version=1.3 "$out/sycl_decls.bc" -o "$out/sycl_decls.spv"
spirv-val "$out/sycl_decls.spv"
