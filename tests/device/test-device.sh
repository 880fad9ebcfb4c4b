#!/usr/bin/env bash
# Device test: builds the device library and the test kernels to SPIR-V,
# then runs device_host.c on 1..4 PEs; its kernels run on each PE's OpenCL
# CPU device (Intel's runtime from PyPI) and talk to the other PEs through
# the device library. Needs: clang-14, llvm-spirv-14, spirv-tools,
# ocl-icd-opencl-dev, and ISHMEM_TEST_OPENCL_VENV (a venv with
# intel-opencl-rt); tests/run-all.sh provides them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "test-device: FAIL: $*" >&2; exit 1; }
venv="${ISHMEM_TEST_OPENCL_VENV:?set ISHMEM_TEST_OPENCL_VENV to a venv with intel-opencl-rt}"
unset ISHMEM_TEST_OPENCL_VENV # not a library variable (the library warns about unknown ISHMEM_*)
[ -f "$venv/lib/libintelocl.so" ] || fail "$venv/lib/libintelocl.so not found"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/device-test"
mkdir -p "$out"
"$root/tests/device/build-kernels.sh" "$out"
cc -std=c11 -O2 -Wall -Werror "$root/tests/device/sweep_host.c" -I "$root/bindings/c/include" \
    -L "$target/debug" -lishmem -lOpenCL -Wl,-rpath,"$target/debug" -o "$out/sweep_host"
cc -std=c11 -O2 -Wall -Werror "$root/tests/device/device_host.c" -I "$root/bindings/c/include" \
    -L "$target/debug" -lishmem -lOpenCL -Wl,-rpath,"$target/debug" -o "$out/device_host"
export OCL_ICD_FILENAMES="$venv/lib/libintelocl.so" LD_LIBRARY_PATH="$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ISHMEM_DEVICE_LIB="$out/ishmem_device.spv"
# Load/store to local peers, then every operation through the ring and
# the host proxy (ISHMEM_DEVICE_RING_ALL=1).
for ring in 0 1; do
    for n in 1 2 3 4; do
        log="$(ISHMEM_DEVICE_RING_ALL=$ring "$target/debug/ishmrun" -n "$n" -t 300 "$out/device_host" "$out/kernels.spv" 2>&1)" \
            || { echo "$log" >&2; fail "device test on $n PEs (ring-all $ring)"; }
        echo "$log" | grep -q "device ok on $n PEs" || { echo "$log" >&2; fail "device test on $n PEs (ring-all $ring) printed no result"; }
        log="$(ISHMEM_DEVICE_RING_ALL=$ring "$target/debug/ishmrun" -n "$n" -t 600 "$out/sweep_host" "$out/sweep.spv" 2>&1)" \
            || { echo "$log" >&2; fail "device sweep on $n PEs (ring-all $ring)"; }
        echo "$log" | grep -q "device sweep ok on $n PEs" || { echo "$log" >&2; fail "device sweep on $n PEs (ring-all $ring)"; }
    done
done
# The device-queue operations from the safe Rust API (ishmem crate).
for ring in 0 1; do
    for n in 1 2 4; do
        log="$(ISHMEM_DEVICE_RING_ALL=$ring "$target/debug/ishmrun" -n "$n" -t 300 "$target/debug/rust_on_queue" 2>&1)" \
            || { echo "$log" >&2; fail "Rust on_queue on $n PEs (ring-all $ring)"; }
        echo "$log" | grep -q "rust on_queue ok on $n PEs" || { echo "$log" >&2; fail "Rust on_queue on $n PEs printed no result"; }
    done
done
# Device-side argument checks: a kernel on the last PE passes a bad PE or
# a non-symmetric address; the job must end with the library's message
# naming the operation and the value, on the load/store path and the ring.
for ring in 0 1; do
    for bad in bad_pe bad_addr; do
        if log="$(ISHMEM_DEVICE_RING_ALL=$ring "$target/debug/ishmrun" -n 2 -t 120 "$out/device_host" "$out/kernels.spv" $bad 2>&1)"; then
            echo "$log" >&2; fail "$bad (ring-all $ring): the job did not fail"
        fi
        case $bad in
        bad_pe) want="ishmem device p: target PE 5 is out of range \[0, 2)" ;;
        *) want="ishmem device p: address 0x[0-9a-f]* (to PE 0) is not in the symmetric heap" ;;
        esac
        echo "$log" | grep -q "PE 1: $want" || { echo "$log" >&2; fail "$bad (ring-all $ring): no '$want' message"; }
        if echo "$log" | grep -q "returned"; then echo "$log" >&2; fail "$bad (ring-all $ring): the kernel returned"; fi
    done
done
# Across "nodes": under Open MPI with node-local sharing off, every peer is
# remote, so each device operation goes through the ring, the host proxy
# thread and the MPI proxy plugin. Required when TEST_DEVICE_MPI=1 (run-all
# builds the plugins first); otherwise run when Open MPI and the plugin are
# here.
plugin="$target/debug/ishmem/libishmem_proxy_oshmpi-openmpi.so"
if command -v mpirun.openmpi >/dev/null && [ -f "$plugin" ]; then
    log="$(timeout -k 10 400 mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 -x ISHMEM_ENABLE_SHM=0 \
        -x OCL_ICD_FILENAMES -x LD_LIBRARY_PATH -x ISHMEM_DEVICE_LIB "$out/device_host" "$out/kernels.spv" 2>&1)" \
        || { echo "$log" >&2; fail "device test on 2 PEs over MPI (all peers remote)"; }
    echo "$log" | grep -q "device ok on 2 PEs" || { echo "$log" >&2; fail "device test over MPI printed no result"; }
elif [ "${TEST_DEVICE_MPI:-0}" = 1 ]; then
    fail "TEST_DEVICE_MPI=1 but mpirun.openmpi or $plugin is missing"
else
    echo "test-device: Open MPI or the MPI proxy plugin not here; the MPI part was not run" >&2
fi
# Through the OpenSHMEM proxy: Open MPI's OSHMEM loaded at run time
# (ISHMEM_RUNTIME=OPENSHMEM), every peer reached through it.
if command -v oshrun >/dev/null; then
    log="$(timeout -k 10 400 oshrun --allow-run-as-root --oversubscribe -n 2 --mca spml ucx \
        --mca opal_common_ucx_opal_mem_hooks 0 -x UCX_TLS=shm,self -x UCX_HANDLE_ERRORS=none \
        -x ISHMEM_RUNTIME=OPENSHMEM -x OCL_ICD_FILENAMES -x LD_LIBRARY_PATH -x ISHMEM_DEVICE_LIB \
        "$out/device_host" "$out/kernels.spv" 2>&1)" \
        || { echo "$log" >&2; fail "device test on 2 PEs through Open MPI's OSHMEM"; }
    echo "$log" | grep -q "device ok on 2 PEs" || { echo "$log" >&2; fail "device test through OSHMEM printed no result"; }
elif [ "${TEST_DEVICE_MPI:-0}" = 1 ]; then
    fail "TEST_DEVICE_MPI=1 but oshrun (Open MPI's OSHMEM) is missing"
fi
# Through Sandia OpenSHMEM when an SOS build is here (tests/sos/build-sos.sh
# into target/sos, or ISHMEM_TEST_SOS), over libfabric's tcp provider under
# MPICH's Hydra.
sos="${ISHMEM_TEST_SOS:-$target/sos}"
if [ -f "$sos/lib/libsma.so" ] && command -v mpiexec.hydra >/dev/null; then
    log="$(ISHMEM_RUNTIME=OPENSHMEM ISHMEM_SHMEM_LIB_NAME="$sos/lib/libsma.so" SHMEM_OFI_PROVIDER="tcp;ofi_rxm" \
        FI_PROVIDER=tcp timeout -k 10 400 mpiexec.hydra -n 2 "$out/device_host" "$out/kernels.spv" 2>&1)" \
        || { echo "$log" >&2; fail "device test on 2 PEs through Sandia OpenSHMEM"; }
    echo "$log" | grep -q "device ok on 2 PEs" || { echo "$log" >&2; fail "device test through SOS printed no result"; }
    echo "test-device: through Sandia OpenSHMEM ($sos): ok"
else
    echo "test-device: no SOS build at $sos; the SOS part was not run"
fi
echo "test-device: ok"
