#!/usr/bin/env bash
# run.sh - the tests again, under sanitizers and checkers (`make test-sanitize`):
#
#   asan-*   the unit tests (with LeakSanitizer), the integration tests
#            and the usage checks of every command (asan-usage-SUITE:
#            tests/SUITE/t_usage.sh, each command's --help and usage
#            errors, with LeakSanitizer: their naglefix is ours alone)
#            against build/asan/, built with -fsanitize=address,undefined
#            (gcc, -fno-sanitize-recover: any UB report aborts). An
#            uninstrumented program (sh, echo) gets the ASan runtime first
#            in LD_PRELOAD (NFTEST_PRELOAD), as ASan needs its malloc to
#            come before libc's.
#   tsan-*   the threaded tests against build/tsan/ (-fsanitize=thread): the
#            unit tests (the fd-table concurrency test among them),
#            test_integrity single/threads4/shared2 (the timer thread and 2
#            or 4 writers), test_handler write (a signal handler's send on
#            a held socket), tests/auto reader-thread, restore-race and
#            chatty (auto's lock-free list and TCP_NODELAY restore), and
#            the audit test's Python client, 8 threads, 8
#            connections, under audit and coalesce, with the TSan runtime
#            preloaded AFTER the library (first, its poll interceptor would
#            call the library's poll with TSan's interceptors switched off,
#            hiding the library's locks: false races). TSan rather than
#            helgrind: helgrind does not model C11 atomics, so it would
#            report the library's lock-free fd table and counters as races,
#            and it runs the same test many times slower.
#   *-scan   naglefix scan (reading, decoding and the detector on one
#            thread: src/cli/scan/scan_feed.c) under ASan and under TSan: every
#            capture of tests/wire/fixtures, every public one (nobody here
#            wrote them: tests/wire/public.sh), and a capture the model of two
#            ends writes (4,000 connections, 800 at once, 10% of them
#            stalling), whose stall count scan must find exactly.
#   leak-*   tests/sanitize/leak_loop.c (many connections, dup, shutdown,
#            fork) under valgrind --leak-check=full with the library
#            preloaded (the tree's own build/, -O2, as shipped; with
#            SANITIZE_CC, build/valgrind), per mode: no invalid
#            access, nothing definitely or indirectly lost, and the heap in
#            use at exit the same after 4 times the rounds.
#   canary-* proof that each check above fails when it should: a scratch
#            copy of the sources (build/sanitize/canary/) gets a heap
#            overflow, a signed overflow, data races (fd table, coalesce
#            send), a lost malloc and a growing list injected (each behind
#            its own -D), and each check must report it. Each canary's
#            build starts from the objects of the same flags' build above,
#            so only the injected files and what links them are rebuilt.
#
# A check passes iff its command exits 0 and the sanitizers wrote no report
# (they write to build/sanitize/reports[-PART]/CHECK/, so reports from peers and
# children whose exit status nobody looks at count too; the outputs and the
# integration tests' logs are searched for reports as well). Prints "PASS name"
# or "FAIL name: why" with the report's head, and ends with "N passed, M
# failed"; exit status 0 iff nothing failed. Logs: build/sanitize/logs/
# (logs-timed/, logs-plain/ for a part).
# T=pattern runs only the checks whose name it matches (tests/lib.sh), and
# builds only what they need; the suites they run (asan-unit,
# asan-integration...) run whole.
#
# run.sh --prepare makes only the builds (every one, T or not: build/asan,
# build/tsan, the leak check's, the canaries' copy and builds) and runs no
# check: tests/run-all.sh runs it at nice 19 in the lane that judges no
# time, before this suite reaches its place in the timed lane. It may run
# beside the suite: each build holds a lock of its own
# (build/sanitize/locks/NAME.lock, flock(1)) while make runs, so the
# suite's make of the same directory waits for it and then finds all up
# to date. Its logs: build/sanitize/prepare/; exit status 0 iff every
# build was made. Each build's and each check's time: LOGS/times.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P)
cd "$TOP" || exit 2

CC=${SANITIZE_CC:-gcc} # its runtimes are the ones preloaded
# -g1: line tables only (a report's file:line and its inlined frames),
# not the descriptions of types and variables no report prints
ASAN_CFLAGS="-O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
TSAN_CFLAGS="-O1 -g1 -fsanitize=thread -fno-omit-frame-pointer"
WFLAGS="-std=gnu11 -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -D_GNU_SOURCE"
WORK="$TOP/build/sanitize"
LIMIT=${SANITIZE_TIMEOUT:-300} # seconds any one check may take

# What starts a sanitizer's report, wherever it was written.
MARKERS='runtime error:|ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|WARNING: ThreadSanitizer'

# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
# shellcheck source=../wire/public.sh
. "$HERE/../wire/public.sh"
ECHO_PID=""
trap '[[ -n $ECHO_PID ]] && kill "$ECHO_PID" 2>/dev/null' EXIT
trap 'exit 130' INT TERM

PREPARE=0
[[ ${1:-} == --prepare ]] && PREPARE=1

# SANITIZE_PART=timed runs only the checks that judge a time (TIMED: the
# integration tests' rounds under ASan, the threaded split clients' under
# TSan, auto's median round trips against 5 ms under TSan, a signal
# handler's write held under flush=1s), SANITIZE_PART=plain only the
# others; tests/run-all.sh runs the two in different lanes. Unset or
# empty: all.
SANITIZE_PART=${SANITIZE_PART:-}
# each part its own logs and reports: the two may run at once, and each
# empties its own at its start
LOGS="$WORK/logs${SANITIZE_PART:+-$SANITIZE_PART}"
REPORTS="$WORK/reports${SANITIZE_PART:+-$SANITIZE_PART}"
TIMED='@(asan-integration|tsan-audit-threads|tsan-coalesce-threads|tsan-auto-chatty|tsan-auto-reader-thread|tsan-handler-write)*'
# The integrity checks' waits for an ack, a peer's report and their own end
# (tests/common/harness.h's CT_WAIT_MS, CT_TIMEOUT_S) 8 times as long:
# they judge no time, and the timed lane beside them can keep them off
# the CPU for seconds.
INTEGRITY_WAIT=NFTEST_WAIT_SCALE=8
# part_has NAME: true if check NAME is in this run's part (tests/lib.sh asks)
part_has() {
    # shellcheck disable=SC2053 # TIMED is a pattern
    case $SANITIZE_PART in
    timed) [[ $1 == $TIMED ]] ;;
    plain) [[ $1 != $TIMED ]] ;;
    *) true ;;
    esac
}
FILTER=$T # picks this runner's checks; the suites they run take none
clean_env ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS LSAN_OPTIONS NAGLEFIX_BUILD NFTEST_PRELOAD T
T=$FILTER
((PREPARE)) && T='' && LOGS="$WORK/prepare"
LOCKS="$WORK/locks"

rm -rf "$LOGS"
((PREPARE)) || rm -rf "$REPORTS"
mkdir -p "$LOGS" "$REPORTS" "$LOCKS"

# fail NAME WHY [FILE...]: reports a failure with each FILE's first
# sanitizer report, or its head.
fail() {
    local f
    echo "FAIL $1: $2"
    shift 2
    for f in "$@"; do
        [[ -s $f ]] || continue
        echo "    -- ${f#"$TOP"/}"
        { grep -m1 -A24 -E "$MARKERS" "$f" || head -n 25 "$f"; } | sed 's/^/    /'
    done
    FAILED=$((FAILED + 1))
}

# The sanitizer options of a check whose reports go to directory $1.
asan_env() {
    echo "ASAN_OPTIONS=log_path=$1/asan:verify_asan_link_order=0:detect_leaks=${2:-1}:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1"
    echo "UBSAN_OPTIONS=log_path=$1/ubsan:print_stacktrace=1:halt_on_error=1"
    echo "LSAN_OPTIONS=log_path=$1/lsan"
}
tsan_env() {
    echo "TSAN_OPTIONS=log_path=$1/tsan:halt_on_error=1:second_deadlock_stack=1"
}

# TSan (gcc 12) needs the narrow mmap layout: no ASLR, if we may turn it off.
# NOASLR is a command prefix; variables after it reach only the program.
NOASLR=(env)
setarch "$(uname -m)" -R true 2>/dev/null && NOASLR=(setarch "$(uname -m)" -R env)

# run NAME ENVFN CMD...: runs CMD with ENVFN's variables (asan_env,
# tsan_env or none), under timeout. Sets RC, LOG and REP (report directory).
run() {
    local name=$1 envfn=$2 detect=${LEAKS:-1}
    shift 2
    LOG="$LOGS/$name.log"
    REP="$REPORTS/$name"
    mkdir -p "$REP"
    local -a vars=()
    [[ $envfn != none ]] && mapfile -t vars < <("$envfn" "$REP" "$detect")
    local TIMEFORMAT="$name %R s wall %U user %S sys"
    { time timeout -k 5 "$LIMIT" env "${vars[@]}" "$@" >"$LOG" 2>&1; } 2>>"$LOGS/times"
    RC=$?
}

# check NAME ENVFN CMD...: passes iff CMD exits 0 and no report was written
# (to REP, to CMD's output, or to a log under the directories in $SCAN: UBSan
# beside ASan in a preloaded library ignores log_path and uses stderr).
check() {
    local name=$1 start=$SECONDS reports
    selected "$name" || return 0
    run "$@"
    # shellcheck disable=SC2086 # SCAN is a list of directories
    reports=$({
        find "$REP" -type f
        grep -lE "$MARKERS" "$LOG"
        [[ -n ${SCAN:-} ]] && grep -rlE "$MARKERS" $SCAN
    } 2>/dev/null | sort)
    if [[ -n $reports ]]; then
        mapfile -t reports < <(head -n 2 <<<"$reports")
        fail "$name" "sanitizer report(s) in ${REP#"$TOP"/}/" "${reports[@]}"
    elif ((RC != 0)); then
        { grep '^FAIL' "$LOG"; tail -n 12 "$LOG"; } >"$LOG.why"
        fail "$name" "exit status $RC (log ${LOG#"$TOP"/})" "$LOG.why"
    else
        pass "$name ($((SECONDS - start)) s)"
    fi
}

# caught NAME REGEX ENVFN CMD...: a canary: passes iff CMD fails and a report
# (or its log) matches REGEX.
caught() {
    local name=$1 re=$2 start=$SECONDS
    selected "$name" || return 0
    shift 2
    run "$name" "$@"
    if ((RC == 0)); then
        fail "$name" "the injected fault went unnoticed (exit status 0)" "$LOG"
    elif ! cat "$LOG" "$REP"/* 2>/dev/null | grep -Eq -- "$re"; then
        fail "$name" "exit status $RC but no report matching /$re/" "$LOG"
    else
        pass "$name ($((SECONDS - start)) s)"
    fi
}

# model_capture B: makes the model's capture (WORK/model.pcap; its
# summary in LOGS/model.truth) with build B's model, unless this run made
# it already: ASan's and TSan's scans read the same capture (and TSan's
# build makes no model when ASan's scan runs).
MODEL_MADE=0
model_capture() {
    ((MODEL_MADE)) && return 0
    "$1/tests/wire/model" -o "$WORK/model.pcap" --conns 4000 --concurrent 800 --rounds 8 --gap 100 \
        --mix onewrite:90,split:5,split-server:5 --rtt 2 --seed 11 --truth summary >"$LOGS/model.truth" 2>&1 &&
        MODEL_MADE=1
}

# scan_check NAME ENVFN BUILD [PREFIX...]: BUILD's naglefix scan over
# every fixture capture, then over a model capture (model_capture): a
# check each; the second also passes only if scan found the model's
# stalls, no more, no fewer.
scan_check() {
    local name=$1 envfn=$2 b=$3 cap="$WORK/model.pcap" want got
    shift 3
    any_selected "$name-fixtures" "$name-public" "$name-model" || return 0
    # shellcheck disable=SC2016 # for the inner shell
    check "$name-fixtures" "$envfn" "$@" /bin/sh -c \
        'for f in tests/wire/fixtures/*.pcap tests/wire/fixtures/*.pcapng; do "$0" scan "$f" || exit 1; done' \
        "$b/naglefix"
    # the public captures (tests/wire/public.sh): damaged and truncated
    # files among them, where scan stops with status 1
    if ! any_selected "$name-public"; then
        :
    elif public_captures >"$WORK/public.list" 2>"$LOGS/$name-public.err"; then
        # shellcheck disable=SC2016 # for the inner shell
        check "$name-public" "$envfn" "$@" /bin/sh -c \
            'while read -r f; do "$0" scan "$f"; [ $? -le 1 ] || exit 1; done <"$1"' \
            "$b/naglefix" "$WORK/public.list"
    else
        fail "$name-public" "the public captures are not installed" "$LOGS/$name-public.err"
    fi
    selected "$name-model" || return 0
    if ((!MODEL_MADE)) && [[ ! -x $b/tests/wire/model ]]; then
        # TSan's build has none when ASan's scan makes the capture
        fail "$name-model" "no capture: ASan's build, which makes the model's capture, failed" \
            "$LOGS/build-asan.log"
        return
    elif ! model_capture "$b"; then
        fail "$name-model" "the model failed" "$LOGS/model.truth"
        return
    fi
    check "$name-model" "$envfn" "$@" "$b/naglefix" scan --json "$cap"
    want=$(sed -n 's/^summary .*stalls=\([0-9]*\).*/\1/p' "$LOGS/model.truth")
    got=$(sed -n 's/.*"event":"wire_stall".*"stalls":\([0-9]*\).*/\1/p' "$LOG" | awk '{ s += $1 } END { print s + 0 }')
    if [[ -n $want && $want -gt 0 && $got == "$want" ]]; then
        pass "$name-model found the model's $want stalls"
    else
        fail "$name-model found the model's stalls" "scan found $got, the model made '${want}'" "$LOG"
    fi
}

# build NAME DIR MAKEARGS...: make in DIR, niced and on every core (no
# check times it, the suites beside it do), holding LOCKS/NAME.lock (a
# --prepare beside this run builds the same); a failed build is a failed
# check. A build made here is recorded in FRESH (its name), as up to date
# with the tree. Its time goes to LOGS/times.
declare -A FRESH
JOBS=$(nproc 2>/dev/null || echo 2)
build() {
    local name=$1 dir=$2
    shift 2
    local TIMEFORMAT="build-$name %R s wall %U user %S sys"
    if {
        flock 9 && { time nice -n 19 make -s -j"$JOBS" -C "$dir" "$@" >"$LOGS/build-$name.log" 2>&1; } 2>>"$LOGS/times"
    } 9>"$LOCKS/$name.lock"; then
        FRESH[$name]=1
        return 0
    fi
    fail "build-$name" "make $* failed" "$LOGS/build-$name.log"
    return 1
}

runtime() {
    local f
    f=$("$CC" -print-file-name="$1")
    [[ $f == /* && -e $f ]] && echo "$f"
}
ASAN_RT=$(runtime libasan.so)
TSAN_RT=$(runtime libtsan.so)
[[ -n $ASAN_RT && -n $TSAN_RT ]] || {
    echo "run.sh: $CC has no libasan.so/libtsan.so: run tests/install-deps.sh" >&2
    exit 2
}

ITESTS=()
for f in tests/integration/test_*.c; do
    f=${f##*/}
    ITESTS+=("tests/${f%.c}")
done
# asan-usage-SUITE for each suite's t_usage.sh (tests/usage.sh)
USAGE_CHECKS=()
for f in tests/*/t_usage.sh; do
    f=${f#tests/}
    USAGE_CHECKS+=("asan-usage-${f%%/*}")
done

# ---- the builds (what --prepare makes) --------------------------------------

A=build/asan
TS=build/tsan
# The library as shipped: the tree's own build (build/, -O2 -g, what the
# other suites test), or with another SANITIZE_CC one of its own.
V=build/valgrind
VLIB=build
[[ -n ${SANITIZE_CC:-} ]] && VLIB=$V
C="$WORK/canary"

# The unit tests' program under ASan, with UBSan's runtime linked in
# (gcc's other programs load it as libubsan.so): its globals, megabytes
# of zeroes LeakSanitizer reads at every forked test's exit, are then in
# the program, mapped before the forks (tests/unit/unit.c), not faulted
# in page by page in each child.
UNIT_LDFLAGS=-static-libubsan
# Every program the asan-* checks run, and the library and command.
build_asan() {
    build asan . B=$A CC="$CC" CFLAGS="$ASAN_CFLAGS" all $A/tests/wire/model "${ITESTS[@]/#/$A/}" &&
        build asan-unit . B=$A CC="$CC" CFLAGS="$ASAN_CFLAGS" LDFLAGS="$UNIT_LDFLAGS" $A/tests/check_naglefix
}
build_tsan() {
    local -a model=()
    # TSan's model only if no ASan scan makes the capture (model_capture)
    any_selected asan-scan-model || model=("$TS/tests/wire/model")
    build tsan . B=$TS CC="$CC" CFLAGS="$TSAN_CFLAGS" all $TS/tests/check_naglefix "${model[@]}" \
        $TS/tests/coalesce/test_integrity $TS/tests/coalesce/test_handler $TS/tests/auto/test_auto
}

# leak_loop_build: V/leak_loop, unless newer than its source.
leak_loop_build() {
    mkdir -p "$V"
    # shellcheck disable=SC2086 # WFLAGS is a list of words
    if ! {
        flock 9 && { [[ $V/leak_loop -nt $HERE/leak_loop.c ]] ||
            "$CC" -O1 -g $WFLAGS -o "$V/leak_loop" "$HERE/leak_loop.c" >"$LOGS/build-leak_loop.log" 2>&1; }
    } 9>"$LOCKS/leak_loop.lock"; then
        fail build-leak_loop "cannot compile leak_loop.c" "$LOGS/build-leak_loop.log"
        return 1
    fi
}
build_leak() {
    build valgrind . B=$VLIB CC="$CC" all && leak_loop_build
}

# inject FILE FUNCTION MACRO CODE: in the copy, puts CODE, under #ifdef MACRO,
# first in the body of FUNCTION (whose name starts a line of FILE).
inject() {
    local file=$C/$1
    awk -v fn="$2" -v mac="$3" -v code="$4" '
        !done && $0 !~ /^[ \t]/ && index($0, fn "(") > 0 && $0 !~ /;[ \t]*$/ { infn = 1 }
        { print }
        infn && !done && $0 == "{" { print "#ifdef " mac; print code; print "#endif"; done = 1 }
        END { exit !done }' "$file" >"$file.new" || {
        fail "canary-inject" "cannot find $2 in $1"
        return 1
    }
    mv "$file.new" "$file"
}

# seed NAME FROM FRESH [FILE...]: canary build NAME (build/c-NAME of the
# copy) starts from the objects and archives of FROM, a build this run
# brought up to date with the same compiler and flags (FRESH), and from
# FROM's programs FILE (with their .d), all dated a second ago: the copy's
# sources keep the tree's times and the injected files are newer, so make
# rebuilds those four files and what links them, not the tree. Without
# such a build the canary builds from nothing. A copy that fails is a
# failed check (the canaries then do not run).
seed() {
    local name=$1 to=$C/build/c-$1 from=$2 f
    [[ -n ${FRESH[$3]:-} ]] || return 0
    shift 3
    mkdir -p "$to/tests" &&
        cp -r "$from/obj" "$from/.deps-recorded" "$to/" &&
        { [[ ! -d $from/tests/unit ]] || cp -r "$from/tests/unit" "$to/tests/"; } &&
        find "$from" -maxdepth 1 -name '*.a' -exec cp {} "$to/" \; &&
        for f in "$@"; do
            mkdir -p "$to/${f%/*}" && cp "$from/$f" "$to/$f" &&
                { [[ ! -e $from/$f.d ]] || cp "$from/$f.d" "$to/$f.d"; } || break
        done &&
        find "$to" -exec touch -h -d "@$((EPOCHSECONDS - 1))" {} + && return 0
    fail "canary-seed-$name" "cannot copy the objects of $from to $to"
    return 1
}

make_canary_copy() {
    rm -rf "$C" && mkdir -p "$C/tests" &&
        cp -rp Makefile include src "$C/" && cp -rp tests/common tests/unit tests/integration tests/coalesce "$C/tests/" &&
        for mk in tests/*/*.mk conf/*/*.mk; do mkdir -p "$C/${mk%/*}" && cp -p "$mk" "$C/$mk" || return 1; done &&
        seed asan "$A" asan tests/test_rtt && seed ubsan "$A" asan tests/test_rtt && seed lsan "$A" asan &&
        seed tsan "$TS" tsan tests/coalesce/test_integrity &&
        { [[ $VLIB != build ]] || { seed leak build valgrind && seed grow build valgrind; }; } &&
        inject src/common/policy.c nf_policy_match NF_CANARY_ASAN \
            '{ char *volatile nf_canary = malloc(8); nf_canary[8] = 1; free(nf_canary); }' &&
        inject src/common/policy.c nf_policy_match NF_CANARY_UBSAN \
            '{ volatile int nf_canary = __INT_MAX__; nf_canary = nf_canary + (int)(salen > 0); }' &&
        inject src/common/policy.c nf_policy_match NF_CANARY_LEAK \
            '{ void *volatile nf_canary = malloc(24); (void)nf_canary; }' &&
        inject src/common/policy.c nf_policy_match NF_CANARY_GROW \
            '{ static void *nf_head; void **nf_n = malloc(24); if (nf_n) { *nf_n = nf_head; nf_head = nf_n; } }' &&
        inject src/actions/coalesce/coalesce.c nf_coalesce_send NF_CANARY_TSAN \
            '{ static int nf_canary; nf_canary++; }' &&
        inject src/core/conn.c nf_conn_ensure NF_CANARY_TSAN \
            '{ static int nf_canary; nf_canary++; }'
}

# canary_stamp: what the canaries' copy is made of (the sources copied,
# this script's faults and flags, the compiler), as one checksum.
canary_stamp() {
    {
        echo "$CC"
        find Makefile include src tests/common tests/unit tests/integration tests/coalesce \
            "$HERE/run.sh" tests/*/*.mk conf/*/*.mk -type f -print0 | sort -z | xargs -0 sha1sum
    } | sha1sum
}

# canary_copy: the copy with its faults, made unless the one in C was made
# of the same (canary_stamp, in C/.stamp, written last), holding
# LOCKS/canary-copy.lock (canary_build holds it shared).
canary_copy() {
    local stamp
    stamp=$(canary_stamp) || return 1
    {
        flock 8 || return 1
        [[ -e $C/.stamp && $(<"$C/.stamp") == "$stamp" ]] && return 0
        make_canary_copy && echo "$stamp" >"$C/.stamp"
    } 8>"$LOCKS/canary-copy.lock"
}

# canary_build KIND: the copy's build c-KIND (asan, ubsan, lsan, tsan,
# leak or grow), its fault's -D on: what that kind's canaries run.
canary_build() {
    local kl=$1 b=build/c-$1 flags
    local -a targets=("$b/libnaglefix.so")
    local -a unit=()
    case $kl in
    asan | ubsan)
        flags="$ASAN_CFLAGS -DNF_CANARY_${kl^^}"
        targets+=("$b/tests/test_rtt")
        unit=("$b/tests/check_naglefix")
        ;;
    lsan)
        flags="$ASAN_CFLAGS -DNF_CANARY_LEAK"
        targets=()
        unit=("$b/tests/check_naglefix")
        ;;
    tsan)
        flags="$TSAN_CFLAGS -DNF_CANARY_TSAN"
        targets+=("$b/tests/coalesce/test_integrity" "$b/tests/check_naglefix")
        ;;
    leak | grow) flags="-O2 -g -DNF_CANARY_${kl^^}" ;;
    esac
    # the unit tests' program linked as asan-unit's (UNIT_LDFLAGS)
    {
        flock -s 8 && { ((${#targets[@]} == 0)) || build "canary-$kl" "$C" B="$b" CC="$CC" CFLAGS="$flags" "${targets[@]}"; } &&
            { ((${#unit[@]} == 0)) || build "canary-$kl-unit" "$C" B="$b" CC="$CC" CFLAGS="$flags" LDFLAGS="$UNIT_LDFLAGS" "${unit[@]}"; }
    } 8>"$LOCKS/canary-copy.lock"
}

if ((PREPARE)); then
    start=$EPOCHREALTIME
    build_asan
    build_tsan
    ! command -v valgrind >/dev/null 2>&1 || build_leak
    if canary_copy; then
        for k in asan ubsan lsan tsan leak grow; do
            canary_build "$k"
        done
    else
        fail canary-copy "cannot make the canaries' copy in ${C#"$TOP"/}"
    fi
    echo "sanitize --prepare: $FAILED build(s) failed in $(elapsed "$start") s (times: ${LOGS#"$TOP"/}/times)"
    ((FAILED == 0))
    exit
fi

# ---- AddressSanitizer + UndefinedBehaviorSanitizer --------------------------

if any_selected asan-unit asan-integration "${USAGE_CHECKS[@]}" asan-scan-{fixtures,public,model} && build_asan; then
    # shellcheck disable=SC2016 # for the inner shell
    check asan-unit asan_env /bin/sh -c 'cd tests/unit && exec env CK_DEFAULT_TIMEOUT=60 ../../$0/tests/check_naglefix' "$A"
    # The host programs (sh, echo, strace) are not ours: no leak check there.
    LEAKS=0 SCAN="$A/tests/logs" check asan-integration asan_env NAGLEFIX_BUILD=$A NFTEST_PRELOAD="$ASAN_RT" \
        NFTEST_TIMEOUT=60 tests/integration/run.sh
    # Every command's --help and usage errors, which tests/integration no
    # longer holds: each suite's t_usage.sh, given the ASan build's naglefix
    for c in "${USAGE_CHECKS[@]}"; do
        check "$c" asan_env NAGLEFIX_BUILD=$A USAGE_LIMIT=60 bash "tests/${c#asan-usage-}/t_usage.sh"
    done
    scan_check asan-scan asan_env "$A"
fi

# ---- ThreadSanitizer --------------------------------------------------------

TSAN_CHECKS=(tsan-scan-{fixtures,public,model} tsan-unit tsan-integrity-{single,threads4,shared2}
    tsan-auto-{reader-thread,restore-race,chatty} tsan-handler-write tsan-{audit,coalesce}-threads)
if any_selected "${TSAN_CHECKS[@]}" && build_tsan; then
    scan_check tsan-scan tsan_env "$TS" "${NOASLR[@]}"
    # shellcheck disable=SC2016 # for the inner shell
    check tsan-unit tsan_env "${NOASLR[@]}" /bin/sh -c \
        'cd tests/unit && exec env CK_DEFAULT_TIMEOUT=120 ../../$0/tests/check_naglefix' "$TS"
    for v in single threads4 shared2; do
        check "tsan-integrity-$v" tsan_env "${NOASLR[@]}" LD_PRELOAD="$TOP/$TS/libnaglefix.so" \
            NAGLEFIX_MODE=coalesce "$INTEGRITY_WAIT" "$TS/tests/coalesce/test_integrity" "$v"
    done
    # auto: the lock-free list between senders, readers and the timer, and
    # the program's TCP_NODELAY set while another thread pushes
    for v in reader-thread restore-race chatty; do
        check "tsan-auto-$v" tsan_env "${NOASLR[@]}" LD_PRELOAD="$TOP/$TS/libnaglefix.so" \
            NAGLEFIX_MODE=auto NAGLEFIX_CONF=none "$TS/tests/auto/test_auto" "$v"
    done
    # a signal handler's send on a held socket, the library interrupted
    check tsan-handler-write tsan_env "${NOASLR[@]}" LD_PRELOAD="$TOP/$TS/libnaglefix.so" \
        NAGLEFIX_CONF="$TOP/tests/coalesce/conf/flush-1s.conf" "$TS/tests/coalesce/test_handler" write
    PORT=""
    if any_selected tsan-audit-threads tsan-coalesce-threads; then
        : >"$LOGS/echo_server.out"
        python3 "$HERE/echo_server.py" 600 >"$LOGS/echo_server.out" 2>&1 &
        ECHO_PID=$!
        wait_until 10 grep -qs '^PORT [0-9]' "$LOGS/echo_server.out" &&
            read -r _ PORT <"$LOGS/echo_server.out"
    fi
    if ! any_selected tsan-audit-threads tsan-coalesce-threads; then
        :
    elif [[ -z $PORT ]]; then
        fail tsan-audit-threads "the echo server did not start" "$LOGS/echo_server.out"
    else
        for mode in audit coalesce; do
            check "tsan-$mode-threads" tsan_env "${NOASLR[@]}" \
                LD_PRELOAD="$TOP/$TS/libnaglefix.so:$TSAN_RT" NAGLEFIX_MODE=$mode \
                NAGLEFIX_LOG="$WORK/$mode-threads.log" \
                python3 tests/audit/split_client.py 127.0.0.1 "$PORT" 40 8
        done
        # Those two ran the library, or they prove nothing: audit found the
        # stalls of all 8 connections, coalesce took them away.
        if ! selected "tsan-audit-threads found the stalls"; then
            :
        elif [[ $(grep -c '"split_write"\|"repeat"' "$WORK/audit-threads.log" 2>/dev/null) -ge 2 ]]; then
            pass "tsan-audit-threads found the stalls"
        else
            fail "tsan-audit-threads found the stalls" "no finding in $WORK/audit-threads.log"
        fi
        ms=$(sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' "$LOGS/tsan-coalesce-threads.log")
        if ! selected "tsan-coalesce-threads is fast"; then
            :
        elif [[ $ms =~ ^[0-9.]+$ ]] && awk -v m="$ms" 'BEGIN { exit !(m < 20) }'; then
            pass "tsan-coalesce-threads is fast ($ms ms)"
        else
            fail "tsan-coalesce-threads is fast" "median '$ms' ms, want < 20" "$LOGS/tsan-coalesce-threads.log"
        fi
    fi
fi

# ---- leak check: valgrind over a long-running program -------------------------

LEAK_ROUNDS=${LEAK_ROUNDS:-32}
# shellcheck disable=SC2054 # the commas are valgrind's
VALGRIND=(valgrind --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99
    --child-silent-after-fork=yes)

# heap_in_use LOG: the bytes valgrind found in use at exit.
heap_in_use() {
    sed -n 's/.*in use at exit: \([0-9,]*\) bytes.*/\1/p' "$1" | tr -d , | head -n 1
}

# leak_check NAME LIBDIR MODE: leak_loop under valgrind with LIBDIR's
# library, LEAK_ROUNDS then 4 times as many rounds. Passes iff both exit 0
# (no valgrind error, nothing lost) and the heap in use at exit grew by
# less than 1 KiB.
leak_check() {
    local name=$1 lib=$2/libnaglefix.so mode=$3 small big
    any_selected "$name" || return 0
    check "$name" none LD_PRELOAD="$lib" NAGLEFIX_MODE="$mode" NAGLEFIX_LOG="$WORK/$name.audit" \
        "${VALGRIND[@]}" "$V/leak_loop" "$LEAK_ROUNDS"
    small=$(heap_in_use "$LOG")
    selected "$name-4x" || return 0
    run "$name-4x" none LD_PRELOAD="$lib" NAGLEFIX_MODE="$mode" NAGLEFIX_LOG="$WORK/$name.audit" \
        "${VALGRIND[@]}" "$V/leak_loop" $((LEAK_ROUNDS * 4))
    big=$(heap_in_use "$LOG")
    if ((RC != 0)); then
        fail "$name-4x" "exit status $RC" "$LOG"
    elif [[ -z $small || -z $big ]]; then
        fail "$name-4x" "no heap summary from valgrind" "$LOG"
    elif ((big - small >= 1024)); then
        fail "$name-4x" "heap in use at exit grew from $small to $big bytes with 4x the rounds" "$LOG"
    else
        pass "$name-4x (heap at exit $small -> $big bytes)"
    fi
}

if ! any_selected leak-{coalesce,audit,nodelay}; then
    :
elif ! command -v valgrind >/dev/null 2>&1; then
    fail leak "valgrind is not installed: run tests/install-deps.sh"
elif build_leak; then
    for mode in coalesce audit nodelay; do
        leak_check "leak-$mode" "$TOP/$VLIB" "$mode"
    done
fi

# ---- canaries: each check above catches a fault injected into a copy --------

# The unit test the canaries of asan-unit run: it calls nf_policy_match
# with an address, where the faults are injected.
CANARY_UNIT=test_policy_match_ipv4_host
if any_selected canary-{asan,ubsan}-{integration,unit} canary-lsan-unit canary-tsan-{integrity,unit} \
    canary-{leak,grow} && canary_copy; then
    for k in ASAN UBSAN; do
        kl=${k,,}
        if any_selected "canary-$kl-integration" "canary-$kl-unit" && canary_build "$kl"; then
            re='heap-buffer-overflow'
            [[ $k == UBSAN ]] && re='signed integer overflow'
            # under LD_PRELOAD, as in asan-integration, and in a unit test
            # run as asan-unit runs them all (forked by Check, the report
            # from the child): one that matches an address, as hundreds
            # would (each a fork with its leak check: 10 s of CPU)
            LEAKS=0 caught "canary-$kl-integration" "$re" asan_env \
                LD_PRELOAD="$ASAN_RT:$C/build/c-$kl/libnaglefix.so" NAGLEFIX_MODE=nodelay \
                "$C/build/c-$kl/tests/test_rtt" fast
            # shellcheck disable=SC2016 # for the inner shell
            caught "canary-$kl-unit" "$re" asan_env /bin/sh -c \
                'cd "$0/tests/unit" && exec env CK_DEFAULT_TIMEOUT=60 CK_RUN_SUITE=policy T="$2" ../../$1/tests/check_naglefix' \
                "$C" "build/c-$kl" "$CANARY_UNIT"
        fi
    done
    if any_selected canary-lsan-unit && canary_build lsan; then
        # shellcheck disable=SC2016 # for the inner shell
        caught canary-lsan-unit 'detected memory leaks' asan_env /bin/sh -c \
            'cd "$0/tests/unit" && exec env CK_DEFAULT_TIMEOUT=60 CK_RUN_SUITE=policy T="$2" ../../$1/tests/check_naglefix' \
            "$C" build/c-lsan "$CANARY_UNIT"
    fi
    if any_selected canary-tsan-{integrity,unit} && canary_build tsan; then
        caught canary-tsan-integrity 'data race' tsan_env "${NOASLR[@]}" \
            LD_PRELOAD="$C/build/c-tsan/libnaglefix.so" NAGLEFIX_MODE=coalesce "$INTEGRITY_WAIT" \
            "$C/build/c-tsan/tests/coalesce/test_integrity" threads4
        # shellcheck disable=SC2016 # for the inner shell
        caught canary-tsan-unit 'data race' tsan_env "${NOASLR[@]}" /bin/sh -c \
            'cd "$0/tests/unit" && exec env CK_DEFAULT_TIMEOUT=60 CK_RUN_SUITE=conn CK_RUN_CASE=table ../../build/c-tsan/tests/check_naglefix' \
            "$C"
    fi
    for k in LEAK GROW; do
        kl=${k,,}
        selected "canary-$kl" || continue
        canary_build "$kl" || continue
        # leak_check must fail: count its failures instead of adding them.
        before=$FAILED
        leak_check "canary-$kl-inner" "$C/build/c-$kl" nodelay >"$LOGS/canary-$kl.out"
        got=$((FAILED - before))
        FAILED=$before
        PASSED=$((PASSED - (2 - got)))
        if ((got > 0)); then
            pass "canary-$kl ($(grep -c ^FAIL "$LOGS/canary-$kl.out") check(s) failed as they should)"
        else
            fail "canary-$kl" "the leak check did not notice" "$LOGS/canary-$kl.out"
        fi
    done
fi

finish
