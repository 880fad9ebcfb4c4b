#!/usr/bin/env bash
# Device-initiated benchmark (not a test): builds bench_kernels.cl and
# device_bench.c (release library), runs it on 2 PEs with the load/store
# path and with every operation through the ring. Needs what
# test-device.sh needs (TEST_OPENCL_VENV, clang-14, llvm-spirv-14).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${TEST_OPENCL_VENV:?set TEST_OPENCL_VENV to a venv with intel-opencl-rt}"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/device-bench"
mkdir -p "$out"
cd "$root"
cargo build -q --release -p ishmem-capi -p ishmrun
ln -sf libishmem.so "$target/release/libishmem.so.0"
device-lib/build.sh "$out" >/dev/null
FLAGS=(-cl-std=CL3.0 -Xclang -finclude-default-header
    -Xclang "-cl-ext=-all,+__opencl_c_atomic_order_seq_cst,+__opencl_c_atomic_order_acq_rel,+__opencl_c_atomic_scope_all_devices,+__opencl_c_atomic_scope_device,+cl_khr_int64_base_atomics,+cl_khr_int64_extended_atomics,+__opencl_c_program_scope_global_variables,+__opencl_c_int64,+cl_khr_fp64,+__opencl_c_fp64,+cl_khr_subgroups,+__opencl_c_subgroups,+__opencl_c_generic_address_space"
    -target spir64 -Os -Werror -I device-lib/include)
clang-14 "${FLAGS[@]}" -emit-llvm -c tests/device/bench_kernels.cl -o "$out/bench.bc"
llvm-spirv-14 --spirv-max-version=1.3 "$out/bench.bc" -o "$out/bench.spv"
cc -std=c11 -O2 -Wall tests/device/device_bench.c -I bindings/c/include -L "$target/release" -lishmem -lOpenCL \
    -Wl,-rpath,"$target/release" -o "$out/device_bench"
export OCL_ICD_FILENAMES="$venv/lib/libintelocl.so" LD_LIBRARY_PATH="$venv/lib" ISHMEM_DEVICE_LIB="$out/ishmem_device.spv"
for ring in 0 1; do
    ISHMEM_DEVICE_RING_ALL=$ring "$target/release/ishmrun" -n 2 -t 600 "$out/device_bench" "$out/bench.spv"
done
