#!/usr/bin/env bash
# run.sh - the integration tests: the programs build/tests/test_* run with
# and without libnaglefix.so preloaded, plus the configuration and command
# checks. `make test-integration` builds everything first; this only runs.
#
# Prints "PASS name" or "FAIL name" for each check, the log of each failed
# one indented below it, and ends with "N passed, M failed". Exit status is
# 0 iff nothing failed. Logs: build/tests/logs/NAME.log. Works from any cwd.
# A check that cannot apply here prints "SKIP name: why" and counts as
# neither (a test program says so with exit status 77).
# T=pattern runs only the checks whose name it matches (tests/lib.sh).
#
# NAGLEFIX_BUILD=dir (relative to the top, or absolute) runs another build
# (`make B=dir`), e.g. build/asan; NFTEST_PRELOAD=libs goes before the
# library in every LD_PRELOAD the checks set ("$P"), e.g. the ASan runtime.
set -u
export LC_ALL=C # EPOCHREALTIME with a dot, and the C library's messages

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P) # physical, as naglefix finds its library
BUILD=$(cd "$TOP" && cd "${NAGLEFIX_BUILD:-build}" && pwd -P) || exit 2
BT="$BUILD/tests"
LIB="$BUILD/libnaglefix.so"
NAGLEFIX="$BUILD/naglefix"
CONF="$HERE/conf"
LOGS="$BT/logs"
LIMIT=${NFTEST_TIMEOUT:-30} # seconds any one check may take
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

scratch_dir nftest
clean_env
need_built "make test-integration" "$LIB" "$NAGLEFIX" "$BT/test_rtt"
fresh_logs "$LOGS" log out
note_etc_conf "it applies wherever a check sets no NAGLEFIX_CONF"

# t NAME [VAR=VALUE...] PROGRAM [ARG...]: runs a test program in a clean
# environment plus the given variables, under timeout; judge() says how it
# went (exit status 0 passes, 77 skips).
t() {
    local name=$1 log="$LOGS/$1.log" start
    shift
    selected "$name" || return 0
    start=$EPOCHREALTIME
    timeout -k 5 "$LIMIT" env "$@" >"$log" 2>&1
    judge "$name" $? "$start" "$log"
}

# "$P" among t's variables preloads the library.
P="LD_PRELOAD=${NFTEST_PRELOAD:+$NFTEST_PRELOAD:}$LIB"

# sys CHECK NAME ARG...: runs a check that preloads the library into system
# programs (/bin/sh, /bin/echo), or says why it cannot: a build for another
# libc than theirs (musl on a glibc system) cannot be loaded into them.
SYS_WHY=$(env "$P" /bin/sh -c : 2>&1 >/dev/null) ||
    SYS_WHY="the library cannot be preloaded into /bin/sh: $(head -n 1 <<<"$SYS_WHY")"
[[ $SYS_WHY == "the library "* ]] || SYS_WHY=""
sys() {
    selected "$2" || return 0
    if [[ -z $SYS_WHY ]]; then "$@"; else skip "$2" "$SYS_WHY"; fi
}

# ---- the write-write-read round trip of a client -----------------------------

R="$BT/test_rtt"
t rtt-no-shim-stalls                       "$R" stall
t rtt-no-shim-stalls-ipv6                  "$R" stall ::1
t rtt-mode-nodelay-fast                    "$P" NAGLEFIX_MODE=nodelay "$R" fast
t rtt-mode-nodelay-fast-ipv6               "$P" NAGLEFIX_MODE=nodelay "$R" fast ::1
t rtt-mode-nodelay-fast-mapped             "$P" NAGLEFIX_MODE=nodelay "$R" fast ::ffff:127.0.0.1
t rtt-mode-pass-stalls                     "$P" NAGLEFIX_MODE=pass "$R" stall
t rtt-mode-audit-stalls                    "$P" NAGLEFIX_MODE=audit "$R" stall
t rtt-no-config-stalls                     "$P" "$R" stall
t rtt-rule-other-destination-stalls        "$P" NAGLEFIX_CONF="$CONF/other-destination.conf" "$R" stall
t rtt-rule-port-range-fast                 "$P" NAGLEFIX_CONF="$CONF/port-range.conf" "$R" fast
t rtt-rule-port-range-miss-stalls          "$P" NAGLEFIX_CONF="$CONF/port-range-miss.conf" "$R" stall
t rtt-rule-prefix-fast                     "$P" NAGLEFIX_CONF="$CONF/prefix.conf" "$R" fast 127.0.0.2
t rtt-rule-prefix-fast-mapped              "$P" NAGLEFIX_CONF="$CONF/prefix.conf" "$R" fast ::ffff:127.0.0.1
t rtt-rule-ipv6-fast                       "$P" NAGLEFIX_CONF="$CONF/ipv6.conf" "$R" fast ::1
t rtt-rule-ipv6-leaves-ipv4-stalls         "$P" NAGLEFIX_CONF="$CONF/ipv6.conf" "$R" stall 127.0.0.1
t rtt-rule-ipv4-leaves-ipv6-stalls         "$P" NAGLEFIX_CONF="$CONF/prefix.conf" "$R" stall ::1
t rtt-rule-connect-keyword-fast            "$P" NAGLEFIX_CONF="$CONF/connect-keyword.conf" "$R" fast
t rtt-rule-first-match-pass-stalls         "$P" NAGLEFIX_CONF="$CONF/first-match.conf" "$R" stall 127.0.0.1
t rtt-rule-first-match-next-fast           "$P" NAGLEFIX_CONF="$CONF/first-match.conf" "$R" fast 127.0.0.2
t rtt-rule-accept-only-stalls              "$P" NAGLEFIX_CONF="$CONF/accept-port.conf" "$R" stall
t rtt-conf-default-nodelay-fast            "$P" NAGLEFIX_CONF="$CONF/default-nodelay.conf" "$R" fast
t rtt-mode-pass-overrides-default-stalls   "$P" NAGLEFIX_CONF="$CONF/default-nodelay.conf" NAGLEFIX_MODE=pass "$R" stall
t rtt-mode-nodelay-keeps-rules-stalls      "$P" NAGLEFIX_CONF="$CONF/first-match.conf" NAGLEFIX_MODE=nodelay "$R" stall
for call in send sendto sendmsg writev; do
    t "rtt-mode-nodelay-fast-$call"        "$P" NAGLEFIX_MODE=nodelay "$R" fast 127.0.0.1 23400-23499 "$call"
done

# ---- setsockopt --------------------------------------------------------------

S="$BT/test_setsockopt"
t setsockopt-no-shim                       "$S" plain
t setsockopt-mode-pass                     "$P" NAGLEFIX_MODE=pass "$S" plain
t setsockopt-mode-nodelay-forced           "$P" NAGLEFIX_MODE=nodelay "$S" forced

# ---- accept and accept4 ------------------------------------------------------

A="$BT/test_accept"
for call in accept accept4; do
    t "$call-no-shim-off"                  "$A" off "$call"
    t "$call-rule-port-on"                 "$P" NAGLEFIX_CONF="$CONF/accept-port.conf" "$A" on "$call"
    t "$call-default-nodelay-on"           "$P" NAGLEFIX_CONF="$CONF/default-nodelay.conf" "$A" on "$call"
    t "$call-mode-nodelay-on"              "$P" NAGLEFIX_MODE=nodelay "$A" on "$call"
    t "$call-rule-other-port-off"          "$P" NAGLEFIX_CONF="$CONF/accept-other-port.conf" "$A" off "$call"
    t "$call-connect-rule-ignored-off"     "$P" NAGLEFIX_CONF="$CONF/prefix.conf" "$A" off "$call"
    t "$call-rule-pass-beats-default-off"  "$P" NAGLEFIX_CONF="$CONF/accept-pass-default-nodelay.conf" "$A" off "$call"
done
t accept-rule-ipv6-on                      "$P" NAGLEFIX_CONF="$CONF/accept-ipv6.conf" "$A" on accept ::1
t accept-rule-ipv6-leaves-ipv4-off         "$P" NAGLEFIX_CONF="$CONF/accept-ipv6.conf" "$A" off accept 127.0.0.1
t accept-connect-rule-ipv6-ignored-off     "$P" NAGLEFIX_CONF="$CONF/ipv6.conf" "$A" off accept4 ::1
t rtt-accept-pass-default-nodelay-fast     "$P" NAGLEFIX_CONF="$CONF/accept-pass-default-nodelay.conf" "$R" fast

# ---- non-blocking connect ----------------------------------------------------

N="$BT/test_nonblock"
for way in sock_nonblock fcntl; do
    t "nonblock-$way-no-shim-off"          "$N" off "$way"
    t "nonblock-$way-mode-nodelay-on"      "$P" NAGLEFIX_MODE=nodelay "$N" on "$way"
done
t nonblock-rule-port-range-on              "$P" NAGLEFIX_CONF="$CONF/port-range.conf" "$N" on
t nonblock-rule-port-range-miss-off        "$P" NAGLEFIX_CONF="$CONF/port-range-miss.conf" "$N" off

# ---- a program that puts itself in a seccomp sandbox ----------------------------

X="$BT/test_sandbox"
if [[ -n ${NFTEST_PRELOAD:-} ]]; then
    skip sandbox "the sanitizer runtime in LD_PRELOAD makes system calls of its own"
else
    t sandbox-no-shim                      "$X"
    for mode in pass nodelay audit coalesce auto quickack; do
        t "sandbox-mode-$mode"             "$P" NAGLEFIX_MODE="$mode" "$X"
    done
    t sandbox-coalesce-held-first-write    "$P" NAGLEFIX_CONF="$CONF/coalesce-split-1s.conf" "$X"
    t sandbox-audit-log-file               "$P" NAGLEFIX_MODE=audit NAGLEFIX_LOG="$TMP/sandbox-%p.log" "$X"
    # the filter installed through syscall(): libseccomp's way, and prctl's
    for how in seccomp seccomp-tsync syscall-prctl; do
        for mode in audit auto quickack; do
            t "sandbox-$how-mode-$mode"    "$P" NAGLEFIX_MODE="$mode" "$X" "$how"
        done
        t "sandbox-$how-coalesce-held-first-write" "$P" NAGLEFIX_CONF="$CONF/coalesce-split-1s.conf" "$X" "$how"
    done
    # fork and wait after the filter (the library's fork handlers)
    t sandbox-fork-no-shim                 "$X" prctl fork
    for mode in pass coalesce auto; do
        t "sandbox-fork-mode-$mode"        "$P" NAGLEFIX_MODE="$mode" "$X" prctl fork
    done
    # vfork after the filter: libc's own again (x86-64; elsewhere a fork)
    t sandbox-vfork-no-shim                "$X" prctl vfork
    if [[ $(uname -m) == x86_64 ]]; then
        for mode in pass coalesce; do
            t "sandbox-vfork-mode-$mode"   "$P" NAGLEFIX_MODE="$mode" "$X" seccomp vfork
        done
    fi
    # the calls that only ask whether seccomp works do not make it stand aside
    t sandbox-probe-no-shim                "$X" prctl probe
    t sandbox-probe-mode-nodelay           "$P" NAGLEFIX_MODE=nodelay "$X" seccomp probe
    # held bytes it gave up on: the connection is shut down, not left with a hole
    t sandbox-coalesce-dropped-shut-down   "$P" NAGLEFIX_CONF="$CONF/coalesce-split-1s-drain-300ms.conf" "$X" prctl gap
fi

# ---- sockets opened before the library loaded ---------------------------------

I="$BT/test_inherited"
t inherited-no-shim-off                    "$I" off connect write ""
for call in write send sendto sendmsg writev; do
    t "inherited-$call-mode-nodelay-on"    NAGLEFIX_MODE=nodelay "$I" on connect "$call" "$LIB"
done
t inherited-mode-pass-off                  NAGLEFIX_MODE=pass "$I" off connect write "$LIB"
t inherited-rule-port-range-on             NAGLEFIX_CONF="$CONF/port-range.conf" "$I" on connect send "$LIB"
t inherited-rule-other-destination-off     NAGLEFIX_CONF="$CONF/other-destination.conf" "$I" off connect send "$LIB"
t inherited-accepted-no-shim-off           "$I" off accept write ""
t inherited-accepted-rule-accept-on        NAGLEFIX_CONF="$CONF/accept-port.conf" "$I" on accept write "$LIB"
t inherited-accepted-rule-other-port-off   NAGLEFIX_CONF="$CONF/accept-other-port.conf" "$I" off accept write "$LIB"
t inherited-connected-accept-rule-off      NAGLEFIX_CONF="$CONF/accept-port.conf" "$I" off connect write "$LIB"
t inherited-listener-no-shim-off           "$I" off listen write ""
t inherited-listener-mode-nodelay-on       NAGLEFIX_MODE=nodelay "$I" on listen write "$LIB"
t inherited-listener-rule-accept-on        NAGLEFIX_CONF="$CONF/accept-port.conf" "$I" on listen send "$LIB"
t inherited-listener-rule-other-port-off   NAGLEFIX_CONF="$CONF/accept-other-port.conf" "$I" off listen send "$LIB"
t inherited-listener-connect-rule-off      NAGLEFIX_CONF="$CONF/prefix.conf" "$I" off listen send "$LIB"

# ---- descriptors: dup, close, fork ---------------------------------------------

for part in dups unix reuse unseen cloexec fork reconnect copies; do
    t "fd-$part-no-shim"                   "$BT/test_fd" off "$part"
    t "fd-$part-rule-nodelay"              "$P" NAGLEFIX_CONF="$CONF/fd.conf" "$BT/test_fd" on "$part"
    t "fd-$part-rule-coalesce"             "$P" NAGLEFIX_CONF="$CONF/fd-coalesce.conf" "$BT/test_fd" on "$part"
done

# fcntl, __fcntl and fcntl64: every kind of command (an int, a pointer, no
# argument; errors) on a tracked socket, a file, a pipe and a memfd gives
# the same result and errno with the shim as without it (test_fcntl prints
# one line a call; "hooked": the three names are the library's).
fcntl_same_as_libc() {
    local name=fcntl-same-as-libc out="$LOGS/fcntl-same-as-libc" rc
    selected "$name" || return 0
    timeout -k 5 "$LIMIT" "$BT/test_fcntl" >"$out.bare.out" 2>"$out.log"
    rc=$?
    if ((rc != 0)); then
        fail "$name" "without the shim: exit status $rc" "$out.log"
        return
    fi
    timeout -k 5 "$LIMIT" env "$P" NAGLEFIX_MODE=nodelay "$BT/test_fcntl" hooked >"$out.shim.out" 2>"$out.log"
    rc=$?
    if ((rc != 0)); then
        fail "$name" "with the shim: exit status $rc" "$out.log"
    elif [[ ! -s $out.bare.out ]]; then
        fail "$name" "test_fcntl printed no call"
    elif diff "$out.bare.out" "$out.shim.out" >"$out.log"; then
        pass "$name ($(wc -l <"$out.bare.out") calls)"
    else
        fail "$name" "results differ (< without the shim, > with it)" "$out.log"
    fi
}
fcntl_same_as_libc

# ---- what is not TCP is left alone -----------------------------------------------

U="$BT/test_untouched"
t untouched-no-shim                        "$U"
t untouched-mode-nodelay                   "$P" NAGLEFIX_MODE=nodelay "$U"
t untouched-inherited-file                 "$U" 3 3>"$TMP/inherited-file"
t untouched-inherited-file-mode-nodelay    "$P" NAGLEFIX_MODE=nodelay "$U" 3 3>"$TMP/inherited-file"
t untouched-inherited-pipe-mode-nodelay    "$P" NAGLEFIX_MODE=nodelay "$U" 3 3> >(cat >/dev/null)
t untouched-default-nodelay                "$P" NAGLEFIX_CONF="$CONF/default-nodelay.conf" "$U"

# The shim adds no socket-option or address call for UNIX, UDP, pipe and
# file descriptors: the same calls, with the same arguments and results,
# with and without it (addresses and pids blanked).
strace_calls() {
    local out=$1 v
    local -a vars=()
    shift
    for v in "$@"; do vars+=(-E "$v"); done # for the program, not strace itself
    timeout -k 5 "$LIMIT" strace "${vars[@]}" -f -qq -e signal=none \
        -e trace=setsockopt,getsockopt,getsockname,getpeername -o "$out.raw" "$U" &&
        sed -E 's/^[0-9]+ +//; s/0x[0-9a-f]+/ADDR/g' "$out.raw" >"$out"
}
if ! selected untouched-no-extra-syscalls; then
    :
elif command -v strace >/dev/null 2>&1; then
    if ! strace_calls "$TMP/strace-plain"; then
        fail untouched-no-extra-syscalls "strace without the shim failed" "$TMP/strace-plain.raw"
    elif ! strace_calls "$TMP/strace-shim" "$P" NAGLEFIX_MODE=nodelay; then
        fail untouched-no-extra-syscalls "strace with the shim failed" "$TMP/strace-shim.raw"
    elif diff "$TMP/strace-plain" "$TMP/strace-shim" >"$LOGS/untouched-no-extra-syscalls.log"; then
        pass untouched-no-extra-syscalls
    else
        fail untouched-no-extra-syscalls "the shim made other calls (< without, > with)" \
            "$LOGS/untouched-no-extra-syscalls.log"
    fi
else
    skip untouched-no-extra-syscalls "strace is not installed"
fi

# ---- configuration errors: one line, and the program runs unchanged ------------

# expect_run NAME WANT_STATUS WANT_STDOUT STDERR_REGEX STDERR_LINES [VAR=VALUE...] CMD...
# Runs CMD in a clean environment; checks its exit status, its whole stdout,
# and that stderr has exactly STDERR_LINES lines, the first matching the
# extended regex (empty: stderr must be empty).
expect_run() {
    local name=$1 want_rc=$2 want_out=$3 re=$4 want_lines=$5 rc out err lines
    shift 5
    selected "$name" || return 0
    out="$LOGS/$name.out"
    err="$LOGS/$name.log"
    timeout -k 5 "$LIMIT" env "$@" >"$out" 2>"$err"
    rc=$?
    lines=$(wc -l <"$err")
    if ((rc != want_rc)); then
        fail "$name" "exit status $rc, want $want_rc" "$err"
    elif [[ $(cat "$out") != "$want_out" ]]; then
        fail "$name" "stdout is '$(head -c 200 "$out")', want '$want_out'" "$err"
    elif ((lines != want_lines)); then
        fail "$name" "$lines line(s) on stderr, want $want_lines" "$err"
    elif [[ -n $re ]] && ! head -n 1 "$err" | grep -Eq -- "$re"; then
        fail "$name" "stderr does not match /$re/" "$err"
    else
        pass "$name"
    fi
}

BAD="$CONF/bad-action.conf"
BAD_RE="^naglefix: $BAD:3: .*'fastest'"
ECHO7=(/bin/sh -c 'echo hello; exit 7')
sys expect_run config-bad-file-one-line 7 hello "$BAD_RE" 1 "$P" NAGLEFIX_CONF="$BAD" "${ECHO7[@]}"
sys expect_run config-bad-file-one-line-echo 0 "hello world" "$BAD_RE" 1 "$P" NAGLEFIX_CONF="$BAD" /bin/echo hello world
sys expect_run config-missing-file 7 hello "^naglefix: $TMP/missing.conf: No such file or directory$" 1 \
    "$P" NAGLEFIX_CONF="$TMP/missing.conf" "${ECHO7[@]}"
sys expect_run config-directory 7 hello "^naglefix: $CONF: Is a directory$" 1 "$P" NAGLEFIX_CONF="$CONF" "${ECHO7[@]}"
sys expect_run config-bad-mode 7 hello "^naglefix: NAGLEFIX_MODE: unknown action 'fastest'" 1 \
    "$P" NAGLEFIX_MODE=fastest "${ECHO7[@]}"
sys expect_run config-good-file-silent 7 hello "" 0 "$P" NAGLEFIX_CONF="$CONF/good.conf" "${ECHO7[@]}"
# Once per process tree: sh and the three programs it starts (two children,
# one grandchild, an exec) read the same bad file; the first says it.
TREE7=(/bin/sh -c '/bin/sh -c :; /bin/sh -c "/bin/sh -c :"; /bin/echo hello; exec /bin/sh -c "exit 7"')
sys expect_run config-bad-file-once-per-tree 7 hello "$BAD_RE" 1 "$P" NAGLEFIX_CONF="$BAD" "${TREE7[@]}"
sys expect_run config-bad-mode-once-per-tree 7 hello "^naglefix: NAGLEFIX_MODE: unknown action 'fastest'" 1 \
    "$P" NAGLEFIX_MODE=fastest "${TREE7[@]}"
# ... but a descendant given another bad file says its own (2 lines).
# shellcheck disable=SC2016 # for the inner shell to expand
sys expect_run config-other-error-said-again 7 hello "$BAD_RE" 2 "$P" NAGLEFIX_CONF="$BAD" \
    /bin/sh -c 'NAGLEFIX_CONF="$0" /bin/sh -c :; /bin/sh -c :; echo hello; exit 7' "$TMP/missing.conf"
sys expect_run config-empty-log-var-silent 7 hello "" 0 "$P" NAGLEFIX_LOG= NAGLEFIX_MODE=nodelay "${ECHO7[@]}"
# A NUL byte ends no line silently: one message naming it, the program unchanged.
printf 'default nodelay\0garbage\n' >"$TMP/nul.conf"
NUL_RE="^naglefix: $TMP/nul.conf:1: NUL byte at column 16$"
sys expect_run config-nul-byte-one-line 7 hello "$NUL_RE" 1 "$P" NAGLEFIX_CONF="$TMP/nul.conf" "${ECHO7[@]}"
t config-nul-byte-stalls                   "$P" NAGLEFIX_CONF="$TMP/nul.conf" "$R" stall
# A bad line's bytes reach the message escaped: no escape sequence on a terminal.
printf '*:80 \033]0;x\007fast\n' >"$TMP/escape.conf"
sys expect_run config-error-escapes-bytes 7 hello \
    "^naglefix: $TMP/escape.conf:1: unknown action '\\\\x1b]0;x\\\\x07fast'" 1 \
    "$P" NAGLEFIX_CONF="$TMP/escape.conf" "${ECHO7[@]}"
# A bad file or mode leaves every socket alone, whatever else is configured.
t config-bad-file-stalls                   "$P" NAGLEFIX_CONF="$BAD" NAGLEFIX_MODE=nodelay "$R" stall
t config-bad-mode-stalls                   "$P" NAGLEFIX_CONF="$CONF/port-range.conf" NAGLEFIX_MODE=fastest "$R" stall
t config-missing-file-stalls               "$P" NAGLEFIX_CONF="$TMP/missing.conf" NAGLEFIX_MODE=nodelay "$R" stall

# NAGLEFIX_LOG=path with %p: the message goes to a file named with the pid.
check_log_pid() {
    local name=config-log-file-pid dir="$TMP/logpid" pid files
    mkdir -p "$dir"
    # shellcheck disable=SC2016 # $$ is the shell's pid: it is the one logging
    expect_run "$name-run" 0 "" "" 0 "$P" NAGLEFIX_CONF="$BAD" NAGLEFIX_LOG="$dir/x-%p.log" \
        /bin/sh -c 'echo $$ >"$0"' "$dir/pid"
    pid=$(cat "$dir/pid" 2>/dev/null)
    files=$(cd "$dir" && echo x-*.log)
    if [[ $files != "x-$pid.log" ]]; then
        fail "$name" "log files '$files', want 'x-$pid.log'"
    elif [[ $(wc -l <"$dir/$files") != 1 ]] || ! grep -Eq -- "$BAD_RE" "$dir/$files"; then
        fail "$name" "the log does not hold the one message" "$dir/$files"
    else
        pass "$name"
    fi
}
sys check_log_pid config-log-file-pid
# An unusable log: said once on stderr, then the message there too.
sys expect_run config-log-unusable 7 hello "^naglefix: cannot write log $TMP: .*; using stderr$" 2 \
    "$P" NAGLEFIX_CONF="$BAD" NAGLEFIX_LOG="$TMP" "${ECHO7[@]}"

# ---- the naglefix command ------------------------------------------------------

expect_run cli-check-good 0 "$CONF/good.conf: ok, 6 rules, default pass" "" 0 "$NAGLEFIX" check "$CONF/good.conf"
expect_run cli-check-bad 1 "" "$BAD_RE" 1 "$NAGLEFIX" check "$BAD"
expect_run cli-check-env 1 "" "$BAD_RE" 1 NAGLEFIX_CONF="$BAD" "$NAGLEFIX" check
expect_run cli-check-missing 1 "" "^naglefix: $TMP/missing.conf: " 1 "$NAGLEFIX" check "$TMP/missing.conf"
expect_run cli-check-nul-byte 1 "" "$NUL_RE" 1 "$NAGLEFIX" check "$TMP/nul.conf"
expect_run cli-check-none 0 "NAGLEFIX_CONF=none: no file is read, so no rule: every socket passes" "" 0 \
    NAGLEFIX_CONF=none "$NAGLEFIX" check
# check says every error of the file, each FILE:LINE: reason in the order of
# the lines, then exits 1; the first is the library's own message.
FOUR="$CONF/bad-four-errors.conf"
expect_run cli-check-every-error 1 "" "^naglefix: $FOUR:3: 'bogus' is neither" 4 "$NAGLEFIX" check "$FOUR"
check_every_error_lines() {
    local name=cli-check-every-error-lines want got
    selected "$name" || return 0
    want=$(printf 'naglefix: %s:%s\n' "$FOUR" 3 "$FOUR" 4 "$FOUR" 6 "$FOUR" 7)
    got=$("$NAGLEFIX" check "$FOUR" 2>&1 | sed 's/^\(naglefix: [^:]*:[0-9]*\):.*/\1/')
    if [[ $got == "$want" ]]; then pass "$name"; else fail "$name" "lines '$got'"; fi
}
check_every_error_lines
check_first_is_librarys() {
    local name=cli-check-first-error-is-the-librarys lib chk
    selected "$name" || return 0
    lib=$(env "$P" NAGLEFIX_CONF="$FOUR" /bin/true 2>&1)
    chk=$("$NAGLEFIX" check "$FOUR" 2>&1 | head -n 1)
    if [[ -n $lib && $lib == "$chk" ]]; then pass "$name"; else fail "$name" "library '$lib', check '$chk'"; fi
}
sys check_first_is_librarys cli-check-first-error-is-the-librarys
# NAGLEFIX_MODE as the library takes it: an action it refuses is an error
# (beside the file's), one it takes the default check reports.
MODE_RE="^naglefix: NAGLEFIX_MODE: unknown action 'fastest' \(expected "
expect_run cli-check-env-mode-refused 1 "" "$MODE_RE" 1 NAGLEFIX_MODE=fastest "$NAGLEFIX" check "$CONF/good.conf"
expect_run cli-check-env-mode-refused-no-file 1 "" "$MODE_RE" 1 \
    NAGLEFIX_CONF=none NAGLEFIX_MODE=fastest "$NAGLEFIX" check
expect_run cli-check-env-mode-and-file-errors 1 "" "^naglefix: $FOUR:3: " 5 \
    NAGLEFIX_MODE=fastest "$NAGLEFIX" check "$FOUR"
expect_run cli-check-env-mode-default 0 "$CONF/good.conf: ok, 6 rules, default nodelay (NAGLEFIX_MODE)" "" 0 \
    NAGLEFIX_MODE=nodelay "$NAGLEFIX" check "$CONF/good.conf"
expect_run cli-check-env-mode-no-file 0 \
    "NAGLEFIX_CONF=none: no file is read, so no rule: every socket gets nodelay (NAGLEFIX_MODE)" "" 0 \
    NAGLEFIX_CONF=none NAGLEFIX_MODE=nodelay "$NAGLEFIX" check
expect_run cli-check-env-mode-empty-unset 0 "$CONF/good.conf: ok, 6 rules, default pass" "" 0 \
    NAGLEFIX_MODE= "$NAGLEFIX" check "$CONF/good.conf"
# 1 MiB is the most a policy file may hold: the message says so, for check
# and the library alike; a file of exactly 1 MiB (comments) is taken.
head -c $((1 << 20)) /dev/zero | tr '\0' '#' >"$TMP/1mib.conf"
{ cat "$TMP/1mib.conf"; echo; } >"$TMP/over-1mib.conf"
BIG_RE="^naglefix: $TMP/over-1mib.conf: larger than 1 MiB, the most a policy file may hold$"
expect_run cli-check-over-1-mib 1 "" "$BIG_RE" 1 "$NAGLEFIX" check "$TMP/over-1mib.conf"
expect_run cli-check-1-mib 0 "$TMP/1mib.conf: ok, 0 rules, default pass" "" 0 "$NAGLEFIX" check "$TMP/1mib.conf"
sys expect_run config-over-1-mib 7 hello "$BIG_RE" 1 "$P" NAGLEFIX_CONF="$TMP/over-1mib.conf" "${ECHO7[@]}"
if [[ -e /etc/naglefix.conf ]]; then
    echo "SKIP cli-check-no-default-file: /etc/naglefix.conf exists"
else
    expect_run cli-check-no-default-file 0 \
        "/etc/naglefix.conf: no such file, so no rule: every socket passes" "" 0 "$NAGLEFIX" check
fi

expect_run cli-command-not-found 127 "" "^naglefix: nftest-no-such-command: " 1 \
    "$NAGLEFIX" -- nftest-no-such-command
expect_run cli-command-not-executable 126 "" "^naglefix: $BAD: " 1 "$NAGLEFIX" -- "$BAD"
sys expect_run cli-exit-status 7 hello "" 0 "$NAGLEFIX" -m nodelay -- "${ECHO7[@]}"
# A policy the library would refuse is refused before anything starts:
# one line, status 125, and the program never ran (it would have made RAN).
# shellcheck disable=SC2016 # for the inner shell to expand
MARK7=(/bin/sh -c ': >"$0"; echo hello; exit 7')
refused() {
    local name=$1 re=$2 ran="$TMP/$1.ran"
    shift 2
    selected "$name" || return 0
    expect_run "$name" 125 "" "$re.*; /bin/sh not started$" 1 "$@" "${MARK7[@]}" "$ran"
    if [[ -e $ran ]]; then fail "$name-not-run" "the program ran"; else pass "$name-not-run"; fi
}
refused cli-bad-config-refused "$BAD_RE" "$NAGLEFIX" -c "$BAD" --
refused cli-missing-config-refused "^naglefix: $TMP/missing.conf: No such file or directory" \
    "$NAGLEFIX" -c "$TMP/missing.conf" --
refused cli-env-bad-config-refused "$BAD_RE" NAGLEFIX_CONF="$BAD" "$NAGLEFIX" --
refused cli-env-bad-mode-refused "^naglefix: NAGLEFIX_MODE: unknown action 'fastest'" \
    NAGLEFIX_MODE=fastest "$NAGLEFIX" -c "$CONF/good.conf" --
refused cli-bad-config-with-log-refused "$BAD_RE" "$NAGLEFIX" -l "$TMP/never.log" -c "$BAD" --
# -l stderr: the library's messages on stderr (a bad file given to a
# program started later, which the command could not check).
# shellcheck disable=SC2016
sys expect_run cli-log-stderr 7 hello "$BAD_RE" 1 "$NAGLEFIX" -l stderr -- \
    /bin/sh -c 'NAGLEFIX_CONF="$0" exec /bin/sh -c "echo hello; exit 7"' "$BAD"
sys expect_run cli-conf-none-silent 7 hello "" 0 "$NAGLEFIX" -c none -- "${ECHO7[@]}"
# ---- a program the library cannot enter: said once, and it runs -----------

# reach_re PATH WHY: the line naglefix says for a program at PATH that the
# library cannot enter for WHY.
reach_re() {
    printf '^naglefix: pid [0-9]+ runs %s, which the library cannot enter \\(%s\\): its sockets are left as they are; `naglefix fix [0-9]+` sets TCP_NODELAY' "$1" "$2"
}
# cc -static: no loader; without arguments, its usage, status 2. Another
# build's (musl, ASan) may lack it: then one made here.
STATIC="$BT/static_client"
[[ -x $STATIC ]] || STATIC="$TMP/static_client"
[[ -x $STATIC ]] || ${CC:-cc} -static -O2 -o "$STATIC" "$TOP/tests/fix/static_client.c" >"$LOGS/static_client.log" 2>&1
expect_run cli-static-said 2 "" "$(reach_re "$STATIC" "statically linked")" 2 "$NAGLEFIX" -m nodelay -- "$STATIC"
expect_run cli-static-found-in-path 2 "" "$(reach_re "$STATIC" "statically linked")" 2 \
    PATH="${STATIC%/*}:/usr/bin:/bin" "$NAGLEFIX" -m nodelay -- static_client
printf '#!%s\n' "$STATIC" >"$TMP/static.sh"
printf '#!/bin/sh\necho hello; exit 7\n' >"$TMP/dynamic.sh"
chmod +x "$TMP/static.sh" "$TMP/dynamic.sh"
expect_run cli-static-interpreter-said 2 "" "$(reach_re "$TMP/static.sh" "$STATIC: statically linked")" 2 \
    "$NAGLEFIX" -m nodelay -- "$TMP/static.sh"
sys expect_run cli-dynamic-script-silent 7 hello "" 0 "$NAGLEFIX" -m nodelay -- "$TMP/dynamic.sh"
# A shell the library enters starts it twice: its library says it, once
# (the first line; then the program's two usage lines).
# shellcheck disable=SC2016 # for the inner shell to expand
sys expect_run cli-static-child-said-once 7 "" "$(reach_re "$STATIC" "statically linked")" 3 \
    "$NAGLEFIX" -m nodelay -- /bin/sh -c '"$0"; "$0"; exit 7' "$STATIC"
# shellcheck disable=SC2016
sys expect_run cli-static-exec-said 2 "" "$(reach_re "$STATIC" "statically linked")" 2 \
    "$NAGLEFIX" -m nodelay -- /bin/sh -c 'exec "$0"' "$STATIC"
# Set-user-ID to another user (nobody): a secure exec, in which the loader
# ignores the library's path. (Root runs it: its own exec would not be.)
SUID="$BT/suid_true"
if [[ $(id -u) != 0 ]]; then
    selected cli-setuid-said && skip cli-setuid-said "not root: cannot make a set-user-ID copy for nobody"
elif python3 -c 'import os, sys; sys.exit(not os.statvfs(sys.argv[1]).f_flag & os.ST_NOSUID)' "$BT"; then
    selected cli-setuid-said && skip cli-setuid-said "$BT is on a nosuid mount: set-user-ID counts for nothing"
else
    rm -f "$SUID" && cp /bin/true "$SUID" && chown 65534 "$SUID" && chmod 4755 "$SUID"
    expect_run cli-setuid-said 0 "" "$(reach_re "$SUID" "set-user-ID")" 1 "$NAGLEFIX" -m nodelay -- "$SUID"
    rm -f "$SUID"
fi

t cli-mode-nodelay-fast                    "$NAGLEFIX" -m nodelay -- "$R" fast
t cli-conf-port-range-fast                 "$NAGLEFIX" -c "$CONF/port-range.conf" "$R" fast
t cli-conf-other-destination-stalls        "$NAGLEFIX" --config "$CONF/other-destination.conf" "$R" stall
t cli-mode-pass-overrides-default-stalls   "$NAGLEFIX" -c "$CONF/default-nodelay.conf" --mode pass "$R" stall
t cli-mode-nodelay-accept-on               "$NAGLEFIX" -m nodelay "$A" on accept4
t cli-no-options-stalls                    "$NAGLEFIX" "$R" stall

# Relative -c and -l paths are the caller's, even if the program moves.
# shellcheck disable=SC2016 # for the inner shell to expand
IN_DIR=(/bin/sh -c 'cd "$0" && exec "$@"')
# shellcheck disable=SC2016
sys t cli-relative-conf "${IN_DIR[@]}" "$CONF" "$NAGLEFIX" -c port-range.conf -- \
    /bin/sh -c 'cd / && exec "$0" fast' "$R"
check_relative_log() {
    local name=cli-relative-log dir="$TMP/rel"
    mkdir -p "$dir"
    # shellcheck disable=SC2016 # for the inner shell to expand
    expect_run "$name-run" 0 "" "" 0 "${IN_DIR[@]}" "$dir" "$NAGLEFIX" -l rel.log -- \
        /bin/sh -c 'cd / && NAGLEFIX_CONF="$0" exec true' "$BAD"
    if [[ ! -f $dir/rel.log ]]; then
        fail "$name" "no $dir/rel.log"
    elif ! grep -Eq -- "$BAD_RE" "$dir/rel.log"; then
        fail "$name" "rel.log does not hold the message" "$dir/rel.log"
    else
        pass "$name"
    fi
}
sys check_relative_log cli-relative-log

# An existing LD_PRELOAD is kept, after the library. LIBM is a harmless
# library to preload; ALIKE is a copy of it whose path contains the
# library's path, which is not the library.
LIBM=""
for f in /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/x86_64-linux-gnu/libm.so.6 /lib64/libm.so.6 \
    /usr/lib64/libm.so.6 /lib/*/libm.so.6 /usr/lib/*/libm.so.6; do
    # (one this build's programs can load: not glibc's into a musl build)
    [[ -f $f ]] && env LD_PRELOAD="$f" "$NAGLEFIX" --version >/dev/null 2>&1 && { LIBM=$f; break; }
done
# shellcheck disable=SC2016 # the command's LD_PRELOAD, not ours
SHOW_PRELOAD=(/bin/sh -c 'printf "%s\n" "$LD_PRELOAD"')
if [[ -z $LIBM ]]; then
    selected cli-keeps-preload &&
        skip cli-keeps-preload "no libm.so.6 found that this build's programs can preload"
else
    ALIKE="$TMP$LIB.orig"
    mkdir -p "$(dirname "$ALIKE")" && cp "$LIBM" "$ALIKE"
    sys expect_run cli-keeps-preload 0 "$LIB:$LIBM" "" 0 LD_PRELOAD="$LIBM" "$NAGLEFIX" -m nodelay "${SHOW_PRELOAD[@]}"
    t cli-keeps-preload-fast               LD_PRELOAD="$LIBM" "$NAGLEFIX" -m nodelay "$R" fast
    sys expect_run cli-preload-not-doubled 0 "$LIB" "" 0 LD_PRELOAD="$LIB" "$NAGLEFIX" -m nodelay "${SHOW_PRELOAD[@]}"
    sys expect_run cli-preload-similar-path 0 "$LIB:$ALIKE" "" 0 LD_PRELOAD="$ALIKE" "$NAGLEFIX" -m nodelay \
        "${SHOW_PRELOAD[@]}"
    t cli-preload-similar-path-fast        LD_PRELOAD="$ALIKE" "$NAGLEFIX" -m nodelay "$R" fast
fi

finish
