#!/usr/bin/env bash
# t_watch_churn.sh: `naglefix watch` names every holder on a busy host
# whose namespaces come and go (issue 35). Root only (namespaces,
# CAP_NET_RAW); without javac every check is a SKIP.
#
# For the whole test, in the background: CHURN (default 50) network
# namespaces nfq<PID>-N made (ip netns add, one batch) and removed half a
# second later, every second; a busy loop pinned to the last CPU; and
# other programs' stalls in bursts, as a test suite's or a service's
# clients start together: every second BURST (default 20; 0 none) split
# clients of 13 rounds at once, each a new connection whose holder watch
# names too, against a second EchoServer: naming a burst's holders must
# not hold watch's loop till the churn client has ended.
# Watch then opens and closes a capture in each (each open and close
# waits for an RCU grace period in the kernel). RUNS times (default 3;
# `RUNS=10` for the issue's measure): watch --json -t 7 over every
# namespace, and while it runs a Java LegacyClient making 13 split
# rounds (12 stalls of 44 ms) against an EchoServer on this host's
# loopback. Checked in each run: the row of the client's stalls names the
# client (its pid, its command): a stall judged late, after its client
# ended, has no process left to name, so watch's loop must not wait on
# the namespaces' grace periods nor on a census of them (that runs in a
# thread of its own, src/cli/watch/watch_scanwork.c).
# The issue's measure adds a fork load beside it: RUNS=10 with two
# `nice -n 19 sh -c 'while :; do /bin/true; done'` running (the test does
# not start them).
# Every namespace the test made is removed at its end, on failure too.
# Env: RUNS, CHURN, BURST. Output in build/watch-churn/.
# Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../programs/common.sh
. "$HERE/../programs/common.sh"
export LC_ALL=C
clean_env
RUNS=${RUNS:-3}
CHURN=${CHURN:-50}
BURST=${BURST:-20}
W=$TOP/build/watch-churn
NAME="watch names the holder under namespace churn and a busy core"
rm -rf "$W"
mkdir -p "$W"
need_built make "$NAGLEFIX"

if [[ $EUID -ne 0 ]]; then
    skip "$NAME" "needs root (namespaces, CAP_NET_RAW)"
    finish
    exit
fi
if ! command -v javac >/dev/null || ! compile_java; then
    skip "$NAME" "no javac"
    finish
    exit
fi
selected "$NAME" || { finish; exit; }

BG=()
batch() { # batch add|del: every namespace of the test, in one ip
    local i
    for ((i = 0; i < CHURN; i++)); do echo "netns $1 nfq$$-$i"; done | ip -force -batch - 2>/dev/null
}
on_exit() {
    local p
    # the churn loop ends after its ip in hand (a KILL would leave that ip
    # adding namespaces after the del below)
    [[ -n ${CHURN_PID:-} ]] && kill -TERM "$CHURN_PID" 2>/dev/null && wait "$CHURN_PID" 2>/dev/null
    for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait "${BG[@]}" 2>/dev/null
    batch del
    cleanup # common.sh's: the server
}
trap on_exit EXIT

churn() {
    trap 'exit 0' TERM # run once the command in hand has ended
    while :; do
        batch add
        sleep 0.5
        batch del
        sleep 0.5
    done
}
churn >/dev/null 2>&1 &
CHURN_PID=$!
taskset -c "$(($(nproc) - 1))" sh -c 'while :; do :; done' &
BG+=($!)

cc -O2 -o "$W/split_client" "$HERE/../programs/split_client.c" ||
    { fail "$NAME" "cc split_client.c"; finish; exit; }
launch_server echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"
launch_server churn-burst java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"
server_port echo ||
    { fail "$NAME" "the EchoServer did not start" "$LEGACY_BUILD/echo.err"; finish; exit; }
port=$SERVER_PORT
server_port churn-burst ||
    { fail "$NAME" "the second EchoServer did not start" "$LEGACY_BUILD/churn-burst.err"; finish; exit; }
burst_port=$SERVER_PORT

bursts() {
    local k
    while :; do
        for ((k = 0; k < BURST; k++)); do
            nice -n 19 "$W/split_client" 127.0.0.1 "$burst_port" 13 >/dev/null 2>&1 &
        done
        sleep 1
    done
}
if ((BURST > 0)); then
    bursts &
    BG+=($!)
fi

# judged FILE PID: true once watch's FILE holds a wire_stall line of the
# client's server, or watch (PID) has ended. A line at a time (grep): jq
# fails on the whole file while the line being written is cut short, and
# the burst clients' lines come all the time.
judged() {
    grep -q "^{\"event\":\"wire_stall\",.*\"peer\":\"127\.0\.0\.1:$port\"" "$1" 2>/dev/null ||
        gone "$2"
}

# capturing PID: watch (timeout PID's child) has a packet socket bound to
# a protocol in this namespace (its capture here open)
capturing() {
    local w ino
    w=$(pgrep -P "$1" | head -n 1)
    [[ -n $w ]] || return 1
    for ino in $(find "/proc/$w/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n'); do
        awk -v ino="$ino" 'NR > 1 && $9 == ino && $4 != "0000" { f = 1 } END { exit !f }' /proc/net/packet &&
            return 0
    done
    return 1
}

named=0
for ((r = 1; r <= RUNS; r++)); do
    timeout -k 5 60 "$NAGLEFIX" watch --json -t 7 >"$W/watch.$r.out" 2>"$W/watch.$r.err" &
    wpid=$!
    # its capture here open (the namespaces' follow within a scan, while
    # the client's JVM starts)
    wait_until 5 capturing "$wpid"
    env -u LD_PRELOAD java -cp "$LEGACY_BUILD" LegacyClient 127.0.0.1 "$port" 13 split \
        >"$W/client.$r.out" 2>&1 &
    cpid=$!
    wait "$cpid"
    # its first stall line judged (within -t 7 of its start, as before), and
    # the rest of the 7 s not waited out: the busy core is everyone's
    wait_until 7 judged "$W/watch.$r.out" "$wpid" && kill -INT "$wpid" 2>/dev/null
    wait "$wpid"
    line=$(jq -c --arg peer "127.0.0.1:$port" 'select(.event == "wire_stall" and .peer == $peer)' \
        "$W/watch.$r.out" 2>/dev/null | head -n 1)
    pid=$(jq -r '.pid // 0' <<<"${line:-{\}}")
    prog=$(jq -r '.prog // .process // ""' <<<"${line:-{\}}")
    if [[ $pid == "$cpid" && $prog == *LegacyClient* ]]; then
        named=$((named + 1))
    else
        echo "run $r: '${line:-no stall line}' (client $cpid: $(cat "$W/client.$r.out"))"
    fi
done
if ((named == RUNS)); then
    pass "$NAME: named in $named of $RUNS runs ($CHURN namespaces made and removed a second)"
else
    fail "$NAME" "named in $named of $RUNS runs" "$W/watch.$RUNS.err"
fi
finish
