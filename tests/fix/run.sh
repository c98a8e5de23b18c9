#!/usr/bin/env bash
# run.sh - naglefix fix PID (`make test-fix`): unmodified runtimes and a
# static C program, started bare and left running, fixed from outside.
# Each split-writing client (Java, Python over IPv4 and IPv6, Node, Perl,
# the static C client; clients of tests/fix in the legacy harness's manner,
# printing every round) must stall before (median >= 30 ms) and, after
# `naglefix fix -m nodelay PID`, the rounds begun after it must be fast
# (median and p99 < 5 ms, none held: >= 40 ms) with every echoed byte as
# sent (the clients check their echoes); memccp's stores, timed from
# memcached's side, none held after. Servers (Python's http.server, Java's
# HttpServer) fixed through their listener answer new connections < 5 ms,
# and a connection accepted after the fix has TCP_NODELAY from the
# listener. Then --follow, --dry-run, --undo, nf_fix_inode/nf_fix_listener,
# --json, -c rules and sides, and the failures (another user, ENOSYS under
# a seccomp filter, our own descriptor limit, a process gone, a thread's
# id, a PID reused, a process under the library, a program that turns
# TCP_NODELAY off itself), another network namespace, no policy file
# (nodelay, said), a process with no TCP socket (said, exit 6), fix and
# --undo as the process's own user with no variable (the record in a
# directory of its own, one another user made refused), the removal of
# records that can no longer be undone, and --follow's cost on 1,000
# connections.
# The tests' own reading of TCP_NODELAY (nodelay_of.c, pidfd_getfd) checks
# what fix says it did. Ends with "N passed, M failed".
# This file holds the set-up every check shares (helpers, the programs
# built, the servers); the checks are in t_*.sh by concept, sourced in
# the order at the end; t_usage.sh, fix's usage (tests/usage.sh), runs as
# a part of its own.
# T=pattern runs only the checks whose name it matches (tests/lib.sh).
set -u
export LC_ALL=C
SERVER_LIFETIME=${SERVER_LIFETIME:-400} # the servers serve the whole suite
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../programs/common.sh
. "$HERE/../programs/common.sh"
clean_env NAGLEFIX_STATE_DIR
W="$TOP/build/fix"
mkdir -p "$W"
export NAGLEFIX_STATE_DIR="$W/state" # fix's records: removed at the end
rm -f "$W"/*.out "$W"/*.fix "$W"/*.err
need_built make "$NAGLEFIX"

STALL_MIN_MS=30 # a median of rounds behind Nagle + delayed ACK (~44 ms here)
FAST_MAX_MS=5   # a median of rounds that do not stall (~0.1 ms)
HELD_MIN_MS=40  # no single round held by Nagle takes less: the delayed-ACK
                # timer's minimum (TCP_DELACK_MIN); a shorter slow round is
                # the machine (a JIT, a collector, another worker), not a stall
ROUNDS=${ROUNDS:-800}
BOUND_MS=150    # --follow: rescans every 100 ms; 50 ms for a loaded machine
H=127.0.0.1
FIX=("$NAGLEFIX" fix)

CLIENT_PIDS=()
TEST_USER=""
TEST_UID=""
fix_cleanup() {
    local p
    for p in "${CLIENT_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    [[ -n $TEST_USER ]] && userdel -f "$TEST_USER" 2>/dev/null
    [[ -n $TEST_UID ]] && rm -rf "/tmp/naglefix-$TEST_UID"
    rm -rf "$W/state"
    cleanup # common.sh's: the servers
}
trap fix_cleanup EXIT

# ---- helpers ------------------------------------------------------------

# make_test_user: a user without rights (no home, no shell), once: sets
# TEST_USER and TEST_UID; status 1 (why in $W/useradd.err) if useradd fails.
make_test_user() {
    [[ -n $TEST_USER ]] && return 0
    useradd -M -r -s /usr/sbin/nologin "nfix$$" 2>"$W/useradd.err" || return 1
    TEST_USER=nfix$$
    TEST_UID=$(id -u "$TEST_USER")
    rm -rf "/tmp/naglefix-$TEST_UID" # a directory of an earlier user of this uid
}

# start_client NAME CMD...: CMD in the background (stdin /dev/null), its
# stdout in $W/NAME.out; waits up to 15 s for its "pid N" line and sets
# PID (the client's own pid, not a wrapper's). Status 1 if none came.
start_client() {
    local name=$1 i
    shift
    PID=""
    (exec timeout -k 5 90 "$@" </dev/null >"$W/$name.out" 2>"$W/$name.err") &
    CLIENT_PIDS+=("$!")
    for ((i = 0; i < 150; i++)); do
        PID=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$W/$name.out" 2>/dev/null | head -n 1)
        [[ -n $PID ]] && return 0
        sleep 0.1
    done
    echo "start_client: $name printed no pid (see $W/$name.err)" >&2
    return 1
}

# rounds NAME: the number of rounds NAME has printed.
rounds() { grep -c '^round ' "$W/$1.out"; }

# wait_rounds NAME N: until NAME has printed N rounds (at most 20 s).
wait_rounds() {
    local i
    for ((i = 0; i < 200; i++)); do
        (($(rounds "$1") >= $2)) && return 0
        grep -q '^BAD' "$W/$1.out" && return 1
        sleep 0.1
    done
    return 1
}

# segs_sent PID PORT N: true once the connection of PID to PORT has sent N
# data segments or more (TCP_INFO's data_segs_out, read by ss).
segs_sent() {
    local n
    n=$(ss -Htinp state established "( dport = :$2 )" 2>/dev/null | awk -v p="pid=$1," '
        index($0, p) { getline; if (match($0, /data_segs_out:[0-9]+/)) print substr($0, RSTART + 14, RLENGTH - 14); exit }')
    ((${n:-0} >= $3))
}

# wait_done NAME: until NAME has printed "done" or a BAD line (at most 30 s).
wait_done() {
    wait_until 30 grep -q '^done\|^BAD' "$W/$1.out"
    grep -q '^done' "$W/$1.out"
}

# stat_rounds NAME FROM TO: "median max n p99" of the rounds FROM..TO (index).
stat_rounds() {
    awk -v a="$2" -v b="$3" '$1 == "round" && $2 >= a && $2 <= b { print $3 }' "$W/$1.out" |
        sort -g | awk '{ t[NR] = $1 } END {
            if (!NR) { print "NA NA 0"; exit }
            m = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            p = int(0.99 * NR); if (p < 0.99 * NR) p++
            printf "%.3f %.3f %d %.3f\n", m, t[NR], NR, t[p] }'
}

# ge A B / lt A B: decimal comparisons.
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "NA" && a + 0 >= b + 0) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "NA" && a + 0 < b + 0) }'; }

# nodelay PID INODE: TCP_NODELAY (0/1) of the socket INODE of PID, as the
# tests' own nodelay_of reads it; "none" if PID holds no such socket.
nodelay() {
    local v
    v=$("$W/nodelay_of" "$1" | awk -v i="$2" '$2 == i { print $3 }')
    echo "${v:-none}"
}

# check_fixed NAME: NAME stalled before the fix, and the rounds started
# after it are fast (median), fewer than 1% of them as long as a held
# round (p99: a loaded machine's hiccup may reach 50 ms; a socket the fix
# missed holds every round), and all intact. FIXAT is the number of rounds printed when
# `naglefix fix` returned (set by fix_running).
check_fixed() {
    local name=$1 before after
    read -r before _ _ < <(stat_rounds "$name" 1 $((PRE - 1)))
    if ! wait_done "$name"; then
        fail "$name: ran to the end, every echo intact" "$(grep -m1 '^BAD' "$W/$name.out")" "$W/$name.err"
        return
    fi
    read -r amed amax an ap99 < <(stat_rounds "$name" $((FIXAT + 1)) 999999)
    if ! ge "$before" "$STALL_MIN_MS"; then
        fail "$name: stalls before the fix" "median $before ms, expected >= $STALL_MIN_MS"
    elif ((an < 100)); then
        fail "$name: rounds after the fix" "only $an"
    elif ! lt "$amed" "$FAST_MAX_MS" || ! lt "$ap99" "$HELD_MIN_MS"; then
        fail "$name: rounds after the fix < $FAST_MAX_MS ms (median), under 1% as long as a stall (p99 < $HELD_MIN_MS ms)" \
            "before: median $before ms; after: median $amed, p99 $ap99, max $amax ms over $an rounds"
    else
        pass "$name: $before ms a round before; after 'fix PID' $an rounds, median $amed, p99 $ap99, max $amax ms, every echo intact"
    fi
}

# fix_running NAME ARGS...: waits for NAME's PRE rounds, runs naglefix fix
# ARGS PID (output in $W/NAME.fix, status in FIXRC), sets FIXAT.
PRE=12
fix_running() {
    local name=$1
    shift
    wait_rounds "$name" "$PRE" || { FIXRC=99; return 1; }
    timeout 20 "${FIX[@]}" "$@" "$PID" >"$W/$name.fix" 2>&1
    FIXRC=$?
    FIXAT=$(rounds "$name")
}

# split_client NAME SERVERPORT CMD... (PORT in CMD replaced): the whole check.
split_client() {
    local name=$1 port=$2
    shift 2
    selected "$name" || return 0
    start_client "$name" "${@/#PORT/$port}" || { fail "$name: started" "" "$W/$name.err"; return; }
    fix_running "$name" -m nodelay
    if ((FIXRC != 0)) || ! grep -q 'connect .* set' "$W/$name.fix"; then
        fail "$name: naglefix fix PID" "exit $FIXRC" "$W/$name.fix"
        return
    fi
    check_fixed "$name"
}

# ---- build --------------------------------------------------------------

compile_java || fail "compile the legacy Java sources"
# the servers start while the programs build (a JVM's start is seconds here)
launch_server fix-java-echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"
launch_server fix-py-echo python3 "$HERE/echo_server.py" "$H" "$SERVER_LIFETIME"
launch_server fix-py-echo6 python3 "$HERE/echo_server.py" ::1 "$SERVER_LIFETIME"
launch_server fix-legacy-py python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME"
# The programs below are made in $W, which outlives the run, and remade
# only when stale (javac's start alone is a second or two here); the C
# ones also when this script, which holds their flags, is newer.
# stale OUT SRC...: true if OUT is missing or older than a SRC.
stale() {
    local out=$1 src
    shift
    for src; do [[ $out -nt $src ]] || return 0; done
    return 1
}
for src in "$HERE"/*.java; do
    cls=${src##*/}
    stale "$W/${cls%.java}.class" "$src" || continue
    timeout 120 javac -d "$W" "$HERE"/*.java || fail "compile tests/fix Java sources"
    break
done
for p in nodelay_of deny_getfd; do
    stale "$W/$p" "$HERE/$p.c" "$HERE/run.sh" || continue
    cc -std=gnu11 -Wall -Wextra -Werror -O2 -o "$W/$p" "$HERE/$p.c" || fail "build $p"
done
# api_check links the command's archives: built every run (a header of
# src/ it includes is not among stale's sources)
cc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -iquote "$TOP/src" -I"$TOP/include" \
    -o "$W/api_check" "$HERE/api_check.c" "$TOP/build/libnfcli.a" "$TOP/build/libnfbpf.a" \
    "$TOP/build/libnfcore.a" ||
    fail "build api_check"
if stale "$W/static_client" "$HERE/static_client.c" "$HERE/run.sh"; then
    cc -static -std=gnu11 -Wall -Wextra -Werror -O2 -o "$W/static_client" "$HERE/static_client.c" ||
        fail "build static_client (cc -static)"
fi

server_port fix-java-echo || exit 1
JPORT=$SERVER_PORT
server_port fix-py-echo || exit 1
PPORT=$SERVER_PORT
server_port fix-py-echo6 || exit 1
P6PORT=$SERVER_PORT
server_port fix-legacy-py || exit 1
LPORT=$SERVER_PORT

# fix's --help and usage errors (tests/usage.sh)
part t_usage.sh bash "$HERE/t_usage.sh"

# ---- the checks, by concept: each t_*.sh below, in this order ---------------

# shellcheck source-path=SCRIPTDIR source=t_runtimes.sh
. "$HERE/t_runtimes.sh" # every stalling client of each runtime, fixed while it runs; servers fixed through their listener
# shellcheck source-path=SCRIPTDIR source=t_follow.sh
. "$HERE/t_follow.sh" # --follow: connections made after the fix
# shellcheck source-path=SCRIPTDIR source=t_undo.sh
. "$HERE/t_undo.sh" # --dry-run, --undo, and a program's own setsockopt, which wins
# shellcheck source-path=SCRIPTDIR source=t_api.sh
. "$HERE/t_api.sh" # the functions watch --fix calls (nf_fix_inode, nf_fix_listener)
# shellcheck source-path=SCRIPTDIR source=t_json.sh
. "$HERE/t_json.sh" # --json
# shellcheck source-path=SCRIPTDIR source=t_conf.sh
. "$HERE/t_conf.sh" # -c CONF: rules and sides
# shellcheck source-path=SCRIPTDIR source=t_errors.sh
. "$HERE/t_errors.sh" # fix's failures, each said
# shellcheck source-path=SCRIPTDIR source=t_record.sh
. "$HERE/t_record.sh" # no policy, nothing to fix, the record's place and its removal
# shellcheck source-path=SCRIPTDIR source=t_context.sh
. "$HERE/t_context.sh" # a process under the library; one in another network namespace
# shellcheck source-path=SCRIPTDIR source=t_cgroups.sh
. "$HERE/t_cgroups.sh" # a service or a container: --unit NAME, --cgroup PATH
# shellcheck source-path=SCRIPTDIR source=t_cost.sh
. "$HERE/t_cost.sh" # the cost of --follow on 1,000 connections

finish
