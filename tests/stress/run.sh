#!/usr/bin/env bash
# run.sh - the stress tests: many connections and threads, a daemon that
# closes everything and forks twice, the highest descriptor numbers, and
# interposed calls from a signal handler. Each program re-executes itself
# without the library as its peer (or sink), which checks every byte.
# `make test-stress` builds everything first; this only runs.
#
# Prints "PASS name (seconds)", "FAIL name: why" with the tail of its log,
# or "SKIP name: why" (the program exited 77). Ends with "N passed,
# M failed".
# Every run is under `timeout`. Logs: build/tests/stress/logs/.
# T=pattern runs only the tests whose name it matches (tests/lib.sh).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P)
B="$TOP/build/tests/stress"
LIB=${NAGLEFIX_LIB:-$TOP/build/libnaglefix.so}
CONF="$TOP/tests/coalesce/conf"
LOGS="$B/logs"
LIMIT=${STRESS_TIMEOUT:-60}
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

scratch_dir nfstress
clean_env
need_built make "$LIB"
fresh_logs "$LOGS" log
note_etc_conf "it applies wherever a test sets no NAGLEFIX_CONF"

# t NAME [VAR=VALUE...] PROGRAM [ARG...]: runs one test under timeout in a
# clean environment plus the variables; PROGRAM is relative to $B.
t() {
    local name=$1 log="$LOGS/$1.log" rc start prog
    shift
    local -a vars=()
    selected "$name" || return 0
    while [[ $1 == *=* ]]; do vars+=("$1"); shift; done
    prog=$1
    shift
    if [[ ! -x $B/$prog ]]; then
        fail "$name" "$B/$prog is not built: run 'make test-stress'"
        return
    fi
    start=$EPOCHREALTIME
    (cd "$TMP" && timeout -k 5 "$LIMIT" env "${vars[@]}" "$B/$prog" "$@") >"$log" 2>&1
    rc=$?
    judge "$name" "$rc" "$start" "$log" "(deadlock?)" "$(grep -m1 '^FAIL' "$log" | cut -c1-200)"
}

P="LD_PRELOAD=$LIB"
START=$EPOCHREALTIME

# 1. 1,000 concurrent connections, 8 threads: every byte once, in order
t conns-no-shim                                       stress_conns 1000 8 32
t conns-coalesce   "$P" NAGLEFIX_MODE=coalesce        stress_conns 1000 8 128
t conns-audit      "$P" NAGLEFIX_MODE=audit NAGLEFIX_LOG="$TMP/audit-%p.log" \
                                                      stress_conns 1000 8 128

# 2. a daemon: close_range + close() of everything, fork, setsid, fork
t daemon-coalesce  "$P" NAGLEFIX_MODE=coalesce NAGLEFIX_CONF="$CONF/flush-2ms.conf" \
                                                      stress_daemon run

# 3. the highest descriptors (hard RLIMIT_NOFILE - 1), and above 65,536 if
#    allowed (tests/vm runs above64k on a machine where it is)
for v in top dup2 above64k; do
    t "highfd-$v"  "$P" NAGLEFIX_MODE=coalesce NAGLEFIX_CONF="$CONF/flush-1s.conf" \
                                                      stress_highfd "$v"
done

# 4. interposed calls from a SIGALRM handler (every 100 us) interrupting writes
for v in other same quiet; do
    t "signal-no-shim-$v"                             stress_signal "$v" 1
    t "signal-nodelay-$v"  "$P" NAGLEFIX_MODE=nodelay  stress_signal "$v" 1
    t "signal-coalesce-$v" "$P" NAGLEFIX_MODE=coalesce stress_signal "$v" 2
    t "signal-audit-$v"    "$P" NAGLEFIX_MODE=audit NAGLEFIX_LOG="$TMP/audit-%p.log" \
                                                      stress_signal "$v" 2
done

echo "time: $(elapsed "$START") s"
finish
