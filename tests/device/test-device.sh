#!/usr/bin/env bash
# Device test: builds the device library and the test kernels to SPIR-V,
# then runs device_host.c on 1..4 PEs; its kernels run on each PE's OpenCL
# CPU device (Intel's runtime from PyPI) and talk to the other PEs through
# the device library. Needs: clang-14, llvm-spirv-14, spirv-tools,
# ocl-icd-opencl-dev, and TEST_OPENCL_VENV (a venv with
# intel-opencl-rt); tests/run-all.sh provides them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "test-device: FAIL: $*" >&2; exit 1; }
venv="${TEST_OPENCL_VENV:?set TEST_OPENCL_VENV to a venv with intel-opencl-rt}"
[ -f "$venv/lib/libintelocl.so" ] || fail "$venv/lib/libintelocl.so not found"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/device-test"
mkdir -p "$out"
"$root/tests/device/build-kernels.sh" "$out"
# Programs record the soname; a cargo build alone does not make its link.
[ -e "$target/debug/libishmem.so.0" ] || ln -sf libishmem.so "$target/debug/libishmem.so.0"
cc -std=c11 -O2 -Wall -Werror "$root/tests/device/sweep_host.c" -I "$root/bindings/c/include" \
    -L "$target/debug" -lishmem -lOpenCL -Wl,-rpath,"$target/debug" -o "$out/sweep_host"
cc -std=c11 -O2 -Wall -Werror "$root/tests/device/device_host.c" -I "$root/bindings/c/include" \
    -L "$target/debug" -lishmem -lOpenCL -Wl,-rpath,"$target/debug" -o "$out/device_host"
cc -std=c11 -O2 -Wall -Werror "$root/tests/sycl/decls_host.c" -I "$root/bindings/c/include" \
    -L "$target/debug" -lishmem -lOpenCL -Wl,-rpath,"$target/debug" -o "$out/decls_host"
# The SYCL header against the host headers (same types for the routines
# both declare), with the host's C++ compiler.
c++ -std=c++17 -Wall -Werror -fsyntax-only -I "$root/bindings/c/include" "$root/tests/sycl/host_decls.cpp"
export OCL_ICD_FILENAMES="$venv/lib/libintelocl.so" LD_LIBRARY_PATH="$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ISHMEM_DEVICE_LIB="$out/ishmem_device.spv"
# One run: label, expected output line, limit (s), then the command. Each
# prints its time and goes into TEST_RESULTS (the CI summary's slowest runs).
t_passed=0
run() {
    local label="$1" want="$2" limit="$3" t0=$SECONDS log
    shift 3
    log="$(timeout -k 10 "$limit" "$@" 2>&1)" || { echo "$log" >&2; fail "$label"; }
    grep -q "$want" <<<"$log" || { echo "$log" >&2; fail "$label printed no '$want'"; }
    record "$label" $((SECONDS - t0)) "$limit"
}
record() { # label, seconds, limit
    echo "ok: $1 ($2 s)"
    t_passed=$((t_passed + 1))
    if [ -n "${TEST_RESULTS:-}" ]; then printf 'ran\t%s\t%s\tdevice cpu\t%s\n' "$2" "$3" "$1" >>"$TEST_RESULTS"; fi
}
ishmrun="$target/debug/ishmrun"
# Compiled programs are cached (ISHMEM_DEVICE_CACHE): a fresh cache here,
# first filled by 4 PEs that all miss at once (one compiles, the others
# wait for it), then used by every later run; one run without it, at the
# same time as the fill (each compiles on one core, and the waiting PEs
# sleep on the cache's lock).
export ISHMEM_DEVICE_CACHE="$out/program-cache"
rm -rf "$ISHMEM_DEVICE_CACHE"
(run "device_host on 1 PE, no program cache" "device ok on 1 PEs" 300 \
    env ISHMEM_DEVICE_CACHE=0 "$ishmrun" -n 1 "$out/device_host" "$out/kernels.spv") &
nocache=$!
trap 'kill "$nocache" 2>/dev/null || true' EXIT # not left running if the run below fails
run "device_host on 4 PEs, empty program cache" "device ok on 4 PEs" 300 \
    "$ishmrun" -n 4 "$out/device_host" "$out/kernels.spv"
wait "$nocache" || fail "device_host on 1 PE, no program cache"
trap - EXIT
t_passed=$((t_passed + 1))
[ "$(stat -c %a "$ISHMEM_DEVICE_CACHE")" = 700 ] || fail "the program cache is not private: $(stat -c %a "$ISHMEM_DEVICE_CACHE")"
[ "$(ls "$ISHMEM_DEVICE_CACHE" | grep -c '\.bin$')" = 2 ] || fail "the program cache holds $(ls "$ISHMEM_DEVICE_CACHE"), expected two programs"
# The runtime's own settings change the code it compiles, so they are part
# of the key: with its vectorizer off (the kernels then run unvectorized,
# another configuration of the compiler) both programs are new entries.
run "device_host on 1 PE, vectorizer off" "device ok on 1 PEs" 300 \
    env CL_CONFIG_CPU_VECTORIZER_MODE=1 "$ishmrun" -n 1 "$out/device_host" "$out/kernels.spv"
[ "$(ls "$ISHMEM_DEVICE_CACHE" | grep -c '\.bin$')" = 4 ] || fail "the program cache holds $(ls "$ISHMEM_DEVICE_CACHE"), expected four programs (CL_CONFIG_* not in the key?)"
if ls "$ISHMEM_DEVICE_CACHE" | grep -v '\.bin$'; then fail "the program cache kept lock or temporary files"; fi
# Load/store to local peers, then every operation through the ring and
# the host proxy (ISHMEM_DEVICE_RING_ALL=1). With the ring, not on exactly
# as many PEs as cores (2 here): there each PE's spinning work-items and
# its proxy thread often land on one core and every request waits for a
# time slice (1 to 90 s for the same run; docs/device.md, "How device
# operations travel").
cores="$(nproc)"
for ring in 0 1; do
    for n in 1 2 3 4; do
        [ $ring = 1 ] && [ "$n" = "$cores" ] && continue
        run "device_host on $n PEs, ring-all $ring" "device ok on $n PEs" 300 \
            env ISHMEM_DEVICE_RING_ALL=$ring "$ishmrun" -n "$n" "$out/device_host" "$out/kernels.spv"
        # The sweep (every operation, size and type) with the ring: 1 and 3
        # PEs; on 3 one type of each size and kind ("few": every type took
        # 80 s here, each request waiting for a proxy thread's time slice).
        [ $ring = 1 ] && [ "$n" != 1 ] && [ "$n" != 3 ] && continue
        few=""; [ $ring = 1 ] && [ "$n" = 3 ] && few=few
        run "sweep on $n PEs, ring-all $ring${few:+, $few types}" "device sweep ok on $n PEs" 600 \
            env ISHMEM_DEVICE_RING_ALL=$ring "$ishmrun" -n "$n" "$out/sweep_host" "$out/sweep.spv" $few
    done
done
# Device syncs and collectives with their flags in the heap, as on GPUs
# (ISHMEM_DEVICE_SYNC=heap; the CPU device keeps them in the control
# segment by default): small collectives by low-latency words among PEs
# that reach each other by load/store, and the sync words of PEs reached
# through the ring.
t0=$SECONDS
log="$(ISHMEM_DEBUG=1 ISHMEM_DEVICE_SYNC=heap timeout -k 10 300 "$ishmrun" -n 2 "$out/device_host" "$out/kernels.spv" 2>&1)" ||
    { echo "$log" >&2; fail "device_host on 2 PEs, sync words in the heap"; }
grep -q "device ok on 2 PEs" <<<"$log" || { echo "$log" >&2; fail "device_host on 2 PEs, sync words in the heap: no 'device ok'"; }
[ "$(grep -c "device syncs in the heap" <<<"$log")" = 2 ] ||
    { echo "$log" >&2; fail "ISHMEM_DEVICE_SYNC=heap: not every PE has its device syncs in the heap"; }
record "device_host on 2 PEs, sync words in the heap" $((SECONDS - t0)) 300
run "device_host on 4 PEs, sync words in the heap" "device ok on 4 PEs" 300 \
    env ISHMEM_DEVICE_SYNC=heap "$ishmrun" -n 4 "$out/device_host" "$out/kernels.spv"
n=3; [ "$cores" = 3 ] && n=4 # not as many PEs as cores with the ring (above)
run "device_host on $n PEs, ring-all 1, sync words in the heap" "device ok on $n PEs" 300 \
    env ISHMEM_DEVICE_SYNC=heap ISHMEM_DEVICE_RING_ALL=1 "$ishmrun" -n $n "$out/device_host" "$out/kernels.spv"
# The device-queue operations from the safe Rust API (ishmem crate).
for ring in 0 1; do
    for n in 1 2 4; do
        run "rust_on_queue on $n PEs, ring-all $ring" "rust on_queue ok on $n PEs" 300 \
            env ISHMEM_DEVICE_RING_ALL=$ring "$ishmrun" -n "$n" "$target/debug/rust_on_queue"
    done
done
# Device-side argument checks: a kernel on the last PE passes a bad PE or
# a non-symmetric address; the job must end with the library's message
# naming the operation and the value, on the load/store path and the ring.
for ring in 0 1; do
    for bad in bad_pe bad_addr; do
        t0=$SECONDS
        if log="$(ISHMEM_DEVICE_RING_ALL=$ring timeout -k 10 120 "$ishmrun" -n 2 "$out/device_host" "$out/kernels.spv" $bad 2>&1)"; then
            echo "$log" >&2; fail "$bad (ring-all $ring): the job did not fail"
        fi
        case $bad in
        bad_pe) want="ishmem device p: target PE 5 is out of range \[0, 2)" ;;
        *) want="ishmem device p: address 0x[0-9a-f]* (to PE 0) is not in the symmetric heap" ;;
        esac
        echo "$log" | grep -q "PE 1: $want" || { echo "$log" >&2; fail "$bad (ring-all $ring): no '$want' message"; }
        if echo "$log" | grep -q "returned"; then echo "$log" >&2; fail "$bad (ring-all $ring): the kernel returned"; fi
        record "device_host $bad, ring-all $ring (expected failure)" $((SECONDS - t0)) 120
    done
done
# A PE lost while the others' kernels wait for it (their host threads in
# clFinish, outside the library): the watchdog ends them within seconds,
# under ishmrun and under Open MPI (node-local sharing: the node's PEs
# watch each other's processes).
lost_in_kernel() { # label, want, command...
    local label="$1" want="$2" t0=$SECONDS log
    shift 2
    if log="$(timeout -k 10 60 "$@" 2>&1)"; then echo "$log" >&2; fail "$label: the job did not fail"; fi
    for w in "$want" "this PE ran outside the library"; do
        echo "$log" | grep -qF "$w" || { echo "$log" >&2; fail "$label: no '$w'"; }
    done
    if echo "$log" | grep -q "returned"; then echo "$log" >&2; fail "$label: a waiting kernel returned"; fi
    [ $((SECONDS - t0)) -lt 20 ] || { echo "$log" >&2; fail "$label: took $((SECONDS - t0)) s"; }
    record "$label (expected failure)" $((SECONDS - t0)) 60
}
lost_in_kernel "device_host lost_in_kernel on 3 PEs" "PE 2 exited (status 0) without calling shmem_finalize" \
    "$ishmrun" -n 3 "$out/device_host" "$out/kernels.spv" lost_in_kernel
if command -v mpirun.openmpi >/dev/null && [ -f "$target/debug/ishmem/libishmem_proxy_oshmpi-openmpi.so" ]; then
    lost_in_kernel "device_host lost_in_kernel on 2 PEs over Open MPI" "PE 1 ended without calling shmem_finalize" \
        mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 -x OCL_ICD_FILENAMES -x LD_LIBRARY_PATH \
        -x ISHMEM_DEVICE_LIB -x ISHMEM_DEVICE_CACHE "$out/device_host" "$out/kernels.spv" lost_in_kernel
fi
# A deadlock among kernels (PE 0's kernel waits for a value nobody
# stores, the others' for a signal, every host in clFinish): the
# watchdog names each PE's device wait. By default a warning (the job goes
# on, here until the timeout); with ISHMEM_DEADLOCK_DEVICE_ABORT=1 the job
# ends. Load/store and the ring.
# check_failure LABEL EXIT EXPECTED_EXIT LOG FORBIDDEN WANTED...: the job's
# exit, every WANTED line in its log, and no match of FORBIDDEN (grep).
check_failure() {
    local label="$1" rc="$2" want_rc="$3" log="$4" forbid="$5" w
    shift 5
    [ "$rc" = "$want_rc" ] || { echo "$log" >&2; fail "$label: exit $rc, expected $want_rc"; }
    for w in "$@"; do
        echo "$log" | grep -qF "$w" || { echo "$log" >&2; fail "$label: no '$w'"; }
    done
    if echo "$log" | grep -q "$forbid"; then echo "$log" >&2; fail "$label: '$forbid' in its output"; fi
}
kernel_deadlock() { # label, expected exit, extra env...
    local label="$1" want_rc="$2" t0=$SECONDS log rc=0
    shift 2
    log="$(env ISHMEM_DEADLOCK_TIMEOUT=2 "$@" timeout -k 5 12 "$ishmrun" -n 2 "$out/device_host" "$out/kernels.spv" kernel_deadlock 2>&1)" || rc=$?
    check_failure "$label" "$rc" "$want_rc" "$log" "returned" \
        "every PE has waited for at least 2 s, in the library or in kernels" \
        "PE 0 runs outside the library; its kernels wait in ishmem_long_wait_until(ivar 0x" \
        "ISHMEM_CMP_EQ, 42) (1 work-item waiting so)" \
        "PE 1 runs outside the library; its kernels wait in ishmem_signal_wait_until(sig_addr 0x" \
        "ISHMEM_CMP_GE, 7) (1 work-item waiting so)"
    [ "$(grep -c "deadlock: every PE" <<<"$log")" = 1 ] || { echo "$log" >&2; fail "$label: not one report"; }
    record "$label (expected failure)" $((SECONDS - t0)) 60
}
kernel_deadlock "device_host kernel_deadlock on 2 PEs, ends the job" 1 ISHMEM_DEADLOCK_DEVICE_ABORT=1
# Device failures that end the job (ISHMEM_DEADLOCK_DEVICE_ABORT=1), on 2
# PEs (or $pes): failure_case LABEL MODE "ENV..." WANTED...
failure_case() {
    local label="$1" mode="$2" extra="$3" t0=$SECONDS log rc=0
    shift 3
    # shellcheck disable=SC2086 # extra is a list of VAR=value words
    log="$(env ISHMEM_DEADLOCK_TIMEOUT=2 ISHMEM_DEADLOCK_DEVICE_ABORT=1 $extra timeout -k 5 20 "$ishmrun" -n "${pes:-2}" "$out/device_host" "$out/kernels.spv" "$mode" 2>&1)" || rc=$?
    check_failure "$label" "$rc" 1 "$log" "returned" "$@"
    record "$label (expected failure)" $((SECONDS - t0)) 60
    last_log="$log"
}
# A kernel waiting in the library's own device barrier for a PE whose
# kernel waits elsewhere: the barrier's wait is named, whether the device
# syncs through the control segment (the wait records itself) or through
# sync words in the heap, as on GPUs (the watchdog reads them).
kernel_barrier_deadlock() { # label, PE 0's expected wait, extra env
    failure_case "$1" kernel_barrier_deadlock "${3:-}" \
        "every PE has waited for at least 2 s, in the library or in kernels" \
        "PE 0 runs outside the library; its kernels wait in $2" \
        "PE 1 runs outside the library; its kernels wait in ishmem_long_wait_until(ivar 0x"
    # PE 1 in an API wait: not a report that ends the job by itself.
    if grep -q "nothing can release them" <<<"$last_log"; then echo "$last_log" >&2; fail "$1: taken for certain"; fi
}
# PE 0's kernel in a barrier, PE 1's host waiting for a flag (it might go
# on and call the barrier): the report only warns, through the control
# segment and through the sync words.
for sync in control heap; do
    t0=$SECONDS rc=0
    log="$(ISHMEM_DEVICE_SYNC=$sync ISHMEM_DEADLOCK_TIMEOUT=2 timeout -k 5 10 "$ishmrun" -n 2 "$out/device_host" "$out/kernels.spv" kernel_barrier_host_flag 2>&1)" || rc=$?
    check_failure "kernel_barrier_host_flag, $sync" "$rc" 124 "$log" "nothing can release them\|returned" \
        "warning: deadlock: every PE has waited for at least 2 s" "PE 1 waits in ishmem_long_wait_until(ivar 0x" \
        "(kernels wait, so this only warns"
    record "device_host kernel_barrier_host_flag on 2 PEs, $sync (warns)" $((SECONDS - t0)) 60
done
kernel_barrier_deadlock "device_host kernel_barrier_deadlock on 2 PEs, control segment" \
    "a device team sync of the world team (through the control segment, epoch "
kernel_barrier_deadlock "device_host kernel_barrier_deadlock on 2 PEs, sync words" \
    "a device team sync or collective of the world team (2 PEs): waits for PE 1's signal 1 (0 arrived)" \
    ISHMEM_DEVICE_SYNC=heap
kernel_barrier_deadlock "device_host kernel_barrier_deadlock on 2 PEs, sync words, ring-all 1" \
    "a device team sync or collective of the world team (2 PEs): waits for PE 1's signal 1 (0 arrived)" \
    "ISHMEM_DEVICE_SYNC=heap ISHMEM_DEVICE_RING_ALL=1"
# Members of a team that make different collective calls in kernels
# (sync words in the heap, as on GPUs): the member that receives the
# other's signal or low-latency words names both calls and ends the job;
# a low-latency collective facing a barrier hears nothing, and the
# watchdog names both waits.
failure_case "device_host coll_mismatch_ll on 2 PEs" coll_mismatch_ll ISHMEM_DEVICE_SYNC=heap \
    "PE 1: ishmem device collective: the members of the world team made different collective calls in kernels" \
    "this PE called broadcast of 8 bytes from team PE 0; PE 0 called an fcollect (signature 0x3"
failure_case "device_host coll_mismatch_signal on 2 PEs" coll_mismatch_signal ISHMEM_DEVICE_SYNC=heap \
    "PE 0: ishmem device collective: the members of the world team made different collective calls in kernels" \
    "this PE called a barrier or sync (barrier_all, sync_all or team_sync); PE 1 called a broadcast (signature 0x1"
# On 3 PEs (PE 2 calls as PE 0 does) a member's signals and low-latency
# words are awaited together with another member's (the batched waits):
# the check holds there too.
pes=3 failure_case "device_host coll_mismatch_signal on 3 PEs" coll_mismatch_signal ISHMEM_DEVICE_SYNC=heap \
    "ishmem device collective: the members of the world team made different collective calls in kernels" \
    "this PE called a barrier or sync (barrier_all, sync_all or team_sync); PE 1 called a broadcast (signature 0x1"
pes=3 failure_case "device_host coll_mismatch_llroot on 3 PEs" coll_mismatch_llroot ISHMEM_DEVICE_SYNC=heap \
    "ishmem device collective: the members of the world team made different collective calls in kernels" \
    "this PE called fcollect of 8 bytes per PE; PE 1 called a broadcast (signature 0x1"
# A work-group reduction of fewer elements than work-items first waits
# for every member's words: another call's fewer words are reported, not
# waited for.
pes=3 failure_case "device_host coll_mismatch_wgreduce on 3 PEs" coll_mismatch_wgreduce ISHMEM_DEVICE_SYNC=heap \
    "ishmem device collective: the members of the world team made different collective calls in kernels" \
    "PE 1 called a broadcast (signature 0x1"
# A work-item's reduction against a broadcast of fewer words: on 2 PEs
# the pair's path, on 3 the batched one-pass read; _reduce4, a broadcast
# of one int, no second word for the reduction's first 8-byte element.
for n in 2 3; do
    for how in reduce reduce4; do
        pes=$n failure_case "device_host coll_mismatch_$how on $n PEs" coll_mismatch_$how ISHMEM_DEVICE_SYNC=heap \
            "ishmem device collective: the members of the world team made different collective calls in kernels" \
            "this PE called sum reduction of 7 elements of 64-bit integer" "PE 1 called a broadcast (signature 0x1"
    done
done
# Kernels that wait in the library's own syncs for each other (or for a
# PE whose device runs nothing) end the job without
# ISHMEM_DEADLOCK_DEVICE_ABORT: nothing can release them.
certain="nothing can release them: the members made different collective calls"
failure_case "device_host coll_mismatch_mixed on 2 PEs" coll_mismatch_mixed \
    "ISHMEM_DEVICE_SYNC=heap ISHMEM_DEADLOCK_DEVICE_ABORT=0" \
    "PE 0 runs outside the library; its kernels wait in a small device collective of the world team (2 PEs): waits for PE 1's low-latency message 1" \
    "PE 1 runs outside the library; its kernels wait in a device team sync or collective of the world team (2 PEs): waits for PE 0's signal 1 (0 arrived)" \
    "$certain"
# A barrier made on the host by PE 0 and in kernels by the others: through
# the control segment they meet; through sync words in the heap (as on
# GPUs) they cannot, and the job ends.
run "device_host host_device_barrier on 3 PEs" "PE 2: host_device_barrier ok" 60 \
    "$ishmrun" -n 3 "$out/device_host" "$out/kernels.spv" host_device_barrier
pes=3 failure_case "device_host host_device_barrier on 3 PEs, sync words" host_device_barrier \
    "ISHMEM_DEVICE_SYNC=heap ISHMEM_DEADLOCK_DEVICE_ABORT=0" \
    "PE 0 waits in ishmem_barrier_all (the sync of the world team, 3 PEs, round 0: waits for PE 2)" \
    "PE 2 runs outside the library; its kernels wait in a device team sync or collective of the world team (3 PEs): waits for PE 0's signal 1" \
    "$certain"
# The same calls through the control segment (the CPU device's default
# syncs, shared with the host's): each device sync publishes its call in
# the host's words, and the member that finds its predecessor's differ
# ends the job with every member's call.
failure_case "device_host coll_mismatch_ll on 2 PEs, control segment" coll_mismatch_ll "" \
    "ishmem device collective: the members of the world team (2 PEs) made different collective calls" \
    "PE 0: fcollect of 8 bytes per PE" "PE 1: broadcast of 8 bytes from team PE 0"
pes=3 failure_case "device_host coll_mismatch_signal on 3 PEs, control segment" coll_mismatch_signal "" \
    "ishmem device collective: the members of the world team (3 PEs) made different collective calls" \
    "PEs 0, 2: a barrier or sync (barrier_all, sync_all or team_sync)" "PE 1: broadcast of 65536 bytes from team PE 1"
failure_case "device_host coll_mismatch_mixed on 2 PEs, control segment" coll_mismatch_mixed "" \
    "ishmem device collective: the members of the world team (2 PEs) made different collective calls" \
    "PE 0: fcollect of 8 bytes per PE" "PE 1: a barrier or sync (barrier_all, sync_all or team_sync)"
# A host call against device calls: the same broadcast and reduction
# interoperate (results checked); an fcollect facing a broadcast is
# reported by whichever side compares first.
for n in 2 3; do
    run "device_host coll_host_device on $n PEs" "PE 1: coll_host_device ok" 60 \
        "$ishmrun" -n "$n" "$out/device_host" "$out/kernels.spv" coll_host_device
done
pes=3 failure_case "device_host coll_host_mismatch on 3 PEs" coll_host_mismatch "" \
    "the members of the world team (3 PEs) made different collective calls" \
    "PE 1: fcollect of 8192 bytes per PE" "PEs 0, 2: broadcast of 8192 bytes from team PE 1"
# A host reduction in a form of the host's own (1 KiB: each member reduces
# for itself) against the same reduction in kernels: reported as the same
# call in two forms; a small one (the host's publish-and-pull path, which
# a device sync never meets): the watchdog ends the job.
pes=3 failure_case "device_host coll_host_form on 3 PEs" coll_host_form "" \
    "the members of the world team (3 PEs) made different collective calls" \
    "PE 1: sum reduction of 128 elements of 64-bit integer (long, longlong, int64, ptrdiff) (the host's form)" \
    "PEs 0, 2: sum reduction of 128 elements of 64-bit integer (long, longlong, int64, ptrdiff) (the form of kernels" \
    "(one call in different forms"
failure_case "device_host coll_host_staged on 2 PEs" coll_host_staged ISHMEM_DEADLOCK_DEVICE_ABORT=0 \
    "PE 0 runs outside the library; its kernels wait in a device team sync of the world team (through the control segment" \
    "PE 1 waits in ishmem_long_sum_reduce" "nothing can release them"
# A recorded device wait that ends (its _any result right), then a host
# deadlock: reported as one of host waits, ending the job.
t0=$SECONDS
log="$(ISHMEM_DEADLOCK_TIMEOUT=2 timeout -k 5 30 "$ishmrun" -n 2 "$out/device_host" "$out/kernels.spv" long_wait_ends 2>&1)" && rc=0 || rc=$?
check_failure long_wait_ends "$rc" 1 "$log" "in kernels\|long_wait_ends returned" "PE 0: the long wait returned 1" \
    "deadlock: every PE has waited in the library for at least 2 s" "PE 0 waits in ishmem_long_wait_until(ivar 0x"
record "device_host long_wait_ends on 2 PEs (expected failure)" $((SECONDS - t0)) 60
kernel_deadlock "device_host kernel_deadlock on 2 PEs, ring-all 1, warns" 124 ISHMEM_DEVICE_RING_ALL=1
# Across "nodes": under Open MPI with node-local sharing off, every peer is
# remote, so each device operation goes through the ring, the host proxy
# thread and the MPI proxy plugin (with fewer work-items in the
# many-request parts: "small"). Required when TEST_DEVICE_MPI=1 (run-all
# builds the plugins first); otherwise run when Open MPI and the plugin are
# here.
plugin="$target/debug/ishmem/libishmem_proxy_oshmpi-openmpi.so"
if command -v mpirun.openmpi >/dev/null && [ -f "$plugin" ]; then
    run "device_host on 2 PEs over Open MPI, all peers remote" "device ok on 2 PEs" 400 \
        mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 -x ISHMEM_ENABLE_SHM=0 \
        -x OCL_ICD_FILENAMES -x LD_LIBRARY_PATH -x ISHMEM_DEVICE_LIB -x ISHMEM_DEVICE_CACHE \
        "$out/device_host" "$out/kernels.spv" small
elif [ "${TEST_DEVICE_MPI:-0}" = 1 ]; then
    fail "TEST_DEVICE_MPI=1 but mpirun.openmpi or $plugin is missing"
else
    echo "test-device: Open MPI or the MPI proxy plugin not here; the MPI part was not run" >&2
fi
# The SYCL header's declarations (C++ for OpenCL) linked with the device
# library: on 1-4 PEs, load/store and every operation through the ring.
for ring in 0 1; do
    for n in 1 2 3 4; do
        [ $ring = 1 ] && [ "$n" = "$cores" ] && continue
        run "SYCL declarations on $n PEs, ring-all $ring" "sycl declarations ok on $n PEs" 300 \
            env ISHMEM_DEVICE_RING_ALL=$ring "$ishmrun" -n "$n" "$out/decls_host" "$out/sycl_decls.spv"
    done
done
# Through the OpenSHMEM proxy: Open MPI's OSHMEM loaded at run time
# (ISHMEM_RUNTIME=OPENSHMEM), every peer reached through it.
if command -v oshrun >/dev/null; then
    run "device_host on 2 PEs through Open MPI's OSHMEM" "device ok on 2 PEs" 400 \
        oshrun --allow-run-as-root --oversubscribe -n 2 --mca spml ucx \
        --mca opal_common_ucx_opal_mem_hooks 0 -x UCX_TLS=shm,self -x UCX_HANDLE_ERRORS=none \
        -x ISHMEM_RUNTIME=OPENSHMEM -x OCL_ICD_FILENAMES -x LD_LIBRARY_PATH -x ISHMEM_DEVICE_LIB \
        -x ISHMEM_DEVICE_CACHE "$out/device_host" "$out/kernels.spv" small
elif [ "${TEST_DEVICE_MPI:-0}" = 1 ]; then
    fail "TEST_DEVICE_MPI=1 but oshrun (Open MPI's OSHMEM) is missing"
fi
# Through Sandia OpenSHMEM when an SOS build is here (tests/sos/build-sos.sh
# into target/sos, or TEST_SOS), over libfabric's tcp provider under
# MPICH's Hydra.
sos="${TEST_SOS:-$target/sos}"
if [ -f "$sos/lib/libsma.so" ] && command -v mpiexec.hydra >/dev/null; then
    run "device_host on 2 PEs through Sandia OpenSHMEM" "device ok on 2 PEs" 400 \
        env ISHMEM_RUNTIME=OPENSHMEM ISHMEM_SHMEM_LIB_NAME="$sos/lib/libsma.so" SHMEM_OFI_PROVIDER="tcp;ofi_rxm" \
        FI_PROVIDER=tcp mpiexec.hydra -n 2 "$out/device_host" "$out/kernels.spv" small
else
    echo "test-device: no SOS build at $sos; the SOS part was not run"
fi
# A SYCL program (AdaptiveCpp, tests/sycl/build-acpp.sh into target/acpp,
# or TEST_ACPP) when such a build is here.
acpp="${TEST_ACPP:-$target/acpp}"
if [ -x "$acpp/bin/acpp" ]; then
    t0=$SECONDS
    "$root/tests/sycl/run.sh" "$acpp" || fail "the SYCL program (tests/sycl/run.sh)"
    record "SYCL program on 1-4 PEs, both ring modes (AdaptiveCpp)" $((SECONDS - t0)) 600
else
    echo "test-device: no AdaptiveCpp build at $acpp; the SYCL program was not run"
fi
echo "test-device: $t_passed passed, 0 failed"
