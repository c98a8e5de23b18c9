#!/usr/bin/env bash
# run.sh - naglefix against musl libc (for Alpine): builds the library, the
# command and the integration and coalesce test programs with musl-gcc
# (Debian's musl-tools; tests/install-deps.sh installs it) into build/musl,
# then checks the library's exported names and runs the integration and
# coalesce suites and the commands' usage checks (tests/*/t_usage.sh)
# against that build. A musl-built library can only be
# preloaded into musl-built programs, so every program under test is built
# with musl-gcc too. The unit tests are not run here: they need Check,
# which is built for glibc.
#
# Checks that cannot apply to musl, or to a musl build on a glibc system
# (the library preloaded into /bin/sh), print "SKIP name: why" and count
# neither way. Prints each suite's results and ends with one line
# "N passed, M failed"; exit status 0 iff nothing failed. Works from any cwd.
# T=pattern runs only the checks whose name it matches, here and in the
# suites run (the build and the exports check always run, and say a
# failure; "musl build" and "musl exports" name them).
#
# run.sh --prepare makes only the build and runs no check: tests/run-all.sh
# runs it at nice 19 in the lane that judges no time, before this suite
# reaches its place in the timed lane. It may run beside the suite: the
# build holds build/musl/.lock (flock(1)) while make runs, so the suite's
# make waits for it and then finds all up to date. Exit status 0 iff the
# build was made.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
PREPARE=0
[[ ${1:-} == --prepare ]] && PREPARE=1
((PREPARE)) || only_selected # the build and the exports check always run; T picks what is said
MB=build/musl

# The fortified entry points, which musl lacks: the library's own fallback.
# A subshell with counts of its own, ending with them (a part).
own_tests() (
    local v rc log
    PASSED=0 FAILED=0 SELECTED=0
    local -a vars=("LD_PRELOAD=$TOP/$MB/libnaglefix.so" NAGLEFIX_MODE=coalesce
        "NAGLEFIX_CONF=$TOP/tests/coalesce/conf/flush-1s.conf")
    mkdir -p "$MB/tests/musl/logs"
    for v in read recv recvfrom read-overflow recv-overflow recvfrom-overflow; do
        selected "test_chk $v" || continue
        log="$MB/tests/musl/logs/test_chk-$v.log"
        timeout -k 5 40 env -i PATH="$PATH" "${vars[@]}" "$MB/tests/musl/test_chk" "$v" >"$log" 2>&1
        rc=$?
        if ((rc == 0)); then
            pass "test_chk $v"
        else
            fail "test_chk $v" "exit status $rc" "$log"
        fi
    done
    finish
)

# untimed_parts: the parts that judge no time, run beside integration,
# each as part() runs it, with counts of their own, left in $later.counts
# as "PASSED FAILED SELECTED".
untimed_parts() (
    PASSED=0 FAILED=0 SELECTED=0
    # the commands' usage checks (each in its command's suite: tests/usage.sh)
    for u in cli audit fix wire watch; do
        part "musl usage $u" env NAGLEFIX_BUILD="$MB" bash "tests/$u/t_usage.sh"
    done
    part "musl own" own_tests
    echo "$PASSED $FAILED $SELECTED" >"$later.counts"
)

if ! command -v musl-gcc >/dev/null 2>&1; then
    fail musl "musl-gcc not found: run tests/install-deps.sh (Debian's musl-tools)"
    finish
    exit
fi

# musl_build: everything under test, built with musl-gcc, niced (no check
# times the build, the suites beside it do time) and holding MB/.lock. -k:
# a program that does not build fails its own checks; the rest still run.
targets=("$MB/libnaglefix.so" "$MB/naglefix")
for f in tests/integration/test_*.c; do
    targets+=("$MB/tests/$(basename "$f" .c)")
done
for f in tests/coalesce/test_*.c; do
    targets+=("$MB/tests/coalesce/$(basename "$f" .c)")
done
targets+=("$MB/tests/musl/test_chk" "$MB/tests/static_client")
# The kernel's own headers (linux/, asm/, asm-generic/: the packet side's
# AF_PACKET ring, BPF filter and sock_diag), which musl-gcc's include path
# lacks (Alpine ships them apart, as linux-headers): the system's, by
# links in a directory of their own, so no glibc header is reached. A link
# already there is left (a --prepare beside this run may be compiling).
KH=$MB/kernel-headers
mkdir -p "$KH"
for d in linux asm-generic "$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/asm"; do
    [[ -d /usr/include/$d && $(readlink "$KH/${d##*/}") != "/usr/include/$d" ]] &&
        ln -sfn "/usr/include/$d" "$KH/${d##*/}"
done
musl_build() {
    {
        flock 9 && nice -n 19 make -s -k -j"$(nproc 2>/dev/null || echo 2)" B="$MB" CC=musl-gcc \
            CPPFLAGS="-isystem $KH" "${targets[@]}"
    } 9>"$MB/.lock"
}
echo "== musl build: make B=$MB CC=musl-gcc CPPFLAGS=-isystem $KH"
if ((PREPARE)); then
    start=$EPOCHREALTIME
    musl_build
    rc=$?
    echo "musl --prepare: make exited $rc in $(elapsed "$start") s"
    exit "$rc"
fi
if musl_build; then
    pass "musl build"
else
    fail "musl build" "see the errors above"
fi

if [[ -e $MB/libnaglefix.so ]]; then
    # the library's objects: every folder of obj/ but the command's and the packet side's
    mapfile -t libobjs < <(find "$MB"/obj -name '*.o' ! -path '*/obj/cli/*' ! -path '*/obj/wire/*' | sort)
    if CC=musl-gcc T='' tests/check-exports.sh "$MB/libnaglefix.so" src/naglefix.map \
        src/core/nf_hook_list.h "${libobjs[@]}"; then
        pass "musl exports"
    else
        fail "musl exports" "the musl library's exports, src/naglefix.map and src/core/nf_hook_list.h differ"
    fi
    # The parts that judge no time run beside integration (a timed check
    # runs alone: tests/README.md), their output held in a file and printed
    # whole after integration's; coalesce, timed too, after both.
    later="$MB/tests/musl/later"
    mkdir -p "$MB/tests/musl"
    rm -f "$later.counts"
    untimed_parts >"$later.out" 2>&1 &
    later_pid=$!
    trap 'kill "$later_pid" 2>/dev/null' EXIT
    part "musl integration" env NAGLEFIX_BUILD="$MB" tests/integration/run.sh
    wait "$later_pid"
    trap - EXIT
    cat "$later.out"
    read -r p f s <"$later.counts" 2>/dev/null || { p=0 f=1 s=1; echo "FAIL musl: the untimed parts left no counts"; }
    PASSED=$((PASSED + p)) FAILED=$((FAILED + f)) SELECTED=$((SELECTED + s))
    part "musl coalesce" env NAGLEFIX_BUILD="$MB" tests/coalesce/run.sh
fi

finish
