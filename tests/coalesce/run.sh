#!/usr/bin/env bash
# run.sh - the coalesce tests: each program build/tests/coalesce/test_* runs
# once per variant under libnaglefix.so with NAGLEFIX_MODE=coalesce, plus a
# conf/*.conf rule where the test needs its own flush= (flush=1s for the
# flush triggers, so only the trigger can make a round trip fast). The
# conf/*.conf files say start=split, so that a test's first small write is
# held (as every write is on a connection that has split a message), but
# whole-1s.conf; the tests without one run the default, start=whole.
# (Under start=whole a connection holds from its first second write on,
# by the same code; the differential test, tests/difftest, runs its fork,
# exec, close, dup, signal and thread operations under both starts.) Each program re-executes
# itself without the library as its peer.
# `make test-coalesce` builds everything first; this only runs.
#
# Prints "PASS test variant (seconds)" or "FAIL test variant: why" with the
# tail of its log (or "SKIP test variant: why" when the program exits 77:
# counted neither way), and ends with "N passed, M failed". Exit status is
# 0 iff nothing failed. Logs: build/tests/coalesce/logs/. Works from any cwd.
#
# T=pattern runs only the tests whose "test variant" name it matches
# (`make test-coalesce T=test_reuse`; tests/lib.sh).
# NAGLEFIX_LIB=path runs the tests against another build of the library
# (say one with a feature taken out, to see the tests that notice).
# NAGLEFIX_BUILD=dir (relative to the top, or absolute) runs another build,
# programs and library (`make B=dir`), e.g. build/musl.
set -u
export LC_ALL=C # EPOCHREALTIME with a dot, whatever the caller's locale

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P)
BUILD=$(cd "$TOP" && cd "${NAGLEFIX_BUILD:-build}" && pwd -P) || exit 2
B="$BUILD/tests/coalesce"
LIB=${NAGLEFIX_LIB:-$BUILD/libnaglefix.so}
CONF="$HERE/conf"
LOGS="$B/logs"
LIMIT=${COTEST_TIMEOUT:-40} # seconds any one test may take
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

scratch_dir cotest
clean_env
need_built make "$LIB"
fresh_logs "$LOGS" log
note_etc_conf "it applies wherever a test sets no NAGLEFIX_CONF"

# The variants that exec /bin/true (or /bin/sh) with the library still preloaded need it
# built for that program's libc: a musl build on a glibc system is not.
EXECS_SYSTEM=" test_process:execv-true test_process:execve-true test_process:execlp-true test_process:execveat-true test_hooks:vfork-exec test_hooks:system test_hooks:popen test_hooks:_IO_popen test_cancel:system test_contract:system-full "
SYS_WHY=$(env LD_PRELOAD="$LIB" /bin/true 2>&1 >/dev/null) ||
    SYS_WHY="the library cannot be preloaded into /bin/true: $(head -n 1 <<<"$SYS_WHY")"
[[ $SYS_WHY == "the library "* ]] || SYS_WHY=""

# one CONF TEST VARIANT: runs TEST VARIANT under the library with
# conf/CONF ("-": NAGLEFIX_MODE=coalesce alone); passes iff it exits 0.
one() {
    local conf=$1 test=$2 variant=$3 name="$2 $3" log="$LOGS/$2-$3.log" rc start
    local -a vars=("LD_PRELOAD=$LIB" NAGLEFIX_MODE=coalesce)

    selected "$name" || return 0
    [[ $conf != - ]] && vars+=("NAGLEFIX_CONF=$CONF/$conf")
    if [[ ! -x $B/$test ]]; then
        fail "$name" "$B/$test is not built: run 'make test-coalesce'"
        return
    fi
    if [[ -n $SYS_WHY && $EXECS_SYSTEM == *" $test:$variant "* ]]; then
        skip "$name" "$SYS_WHY"
        return
    fi
    start=$EPOCHREALTIME
    (cd "$TMP" && timeout -k 5 "$LIMIT" env "${vars[@]}" "$B/$test" "$variant") >"$log" 2>&1
    rc=$?
    judge "$name" "$rc" "$start" "$log"
}

# c CONF TEST VARIANT...: one CONF TEST for each variant.
c() {
    local conf=$1 test=$2 variant
    shift 2
    for variant in "$@"; do
        one "$conf" "$test" "$variant"
    done
}

# test_fortify only tests the fortified entry points if its calls reach them.
fortify_symbols() {
    local name="test_fortify symbols" sym missing=""
    selected "$name" || return 0
    for sym in __read_chk __recv_chk __recvfrom_chk __poll_chk __ppoll_chk; do
        nm -u "$B/test_fortify" 2>/dev/null | grep -qw -- "$sym" || missing+=" $sym"
    done
    if [[ -n $missing ]]; then
        fail "$name" "the binary does not reference$missing"
    else
        pass "$name"
    fi
}

HOLD=flush-1s.conf
START=$EPOCHREALTIME

# 1. integrity: every byte, once, in order
c - test_integrity single threads4 shared2

# 2. each flush trigger, with the timer a second away
c "$HOLD" test_read read readv recv recvfrom recvmsg recvmmsg
if readelf -l "$B/test_fortify" 2>/dev/null | grep -q 'interpreter: .*/ld-musl'; then
    selected test_fortify && skip test_fortify "musl has no fortified __*_chk functions (its _FORTIFY_SOURCE, if any, is inline and calls read itself)"
else
    fortify_symbols
    c "$HOLD" test_fortify read recv recvfrom poll ppoll
fi
c "$HOLD" test_wait poll ppoll select pselect epoll_wait epoll_pwait poll-other
c "$HOLD" test_fdops close shutdown close_range dup2 dup3 dup fcntl-dupfd nodelay cork sendfile splice \
    overflow-large overflow-fill
c flush-2ms.conf test_timer fast
c "$HOLD" test_timer slow
c flush-5ms.conf test_timer trickle
c flush-2ms.conf test_timer child
c flush-500us.conf test_timer trust
c flush-2ms.conf test_bigtls timer

# 2b. whole messages go straight
c "$HOLD" test_whole straight
c whole-1s.conf test_whole start more

# 3. fork, exec, exit
c "$HOLD" test_process fork-_exit fork-exit fork-full execv-self execv-true execve-true \
    execlp-true _exit exit _Exit return fork-mask quick_exit execv-fail pthread_exit \
    _Fork-exit execveat-true thrd_exit cancel-main abort assert daemon

# 4. an event loop on a non-blocking socket
c "$HOLD" test_wait epoll-nonblock

# 5. a full connection: EAGAIN, and nothing lost
c split.conf test_eagain nonblock sndtimeo sigrestart nodelay-full

# 6. a failed flush is reported by the next send
c "$HOLD" test_flusherr ignore nosignal default handler sticky reuse

# 7. sends that bypass the buffer keep the order (MSG_OOB and others)
c "$HOLD" test_order oob sendto-addr sendmmsg

# 7b. less common calls (fortified build): sendmmsg, vfork, posix_spawn*, MSG_FASTOPEN
c "$HOLD" test_hooks sendmmsg vfork-stack vfork-close __vfork-close vfork-exec posix_spawn posix_spawnp system popen \
    fastopen fastopen-msg fastopen-refused close_range sendfile splice fcntl-dupfd \
    sendfile64 closefrom __write __send __close pwritev2 __dup2 __fcntl dprintf \
    _IO_popen posix_close aio_write lio_listio

# 7c. stdio on a socket: its writes (libc's internal ones) never overtake held bytes
c "$HOLD" test_stdio stdout stdout-inherited fdopen fdopen-early _IO_fdopen fclose dprintf vdprintf

# 8. a two-piece request is one segment
c - test_segments coalesce after-file

# bytes of a closed socket never reach the next one with its number
c split-drain-300ms.conf test_reuse closed-mid-send
c split.conf test_reuse close-while-sending close-range-other

# a signal handler's send keeps its place after bytes already held
c "$HOLD" test_handler write sendmmsg big read close exit

# a thread cancelled where the library flushes leaves its lock free
c "$HOLD" test_cancel system read

# every call answered as the kernel would (shutdown, children, connect, bad arguments)
c "$HOLD" test_contract shut-write shut-inflight fork-full system-full daemon-full full-nonblock connecting empty iovcnt efault

# a writer blocked on a peer that does not read holds nothing else up
c "$HOLD" test_blocked shutdown close exit
c - test_blocked idle

echo "time: $(elapsed "$START") s"
finish
