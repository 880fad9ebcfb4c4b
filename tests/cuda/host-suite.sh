#!/usr/bin/env bash
# The host C/C++ programs of tests/programs.list (the lines whose devices
# include the device) with every PE's symmetric heap in GPU memory
# (ISHMEM_DEVICE=cuda, default): host RMA, AMOs, signals, waits, teams,
# collectives, locks and contexts on a GPU heap, and the expected failures.
# PEs take GPU local_rank % visible GPUs, so on a one-GPU machine the PEs
# share it. With ISHMEM_DEVICE=opaque (any machine) the heaps are shared
# memory the programs cannot touch either; ze: Intel GPUs (tests/ze/run.sh).
# For machines without Rust: CI runs the same lines through the Rust
# harness (tests/tests/programs.rs). TEST_LAUNCHER=openmpi starts the PEs
# with Open MPI's mpirun (MPIRUN, default mpirun.openmpi, else mpirun)
# instead of ishmrun, passing every ISHMEM_* variable: with
# ISHMEM_DEVICE=cpu ISHMEM_ENABLE_SHM=0 that is the suite through the MPI
# proxy on a machine without Rust (the GPU machines' Open MPI).
#
#   tests/cuda/host-suite.sh [OUTDIR] [PE counts, default "2"]
#
# TEST_ONLY="name ..." runs only those lines.
#
# Each line runs at the counts it lists among the given ones (else at its
# smallest count). Needs libishmem.so and ishmrun (TEST_LIBDIR,
# TEST_BINDIR; default target/release), cc and c++. An ordinary program
# must exit 0 (with its expected output) within HOST_SUITE_TIMEOUT seconds
# (120); an expected failure must end with its status and messages within
# 10 s.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/target/cuda-host-suite}"
counts="${2:-2}"
lib="${TEST_LIBDIR:-$root/target/release}"
bin="${TEST_BINDIR:-$root/target/release}"
mkdir -p "$out"
[ -e "$lib/libishmem.so.0" ] || ln -sf libishmem.so "$lib/libishmem.so.0"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
inc="$root/bindings/c/include"
dev="${ISHMEM_DEVICE:-cuda}"
launcher="${TEST_LAUNCHER:-ishmrun}"
case "$launcher" in
    ishmrun) ;;
    openmpi) mpirun="${MPIRUN:-$(command -v mpirun.openmpi || command -v mpirun)}" ;;
    *) echo "host-suite: TEST_LAUNCHER=$launcher: expected ishmrun or openmpi" >&2; exit 2 ;;
esac
tmo="${HOST_SUITE_TIMEOUT:-120}" # seconds per program
failed=0 passed=0
trim() { local s="$1"; s="${s#"${s%%[![:space:]]*}"}"; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
has() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
# "1-4 7" -> "1 2 3 4 7"
expand() { local w; for w in $1; do case $w in *-*) seq "${w%-*}" "${w#*-}" ;; *) echo "$w" ;; esac; done | tr '\n' ' '; }
declare -A built
build() { # exe, source, compiler, std (once per run)
    [ -n "${built[$1]:-}" ] && return 0
    "$3" -std="$4" -O2 -Wall -Wextra -Werror -pthread -I "$inc" -I "$root/tests/c" "$2" \
        -L "$lib" -lishmem -lm -o "$out/$1" || { echo "FAIL: build $1"; failed=$((failed + 1)); return 1; }
    built[$1]=1
}
while IFS='|' read -r name prog pes launchers devices tags expect envs args; do
    name="$(trim "$name")"
    case "$name" in ""|\#*) continue ;; esac
    [ -z "${TEST_ONLY:-}" ] || has "$TEST_ONLY" "$name" || continue
    devices="$(trim "$devices")" launchers="$(trim "$launchers")"
    [ "$devices" = any ] || has "$devices" "$dev" || continue
    [ "$launchers" = any ] || has "$launchers" "$launcher" || continue
    # node: needs every PE's control segment on this node (tests/README.md)
    if has "$(trim "$tags")" node && [ "$launcher" != ishmrun ] && [ "${ISHMEM_ENABLE_SHM:-1}" = 0 ]; then
        continue
    fi
    prog="$(trim "$prog")"
    src="$root/${prog#*:}" exe="$(basename "${prog#*:}")"; exe="${exe%.*}"
    case "${prog%%:*}" in
        c) build "$exe" "$src" cc c11 || continue ;;
        cxx) exe="cxx_$exe"; build "$exe" "$src" c++ c++17 || continue ;;
        *) continue ;; # Fortran and Rust programs load and store the heap themselves: cpu only
    esac
    all="$(expand "$(trim "$pes")")" run_at=""
    for n in $counts; do has "$all" "$n" && run_at="$run_at $n"; done
    [ -n "$run_at" ] || run_at="${all%% *}"
    if [ "$launcher" != ishmrun ]; then # a lone PE reaches no peer through MPI
        run_at="$(for n in $run_at; do [ "$n" -gt 1 ] && echo "$n"; done | tr '\n' ' ')"
        [ -n "$(trim "$run_at")" ] || { has "$all" 2 && run_at=2; }
        [ -n "$(trim "$run_at")" ] || continue
    fi
    # expect: exit=N; out=TEXT; err=TEXT (see tests/programs.list)
    want_exit=0 outs=() errs=() nouts=() nerrs=() onces=()
    IFS=';' read -ra clauses <<<"$expect"
    for c in "${clauses[@]}"; do
        c="$(trim "$c")"
        case "$c" in
            exit=*) want_exit="${c#exit=}" ;; out=*) outs+=("${c#out=}") ;; err=*) errs+=("${c#err=}") ;;
            '!out='*) nouts+=("${c#!out=}") ;;
            '!err='*) nerrs+=("${c#!err=}") ;;
            once=*) onces+=("${c#once=}") ;;
        esac
    done
    read -ra envs_a <<<"$envs"
    read -ra args_a <<<"$args"
    for n in $run_at; do
        last=$((n - 1)) others="PE 0"; [ "$n" -gt 2 ] && others="PEs 0-$((n - 2))"
        sub() { local s="${1//\{n\}/$n}"; s="${s//\{last\}/$last}"; printf '%s' "${s//\{others\}/$others}"; }
        t0=$SECONDS
        limit=$tmo; [ "$want_exit" != 0 ] && limit=30
        if [ "$launcher" = ishmrun ]; then
            o="$(env ISHMEM_DEVICE="$dev" "${envs_a[@]}" "$bin/ishmrun" -n "$n" -t "$limit" "$out/$exe" "${args_a[@]}" 2>"$out/stderr")"
            rc=$?
        else
            xs=(-x LD_LIBRARY_PATH)
            for v in $( (env "${envs_a[@]}" ISHMEM_DEVICE="$dev" env) | grep -o '^ISHMEM_[A-Z0-9_]*' | sort -u); do xs+=(-x "$v"); done
            o="$(env ISHMEM_DEVICE="$dev" "${envs_a[@]}" timeout -k 5 "$limit" "$mpirun" --allow-run-as-root --oversubscribe \
                -n "$n" "${xs[@]}" "$out/$exe" "${args_a[@]}" 2>"$out/stderr" </dev/null)"
            rc=$?
        fi
        e="$(cat "$out/stderr")"
        why=""
        [ "$rc" = "$want_exit" ] || why="exit $rc, expected $want_exit"
        [ "$want_exit" != 0 ] && [ $((SECONDS - t0)) -ge 10 ] && why="took $((SECONDS - t0)) s (an expected failure must end within 10 s)"
        for s in "${outs[@]}"; do s="$(sub "$s")"; grep -qF -- "$s" <<<"$o" || why="${why:-no \"$s\" in stdout}"; done
        for s in "${errs[@]}"; do
            [ "$launcher" != ishmrun ] && [ "${s#ishmrun:}" != "$s" ] && continue
            s="$(sub "$s")"; grep -qF -- "$s" <<<"$e" || why="${why:-no \"$s\" in stderr}"
        done
        for s in "${nouts[@]}"; do s="$(sub "$s")"; grep -qF -- "$s" <<<"$o" && why="${why:-\"$s\" in stdout}"; done
        for s in "${nerrs[@]}"; do s="$(sub "$s")"; grep -qF -- "$s" <<<"$e" && why="${why:-\"$s\" in stderr}"; done
        for s in "${onces[@]}"; do
            k="$(grep -oF -- "$s" <<<"$e" | wc -l)"; [ "$k" = 1 ] || why="${why:-\"$s\" $k times in stderr, expected once}"
        done
        if [ -n "$why" ]; then
            printf '%s\n%s\n' "$o" "$e" | tail -20
            echo "FAIL: $name/$n on $dev heaps: $why"; failed=$((failed + 1))
        else
            echo "ok: $name/$n ($((SECONDS - t0)) s)"; passed=$((passed + 1))
        fi
    done
done <"$root/tests/programs.list"
# ISHMEM_DEVICE=cuda is honoured: with no GPU visible, init fails fast.
if [ "$dev" = cuda ]; then
    build errors "$root/tests/c/errors.c" cc c11
    if o="$(CUDA_VISIBLE_DEVICES= ISHMEM_DEVICE=cuda "$bin/ishmrun" -n 1 -t 60 "$out/errors" ok 2>&1)"; then
        echo "$o" | tail; echo "FAIL: ISHMEM_DEVICE=cuda with no visible GPU started"; failed=$((failed + 1))
    fi
    echo "no visible GPU: $(grep -m1 ishmem <<<"$o")"
fi
echo "host suite on $dev heaps under $launcher: $passed passed, $failed failed"
[ $failed = 0 ]
