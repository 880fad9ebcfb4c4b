#!/usr/bin/env bash
# Builds the device library: OpenCL C -> LLVM bitcode (clang-14) -> SPIR-V
# (llvm-spirv-14), checked with spirv-val.
#   device-lib/build.sh OUTDIR   -> OUTDIR/ishmem_device.spv, OUTDIR/ishmem_device.bc
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: build.sh OUTDIR}"
mkdir -p "$out"
CLANG="${CLANG:-clang-14}"
LLVM_SPIRV="${LLVM_SPIRV:-llvm-spirv-14}"
LLVM_LINK="${LLVM_LINK:-llvm-link-14}"
LLVM_DIS="${LLVM_DIS:-llvm-dis-14}"
OPT="${OPT:-opt-14}"
LLVM_AS="${LLVM_AS:-llvm-as-14}"
# OpenCL C 3.0 with the generic address space: the routines take generic
# pointers (SYCL code passes them; OpenCL C kernels convert theirs), and the
# library's atomics take global ones (Intel's CPU runtime cannot build 64-bit
# atomics through generic pointers: see README.md). clang 14's header
# declares the builtins' global-pointer forms only without the generic
# address space unless told to (__opencl_c_named_address_space_builtins,
# its own switch for exactly this). -Os, not
# -O2: llvm-spirv 14 emits blocks before their dominators for some -O2 loops
# (spirv-val rejects the module; chosen before block-order.py below, which
# fixes that order, and kept).
FLAGS=(-cl-std=CL3.0 -Xclang -finclude-default-header
    -Xclang "-cl-ext=-all,+__opencl_c_atomic_order_seq_cst,+__opencl_c_atomic_order_acq_rel,+__opencl_c_atomic_scope_all_devices,+__opencl_c_atomic_scope_device,+cl_khr_int64_base_atomics,+cl_khr_int64_extended_atomics,+__opencl_c_program_scope_global_variables,+__opencl_c_int64,+cl_khr_fp64,+__opencl_c_fp64,+cl_khr_subgroups,+__opencl_c_subgroups,+__opencl_c_generic_address_space"
    -D__opencl_c_named_address_space_builtins=1
    -target spir64 -Os -Werror -I "$here/src" -I "$here/include")
"$CLANG" "${FLAGS[@]}" -emit-llvm -c "$here/src/core.cl" -o "$out/core.bc"
"$CLANG" "${FLAGS[@]}" -emit-llvm -c "$here/src/typed.cl" -o "$out/typed.bc"
# The multi-element wait/test polling loops at -O0: see bindings/gen/src/opencl.rs.
"$CLANG" "${FLAGS[@]}" -O0 -emit-llvm -c "$here/src/sync.cl" -o "$out/sync.bc"
"$LLVM_LINK" "$out/core.bc" "$out/typed.bc" "$out/sync.bc" -o "$out/linked.bc"
# Blocks after their dominators, as SPIR-V requires and llvm-spirv 14 does
# not ensure (block-order.py says why); every value named first, so that
# the text has no numbering to keep in order.
"$OPT" -passes=instnamer "$out/linked.bc" -o - | "$LLVM_DIS" -o "$out/linked.ll"
python3 "$here/block-order.py" "$out/linked.ll" "$out/ordered.ll"
"$LLVM_AS" "$out/ordered.ll" -o - | "$OPT" -passes=strip -o "$out/ishmem_device.bc" # the names again
# SPIR-V 1.3: llvm-spirv 14 does not list every global an entry point uses
# in its interface, which 1.4 requires (spirv-val rejects it).
"$LLVM_SPIRV" --spirv-max-version=1.3 "$out/ishmem_device.bc" -o "$out/ishmem_device.spv"
spirv-val "$out/ishmem_device.spv"
rm -f "$out/core.bc" "$out/typed.bc" "$out/sync.bc" "$out/linked.bc" "$out/linked.ll" "$out/ordered.ll"
echo "$out/ishmem_device.spv"
