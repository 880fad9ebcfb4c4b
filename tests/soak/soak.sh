#!/usr/bin/env bash
# Soak test (not in CI): runs the multi-PE C programs under ishmrun again and
# again for SECONDS, on 1..4 PEs, injecting a random fault into about half
# of the jobs (SIGKILL to one PE, SIGSEGV to one PE, SIGTERM or SIGKILL to
# ishmrun, SIGSTOP then SIGKILL to a PE), and reports:
#   jobs, faults injected, hangs (a job not ended 60 s after its fault, or
#   a clean job not done in 120 s), leaks (files named *ishm* left in
#   /dev/shm or /tmp, or PE processes left running), mismatches (a clean job
#   that failed, or a faulted one that exited 0).
#
#   tests/soak/soak.sh [SECONDS, default 3600]
#
# The programs are the C lines of tests/programs.list tagged soak. Needs
# libishmem.so and ishmrun (TEST_LIBDIR, TEST_BINDIR; default
# target/debug) and cc. Exit status 0 when hangs, leaks and mismatches are
# all zero.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
secs="${1:-3600}"
lib="${TEST_LIBDIR:-$root/target/debug}"
bin="${TEST_BINDIR:-$root/target/debug}"
[ -e "$lib/libishmem.so.0" ] || ln -sf libishmem.so "$lib/libishmem.so.0"
work="$(mktemp -d /var/tmp/soak.XXXXXX)"
trap 'rm -rf "$work"' EXIT
progs=($(awk -F'|' '$1 !~ /^#/ && $6 ~ /(^| )soak( |$)/ && $2 ~ /^ *c:tests\/c\// {
    sub(/^ *c:tests\/c\//, "", $2); sub(/\.c *$/, "", $2); print $2 }' "$root/tests/programs.list"))
[ ${#progs[@]} -gt 0 ] || { echo "soak: no C program of tests/programs.list is tagged soak"; exit 1; }
for p in "${progs[@]}"; do
    cc -std=c11 -O2 -pthread "$root/tests/c/$p.c" -I "$root/bindings/c/include" -I "$root/tests/c" \
        -L "$lib" -lishmem -lm -Wl,-rpath,"$lib" -o "$work/$p" || { echo "soak: cannot build $p"; exit 1; }
done
# A clean run first: a soak of programs that cannot start measures nothing.
"$bin/ishmrun" -n 2 "$work/rma_types" >/dev/null 2>"$work/first" || { cat "$work/first"; echo "soak: the programs do not run"; exit 1; }
leftovers() { { ls /dev/shm /tmp 2>/dev/null | grep "^ishm"; pgrep -f "$work/" ; } | sort | tr '\n' ' '; }
before="$(leftovers)"
jobs=0 faults=0 hangs=0 leaks=0 mismatches=0
end=$((SECONDS + secs))
while [ $SECONDS -lt $end ]; do
    p="${progs[RANDOM % ${#progs[@]}]}"
    n=$((1 + RANDOM % 4))
    fault=$((RANDOM % 10))   # 0-4: none; 5-9: one of five faults
    log="$work/log"
    "$bin/ishmrun" -v -n "$n" "$work/$p" >"$log" 2>&1 &
    launcher=$!
    jobs=$((jobs + 1))
    injected=""
    if [ $fault -ge 5 ]; then
        sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
        pes=($(pgrep -P "$launcher"))
        if [ ${#pes[@]} -gt 0 ]; then
            victim="${pes[RANDOM % ${#pes[@]}]}"
            case $fault in
                5) kill -KILL "$victim" 2>/dev/null && injected="SIGKILL to a PE" ;;
                6) kill -SEGV "$victim" 2>/dev/null && injected="SIGSEGV to a PE" ;;
                7) kill -TERM "$launcher" 2>/dev/null && injected="SIGTERM to ishmrun" ;;
                8) kill -KILL "$launcher" 2>/dev/null && injected="SIGKILL to ishmrun" ;;
                9) kill -STOP "$victim" 2>/dev/null && sleep 0.2 && kill -KILL "$victim" 2>/dev/null &&
                    injected="SIGSTOP then SIGKILL to a PE" ;;
            esac
        fi
    fi
    [ -n "$injected" ] && faults=$((faults + 1))
    limit=$([ -n "$injected" ] && echo 60 || echo 120)
    waited=0
    while kill -0 "$launcher" 2>/dev/null && [ $waited -lt $((limit * 10)) ]; do sleep 0.1; waited=$((waited + 1)); done
    if kill -0 "$launcher" 2>/dev/null; then
        hangs=$((hangs + 1)); echo "HANG: $p on $n PEs (${injected:-no fault})"; tail -5 "$log"
        kill -KILL "$launcher" 2>/dev/null
    fi
    wait "$launcher" 2>/dev/null; rc=$?
    # ishmrun exited (or was killed): its PEs die with it (PDEATHSIG) at once.
    sleep 0.05
    if [ -z "$injected" ] && [ $rc -ne 0 ]; then
        mismatches=$((mismatches + 1)); echo "MISMATCH: $p on $n PEs failed (exit $rc) without a fault"; tail -5 "$log"
    fi
    if [ -n "$injected" ] && [ $rc -eq 0 ] && ! grep -q "exited with status 0" "$log"; then
        # The fault may land after the job finished: only a job that
        # reported nothing and exited 0 while a PE was killed is wrong.
        if grep -q "killed by signal" "$log"; then
            mismatches=$((mismatches + 1)); echo "MISMATCH: $p on $n PEs exited 0 after $injected"; tail -5 "$log"
        fi
    fi
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ "$(leftovers)" = "$before" ] && break; sleep 0.2; done
    now="$(leftovers)"
    if [ "$now" != "$before" ]; then
        leaks=$((leaks + 1)); echo "LEAK after $p on $n PEs (${injected:-no fault}): $now"
        pkill -KILL -f "$work/" 2>/dev/null; before="$(leftovers)"
    fi
done
echo "soak: $secs s: jobs $jobs, faults injected $faults, hangs $hangs, leaks $leaks, mismatches $mismatches"
[ $hangs = 0 ] && [ $leaks = 0 ] && [ $mismatches = 0 ]
