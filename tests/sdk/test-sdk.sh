#!/usr/bin/env bash
# SDK test: install into a temporary prefix, move the prefix (relocatable),
# then from a clean environment load it with Lmod and with Environment
# Modules (Tcl), build C and C++ programs with pkg-config and with CMake,
# shared and static, run them with the installed ishmrun on 2 PEs, and check
# ishmem-info. Needs: lmod (Debian package), cmake, pkg-config, c++, tclsh,
# and an extracted environment-modules package in $TEST_TCL_MODULECMD's
# place (Debian's lmod and environment-modules packages conflict, so the
# suite runs Tcl modules from a copy unpacked with dpkg -x; see run-all.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "test-sdk: FAIL: $*" >&2; exit 1; }
for tool in cmake pkg-config c++ tclsh gfortran; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (tests/run-all.sh installs it)"
done
[ -f /usr/share/lmod/lmod/init/bash ] || fail "Lmod is not installed (apt-get install lmod)"
modulecmd_tcl="${TEST_TCL_MODULECMD:-}"
[ -f "$modulecmd_tcl" ] || fail "TEST_TCL_MODULECMD does not name Environment Modules' modulecmd.tcl"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The CUDA device library: TEST_CUDA_DEVICE_LIB (built before, as CI does
# once per run), else built here when NVCC names a compiler.
"$root/packaging/install.sh" --prefix "$tmp/staging" ${TEST_CUDA_DEVICE_LIB:+--cuda-device-lib "$TEST_CUDA_DEVICE_LIB"} \
    > "$tmp/install.log"
# It says what it does, and what it built and skipped.
for want in "install.sh: building the library and tools" "installed ishmem-rs" "  built:" "MPI proxy: lib/ishmem/libishmem_proxy_oshmpi-"; do
    grep -qF "$want" "$tmp/install.log" || { cat "$tmp/install.log"; fail "install.sh printed no '$want'"; }
done
# Stripped by default: no static symbol table or debug info in the shared
# library and the tools (the dynamic symbols stay).
# (Output to a variable first: with pipefail, grep -q ending a pipe early
# makes the pipe fail.)
for f in "$tmp"/staging/lib/libishmem.so.*.*.* "$tmp/staging/bin/ishmrun"; do
    sections="$(readelf -S -W "$f")"
    grep -qE ' \.(symtab|debug_info) ' <<< "$sections" && fail "$f is not stripped"
done
syms="$(readelf --dyn-syms -W "$tmp"/staging/lib/libishmem.so.*.*.*)"
grep -q ' GLOBAL DEFAULT .* shmem_putmem$' <<< "$syms" || fail "stripping removed the API"
mv "$tmp/staging" "$tmp/moved"   # relocatable: nothing may point at the old path
P="$tmp/moved"
# The later installs (DESTDIR, the tarball) take the OpenCL device library
# this one built (install.sh --opencl-device-lib) instead of building it
# again: 20-45 s each on the CI machine.
ocl_lib=()
[ -f "$P/lib/ishmem/ishmem_device.spv" ] && ocl_lib=(--opencl-device-lib "$P/lib/ishmem")
# Relocatable: only the module files name the install prefix, as the
# fallback for a copy outside the prefix (they find the prefix from their
# own location first).
grep -rq --exclude-dir=modulefiles "$tmp/staging" "$P" && fail "the installed prefix mentions its original path"
[ -f "$P/lib/ishmem/ishmem_device.spv" ] && [ -f "$P/include/ishmem_device.h" ] || fail "the device library is not installed"
cp "$root/packaging/examples/hello_ring.c" "$root/tests/c/profiling.c" "$tmp/"
cp "$root/bindings/fortran/examples/heat.f90" "$root/bindings/cxx/examples/intel_style.cpp" "$tmp/"

# Manual pages: the pages, and a link for every routine name.
[ -f "$P/share/man/man3/shmem_put.3" ] && [ -L "$P/share/man/man3/shmem_ctx_longdouble_put.3" ] \
    && [ -f "$P/share/man/man1/ishmrun.1" ] || fail "the manual pages are not installed"
[ "$(find "$P/share/man" -xtype l | wc -l)" = 0 ] || fail "dangling manual page links: $(find "$P/share/man" -xtype l | head -3)"
# Whether man finds the system's pages without a MANPATH (then it must still
# find them with the module loaded).
sysman="$(env -i PATH=/usr/bin:/bin man -w man 2>/dev/null || true)"

# A clean environment: no cargo, no target dir, nothing of ours on any path.
clean() { env -i HOME="$tmp" PATH=/usr/bin:/bin TERM=dumb bash --noprofile --norc -c "set -euo pipefail; $1"; }

check_env='test "$ISHMEM_ROOT" = '"$P"' || { echo "ISHMEM_ROOT=$ISHMEM_ROOT"; exit 1; }
    test "$(command -v ishmrun)" = '"$P"'/bin/ishmrun
    echo "$LD_LIBRARY_PATH" | grep -q '"$P"'/lib
    echo "$CMAKE_PREFIX_PATH" | grep -q '"$P"'
    case ":$MANPATH:" in *:'"$P"'/share/man:*) ;; *) echo "MANPATH=$MANPATH"; exit 1 ;; esac
    if command -v man >/dev/null; then
        # every routine name has a page (a link to the page of its family); ishmrun, oshrun, oshfort too
        test "$(man -w shmem_int_put)" = '"$P"'/share/man/man3/shmem_put.3
        test "$(man -w ishmemx_ibput)" = '"$P"'/share/man/man3/ishmemx_ibput.3
        for p in ishmrun oshrun ishmem-info oshfort ishmem shmem_team_split_strided; do man -w "$p" | grep -q '"$P"'/share/man/; done
        page="$(man -P cat shmem_int_put 2>/dev/null)"; grep -q "shmem_TYPENAME_put" <<< "$page"
        # the system pages are still found
        if [ -n "'"$sysman"'" ]; then man -w man > /dev/null; fi
    fi'
build_run='cd '"$tmp"' && rm -rf b && mkdir b && cd b
    cc -std=c11 ../hello_ring.c $(pkg-config --cflags --libs ishmem) -o pc_shared
    cc -std=c11 ../hello_ring.c $(pkg-config --cflags --libs ishmem-static) -o pc_static
    c++ '"$root"'/tests/sdk/hello.cpp $(pkg-config --cflags --libs ishmem) -o pc_cxx
    # (not "! cmd": set -e ignores a negated command)
    if ldd pc_static | grep libishmem; then exit 1; fi
    ldd pc_shared | grep -q "libishmem.so.0 => '"$P"'/lib/"
    cmake -S '"$root"'/tests/sdk/cmake -B cm -DSRC_DIR='"$tmp"' >/dev/null
    cmake --build cm >/dev/null
    cmake -S '"$root"'/tests/sdk/cmake-intel -B ci -DSRC_DIR='"$tmp"' >/dev/null
    cmake --build ci >/dev/null
    out="$(ishmrun -n 2 ci/hello_intel)"; grep -q "sum = 2001" <<< "$out"
    for p in ./pc_shared ./pc_static cm/hello_shared cm/hello_static; do
        out="$(ishmrun -n 2 "$p")"; echo "$out" | grep -q "sum = 2001" || { echo "$p: $out"; exit 1; }
    done
    for p in ./pc_cxx cm/hello_cxx; do ishmrun -n 2 "$p" | grep -q "cxx sum 3"; done
    # the profiling interface, static: the program'"'"'s shmem_ wrappers replace
    # the weak library ones and call the pshmem_ names
    cc -std=c11 ../profiling.c $(pkg-config --cflags --libs ishmem-static) -o prof_static
    ishmrun -n 2 ./prof_static | grep -q "profiling ok"
    c++ -std=c++17 ../intel_style.cpp $(pkg-config --cflags --libs ishmem) -o intel_style
    ishmrun -n 2 ./intel_style | grep -q "intel-style C++ ok"
    gfortran ../heat.f90 $(pkg-config --cflags --libs ishmem-fortran) -o fheat
    ishmrun -n 2 ./fheat | grep -q "fortran heat ok"
    ishmrun -n 2 cm/fheat | grep -q "fortran heat ok"
    # the compiler wrappers and oshrun, as SOS and Open MPI users type them:
    # ours after module load, with an rpath (no LD_LIBRARY_PATH needed)
    test "$(command -v oshcc)" = '"$P"'/bin/oshcc
    out="$(oshcc --showme:link)"; grep -q -- "-Wl,-rpath,'"$P"'/lib" <<< "$out"
    out="$(oshcc -showme -c x.c)"; if grep -q -- -lishmem <<< "$out"; then exit 1; fi
    oshcc -std=c11 ../hello_ring.c -o w_c
    oshcc -std=c11 -c ../hello_ring.c -o w_c.o && oshcc w_c.o -o w_c2
    oshc++ '"$root"'/tests/sdk/hello.cpp -o w_cxx && oshcxx '"$root"'/tests/sdk/hello.cpp -o w_cxx2
    oshfort ../heat.f90 -o w_f
    oshfort -fcray-pointer '"$root"'/bindings/fortran/examples/classic.f -o w_classic
    for p in ./w_c ./w_c2; do out="$(env -u LD_LIBRARY_PATH oshrun -n 2 "$p")"; grep -q "sum = 2001" <<< "$out"; done
    for p in ./w_cxx ./w_cxx2; do out="$(env -u LD_LIBRARY_PATH oshrun -n 2 "$p")"; grep -q "cxx sum 3" <<< "$out"; done
    out="$(env -u LD_LIBRARY_PATH oshrun -n 2 ./w_f)"; grep -q "fortran heat ok" <<< "$out"
    out="$(env -u LD_LIBRARY_PATH oshrun -n 3 ./w_classic)"; grep -q "fortran classic ok" <<< "$out"'

echo "== Lmod"
clean ". /usr/share/lmod/lmod/init/bash; module use $P/share/modulefiles/lmod; module load ishmem; $check_env; $build_run" \
    || fail "Lmod: module load, build or run"
if [ -n "${NVCC:-}" ]; then
    # The CUDA device library and the nvcc pkg-config file (no GPU here:
    # the -L names the CUDA runtime of a PyPI nvcc, which a CUDA install's
    # nvcc finds itself; the program is built, and its run must fail at once naming what it
    # tried; tests/cuda/run.sh runs CUDA programs on a GPU machine).
    echo "== CUDA (build with nvcc; run without a GPU fails fast)"
    [ -f "$P/lib/libishmem_device.a" ] && [ -f "$P/lib/pkgconfig/ishmem-cuda.pc" ] || fail "the CUDA device library is not installed"
    cp "$root/packaging/examples/cuda_ring.cu" "$tmp/"
    clean ". /usr/share/lmod/lmod/init/bash; module use $P/share/modulefiles/lmod; module load ishmem; cd $tmp
        $NVCC -rdc=true -arch=sm_90 cuda_ring.cu \$(pkg-config --cflags --libs ishmem-cuda) -L$(dirname "$NVCC")/../lib -o cuda_ring
        if out=\$(timeout 20 ishmrun -n 2 ./cuda_ring 2>&1); then echo \"\$out\"; exit 1; fi
        echo \"\$out\" | grep -q 'ishmem_init: cannot load the CUDA driver: tried libcuda.so.1' || { echo \"\$out\"; exit 1; }" \
        || fail "CUDA: build with pkg-config ishmem-cuda, or the no-driver message"
fi
echo "== site MODULEPATH (Lmod): linked module file, family(shmem)"
ver="$(basename "$(ls "$P"/share/modulefiles/lmod/ishmem/*.lua)" .lua)"
mkdir -p "$tmp/site/lmod/ishmem" "$tmp/site/lmod/othershmem" "$tmp/site/tcl/ishmem"
ln -s "$P/share/modulefiles/lmod/ishmem/$ver.lua" "$tmp/site/lmod/ishmem/$ver.lua"
printf 'family("shmem")\nsetenv("OTHER_SHMEM", "1")\n' > "$tmp/site/lmod/othershmem/1.0.lua"
ln -s "$P/share/modulefiles/tcl/ishmem/$ver" "$tmp/site/tcl/ishmem/$ver"
site_env="$check_env"'
    echo "$CPATH" | grep -q '"$P"'/include && echo "$LIBRARY_PATH" | grep -q '"$P"'/lib
    test "$(command -v oshcc)" = '"$P"'/bin/oshcc'
clean ". /usr/share/lmod/lmod/init/bash; export MODULEPATH=$tmp/site/lmod; module load ishmem; $site_env
    out=\"\$(module help ishmem 2>&1)\"; grep -q oshcc <<< \"\$out\"
    module load othershmem 2>/dev/null; out=\"\$(module -t list 2>&1)\"
    grep -q '^othershmem' <<< \"\$out\" && ! grep -q '^ishmem' <<< \"\$out\"" \
    || fail "Lmod: a module file linked into a site MODULEPATH, or family(shmem)"
echo "== Environment Modules (Tcl)"
clean "export MODULEPATH=$P/share/modulefiles/tcl; eval \"\$(tclsh $modulecmd_tcl bash load ishmem)\"; $check_env; $build_run" \
    || fail "Tcl modules: module load, build or run"
clean "export MODULEPATH=$tmp/site/tcl; eval \"\$(tclsh $modulecmd_tcl bash load ishmem)\"; $site_env" \
    || fail "Tcl modules: a module file linked into a site MODULEPATH"
echo "== install.sh: relative prefix, DESTDIR, --libdir lib64, --debug, skipped parts"
(cd "$tmp" && NVCC= DESTDIR="$tmp/dest" "$root/packaging/install.sh" --prefix opt/ishmem --libdir lib64 --debug "${ocl_lib[@]}" > "$tmp/install2.log") \
    || { cat "$tmp/install2.log"; fail "install.sh with DESTDIR and --libdir"; }
D="$tmp/dest$tmp/opt/ishmem"
[ -f "$D/lib64/libishmem.so.0" ] && [ ! -e "$D/lib" ] && [ ! -e "$tmp/opt" ] || fail "DESTDIR/--libdir layout: $(ls "$tmp/dest$tmp/opt/ishmem")"
grep -q 'libdir=${prefix}/lib64' "$D/lib64/pkgconfig/ishmem.pc" || fail "the pkg-config file does not name lib64"
grep -q "$tmp/opt/ishmem" "$D/share/modulefiles/lmod/ishmem/"*.lua || fail "the module file's fallback is not the prefix"
sections="$(readelf -S -W "$D/lib64/libishmem.so.0")"
grep -q ' \.symtab ' <<< "$sections" || fail "--debug stripped the library"
grep -q "CUDA device library: nvcc not found" "$tmp/install2.log" || { cat "$tmp/install2.log"; fail "no skipped summary"; }
if [ ${#ocl_lib[@]} -gt 0 ]; then
    cmp -s "$P/lib/ishmem/ishmem_device.spv" "$D/lib64/ishmem/ishmem_device.spv" &&
        grep -qF "OpenCL device library: lib64/ishmem/ishmem_device.spv (from $P/lib/ishmem)" "$tmp/install2.log" ||
        { cat "$tmp/install2.log"; fail "install.sh --opencl-device-lib did not install the library given"; }
fi
clean "export PKG_CONFIG_PATH=$D/lib64/pkgconfig; cd $tmp && cc -std=c11 hello_ring.c \$(pkg-config --cflags --libs ishmem) -Wl,-rpath,$D/lib64 -o lib64_hello
    out=\"\$($D/bin/ishmrun -n 2 ./lib64_hello)\"; grep -q 'sum = 2001' <<< \"\$out\"
    $D/bin/oshcc hello_ring.c -o lib64_w; out=\"\$($D/bin/oshrun -n 2 ./lib64_w)\"; grep -q 'sum = 2001' <<< \"\$out\"" \
    || fail "building and running against a lib64 installation"
echo "== ishmem-info"
clean ". /usr/share/lmod/lmod/init/bash; module use $P/share/modulefiles/lmod; module load ishmem
    ishmem-info | grep -q 'ISHMEM_SYMMETRIC_SIZE=512m \[default\]'
    ISHMEM_SYMMETRIC_SIZE=1g ishmem-info --json > $tmp/info.json
    python3 -c 'import json,sys; d=json.load(open(\"$tmp/info.json\")); v={e[\"name\"]: e for e in d[\"environment\"]}; assert v[\"ISHMEM_SYMMETRIC_SIZE\"][\"value\"]==\"1g\" and v[\"ISHMEM_SYMMETRIC_SIZE\"][\"source\"]==\"environment\", v; assert \"ISHMEM_DEBUG\" in v; cpu=[c for c in d[\"components\"] if c[\"name\"]==\"cpu\"][0]; assert not cpu[\"available\"] and \"device kernels cannot run here\" in cpu[\"detail\"], cpu; assert d[\"prefix\"]==\"$P\", d[\"prefix\"]'
    ishmem-info --version | grep -q '^ishmem-info (ishmem-rs) '
    # With an OpenCL CPU runtime (the suite's), the CPU device says yes.
    if [ -n \"${TEST_OPENCL_VENV:-}\" ]; then
        OCL_ICD_FILENAMES=${TEST_OPENCL_VENV:-}/lib/libintelocl.so LD_LIBRARY_PATH=${TEST_OPENCL_VENV:-}/lib:\$LD_LIBRARY_PATH \\
            ishmem-info > $tmp/info.txt
        grep -q '^  device    cpu         yes' $tmp/info.txt
    fi
    if ISHMEM_SYMMETRIC_SIZE=lots ishmem-info 2> $tmp/err; then exit 1; fi
    grep -q 'ISHMEM_SYMMETRIC_SIZE=\"lots\" is not valid' $tmp/err
    if ISHMEM_SYMMETRIC_SIZE=lots ishmrun -n 2 ./no-such 2>/dev/null; then exit 1; fi" \
    || fail "ishmem-info"

echo "== MPI proxy (installed plugins, all peers remote)"
if command -v mpicc.openmpi >/dev/null || command -v mpicc.mpich >/dev/null; then
    clean ". /usr/share/lmod/lmod/init/bash; module use $P/share/modulefiles/lmod; module load ishmem
        ishmem-info --json > $tmp/info2.json
        python3 -c 'import json; d=json.load(open(\"$tmp/info2.json\")); c=[c for c in d[\"components\"] if c[\"name\"]==\"mpi\"][0]; assert c[\"available\"] and \"$P/lib/ishmem/\" in c[\"detail\"], c'
        cd $tmp/b
        if command -v mpirun.openmpi >/dev/null; then
            for p in ./pc_shared ./pc_static; do
                out=\"\$(mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 -x ISHMEM_ENABLE_SHM=0 -x ISHMEM_ROOT \$p)\"
                echo \"\$out\" | grep -q 'sum = 2001' || { echo \"openmpi \$p: \$out\"; exit 1; }
            done
        fi
        if command -v mpiexec.mpich >/dev/null; then
            out=\"\$(mpiexec.mpich -n 2 -genv ISHMEM_ENABLE_SHM 0 ./pc_shared)\"
            echo \"\$out\" | grep -q 'sum = 2001' || { echo \"mpich pc_shared: \$out\"; exit 1; }
        fi" \
        || fail "MPI proxy from the installed prefix"
else
    echo "test-sdk: no MPI here: the installed MPI proxy was not tested" >&2
fi

echo "== release tarball"
# With the CUDA device library of TEST_CUDA_DEVICE_LIB when given (built
# once per CI run), else without it (NVCC empty: building it again for
# every architecture would add many minutes of nvcc to every run).
tarball="$(NVCC= CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" "$root/packaging/release.sh" \
    ${TEST_CUDA_DEVICE_LIB:+--cuda-device-lib "$TEST_CUDA_DEVICE_LIB"} "${ocl_lib[@]}")"
tar -tzf "$tarball" > "$tmp/list"
grep -q "/lib/libishmem.so.0.1.0$" "$tmp/list" || fail "tarball lacks the library"
grep -q "/LICENSE$" "$tmp/list" || fail "tarball lacks LICENSE"
if [ ${#ocl_lib[@]} -gt 0 ]; then
    grep -q "/lib/ishmem/ishmem_device.spv$" "$tmp/list" || fail "tarball lacks the OpenCL device library"
fi
grep -q "/share/doc/ishmem/architecture.md$" "$tmp/list" || fail "tarball lacks the docs"
if [ -n "${TEST_CUDA_DEVICE_LIB:-}" ]; then
    grep -q "/lib/libishmem_device.a$" "$tmp/list" || fail "tarball lacks the CUDA device library"
fi
echo "test-sdk: ok"
