#!/usr/bin/env bash
# A real multi-host run on one machine. Two "hosts", each a network
# namespace (its own interfaces, joined by a veth pair, 10.77.0.1 and
# 10.77.0.2) with its own host name (a UTS namespace). Open MPI's mpirun
# starts in host a and reaches host b over TCP through an ssh stand-in that
# enters b's namespaces; MPI itself runs over TCP (no shared memory between
# the hosts). tests/c/multihost.c then checks that PEs share memory exactly
# with PEs of their own host, and RMA, AMOs, put-with-signal, a reduction and
# a lock across hosts, through the MPI proxy.
#
#   tests/mpi/multihost.sh [PES_PER_HOST]     (root; default 2)
#   tests/mpi/multihost.sh PES_PER_HOST -- PROGRAM [ARGS...]
#
# The second form runs PROGRAM (an Open MPI program, e.g. a benchmark)
# across the two hosts instead of the test, with the same settings, and
# prints its output (packaging/bench/proxy.sh --multihost uses it).
# MULTIHOST_TRANSPORT=ob1 runs MPI over Open MPI's own TCP transport
# (pml ob1, btl tcp, osc pt2pt) instead of UCX's; MULTIHOST_MPI=mpich
# starts PROGRAM (an MPICH program) with MPICH's mpiexec instead.
# MULTIHOST_DEVICE=opaque puts the heaps on the opaque test device (memory
# the host cannot touch, as GPU heaps: the proxy serves them across hosts).
# MULTIHOST_RMA=message sets the proxy's ISHMEM_PROXY_RMA (default window).
set -euo pipefail
cd "$(dirname "$0")/../.."
per_host="${1:-2}"
user_prog=()
if [ "${2:-}" = "--" ]; then
    shift 2
    user_prog=("$@")
    [ ${#user_prog[@]} -gt 0 ] || { echo "multihost: no program after --" >&2; exit 2; }
fi
[ "$(id -u)" = 0 ] || { echo "multihost: needs root (network and UTS namespaces)" >&2; exit 1; }
for tool in ip nsenter unshare mpirun.openmpi; do
    command -v $tool >/dev/null || { echo "multihost: $tool is missing" >&2; exit 1; }
done
target="${CARGO_TARGET_DIR:-$PWD/target}/debug"
[ ${#user_prog[@]} -gt 0 ] || [ -f "$target/libishmem.so" ] && [ -f "$target/ishmem/libishmem_proxy_oshmpi-openmpi.so" ] || {
    echo "multihost: build first (cargo build --workspace; proxy-oshmpi/build-plugins.sh)" >&2; exit 1; }

run="/run/ishmem-multihost.$$"
nsa="ishmem-mh-a.$$"
nsb="ishmem-mh-b.$$"
cleanup() {
    set +e
    for n in a b; do umount "$run/uts-$n" 2>/dev/null; done
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    rm -rf "$run"
}
trap cleanup EXIT
mkdir -p "$run"

# Two hosts joined by a veth pair.
ip netns add "$nsa"
ip netns add "$nsb"
ip link add "mh$$a" type veth peer name "mh$$b"
ip link set "mh$$a" netns "$nsa"
ip link set "mh$$b" netns "$nsb"

for ns in "$nsa" "$nsb"; do
    ip -n "$ns" link set lo up
done
# One interface name on both hosts (mh0), as on a cluster's nodes.
ip -n "$nsa" link set "mh$$a" name mh0
ip -n "$nsb" link set "mh$$b" name mh0
ip -n "$nsa" addr add 10.77.0.1/24 dev mh0
ip -n "$nsb" addr add 10.77.0.2/24 dev mh0
ip -n "$nsa" link set mh0 up
ip -n "$nsb" link set mh0 up
# Their own host names.
for n in a b; do
    touch "$run/uts-$n"
    unshare --uts="$run/uts-$n" hostname "ishmem-host-$n"
done

# The ssh stand-in mpirun uses to start its daemon on host b.
cat > "$run/agent" <<AGENT
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done # ssh options (Hydra passes -x)
host="\$1"; shift
case "\$host" in
    10.77.0.1) n=a; ns=$nsa ;;
    10.77.0.2) n=b; ns=$nsb ;;
    *) echo "multihost agent: unknown host \$host" >&2; exit 1 ;;
esac
exec nsenter --net=/run/netns/\$ns --uts=$run/uts-\$n -- $run/enter /bin/sh -c "\$*"
AGENT
# Inside a host: a private mount namespace whose /sys shows the host's own
# network interfaces (UCX finds its devices there).
cat > "$run/enter" <<'ENTER'
#!/bin/sh
exec unshare --mount --propagation private /bin/sh -c 'mount -t sysfs sysfs /sys && exec "$@"' enter "$@"
ENTER
chmod +x "$run/enter"
chmod +x "$run/agent"

n=$((2 * per_host))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case "${MULTIHOST_TRANSPORT:-ucx}" in
    ucx) transport=(--mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=tcp,self) ;;
    ob1) transport=(--mca pml ob1 --mca btl tcp,self,vader --mca osc pt2pt --mca btl_tcp_if_include 10.77.0.0/24) ;;
    *) echo "multihost: MULTIHOST_TRANSPORT is ucx or ob1" >&2; exit 2 ;;
esac
mpirun_hosts() { # limit, program and args: per_host processes on each host
    local limit="$1"
    shift
    if [ "${MULTIHOST_MPI:-openmpi}" = mpich ]; then
        # MPICH's Hydra through the same agent, ch4:ucx over TCP on mh0.
        timeout "$limit" nsenter --net="/run/netns/$nsa" --uts="$run/uts-a" -- "$run/enter" \
            mpiexec.mpich -launcher ssh -launcher-exec "$run/agent" -iface mh0 \
            -hosts "10.77.0.1:$per_host,10.77.0.2:$per_host" -n "$n" \
            -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES mh0 -genv ISHMEM_SYMMETRIC_SIZE 64m \
            -genv ISHMEM_DEVICE "${MULTIHOST_DEVICE:-cpu}" -genv ISHMEM_PROXY_RMA "${MULTIHOST_RMA:-window}" "$@"
        return
    fi
    timeout "$limit" nsenter --net="/run/netns/$nsa" --uts="$run/uts-a" -- "$run/enter" \
        mpirun.openmpi --oversubscribe --mca plm_rsh_agent "$run/agent" \
        -H "10.77.0.1:$per_host,10.77.0.2:$per_host" -n "$n" \
        "${transport[@]}" --mca oob_tcp_if_include 10.77.0.0/24 -x ISHMEM_SYMMETRIC_SIZE=64m \
        -x ISHMEM_DEVICE="${MULTIHOST_DEVICE:-cpu}" -x ISHMEM_PROXY_RMA="${MULTIHOST_RMA:-window}" "$@"
}
if [ ${#user_prog[@]} -gt 0 ]; then
    mpirun_hosts 600 "${user_prog[@]}" < /dev/null
    exit
fi

prog="$target/c-tests/multihost"
mkdir -p "$target/c-tests"
cc -std=c11 -O2 -Wall -Wextra -Werror tests/c/multihost.c -I bindings/c/include -I tests/c \
    -L "$target" -lishmem -Wl,-rpath,"$target" -o "$prog"

set +e
if [ "${MULTIHOST_MPI:-openmpi}" = mpich ]; then
    out=$(mpirun_hosts 120 -genv TEST_PES_PER_HOST "$per_host" "$prog" 2>&1)
else
    out=$(mpirun_hosts 120 -x TEST_PES_PER_HOST="$per_host" "$prog" 2>&1)
fi
rc=$?
set -e
if [ $rc -ne 0 ] || ! grep -q "multihost ok: $n PEs on 2 hosts" <<<"$out"; then
    echo "$out"
    echo "multihost: FAILED (exit $rc)" >&2
    exit 1
fi
echo "$out" | grep -v "^\s*$" | tail -3
echo "multihost: ok ($n PEs on 2 hosts over TCP, ${MULTIHOST_MPI:-openmpi}, ${MULTIHOST_DEVICE:-cpu} heaps, RMA by ${MULTIHOST_RMA:-window})"
