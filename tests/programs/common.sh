# common.sh: shared helpers for the naglefix legacy-program tests.
# Source it from a test script (bash, set -u). Provides:
#   compile_java                 javac tests/programs/*.java into build/legacy/ (idempotent)
#   start_server NAME CMD...     start a server without LD_PRELOAD; sets SERVER_PORT
#   launch_server NAME CMD...    start_server's start alone, not waiting for the port
#   server_port NAME             start_server's wait alone: sets SERVER_PORT (of a
#                                server launch_server started; several start side by side)
#   stop_server NAME             close that server's stdin and wait for it to exit
#   port_or_gone FILE PID        true once FILE begins "PORT <n>" or PID has gone
#   run_client MODE CMD...       run a client (MODE none = no shim); prints its median ms
#   assert_ms_ge NAME VALUE MS / assert_ms_lt NAME VALUE MS
#   and tests/lib.sh's: pass NAME, fail NAME WHY, finish ("N passed, M failed";
#   status 0 iff M == 0)
# Every command that could hang runs under `timeout`.
# shellcheck shell=bash

LEGACY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$LEGACY_DIR/../lib.sh"
TOP=$(cd "$LEGACY_DIR/../.." && pwd)
LEGACY_BUILD="$TOP/build/legacy"
NAGLEFIX="$TOP/build/naglefix"
SERVER_LIFETIME=${SERVER_LIFETIME:-120} # seconds a server may live, at most
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-60}    # seconds a client run may take, at most
CLIENT_LOG="$LEGACY_BUILD/clients.log"

SERVER_PORT=""
SERVER_PIDS=()
SERVER_FDS=()
declare -A SERVER_PID_OF SERVER_FD_OF # by NAME, for stop_server

mkdir -p "$LEGACY_BUILD"
: >"$CLIENT_LOG"

cleanup() {
    local fd pid i alive
    for fd in "${SERVER_FDS[@]}"; do exec {fd}>&-; done # servers see stdin EOF
    for pid in "${SERVER_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for ((i = 0; i < 50; i++)); do # give them up to 5 s to go, then KILL
        alive=()
        for pid in "${SERVER_PIDS[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive+=("$pid")
        done
        ((${#alive[@]})) || break
        sleep 0.1
    done
    ((${#alive[@]})) && kill -KILL "${alive[@]}" 2>/dev/null
    rm -f "$LEGACY_BUILD"/*.stdin
}
trap cleanup EXIT
trap 'exit 130' INT TERM

compile_java() {
    local src cls stale=0
    for src in "$LEGACY_DIR"/*.java; do
        cls=${src##*/}
        [[ "$LEGACY_BUILD/${cls%.java}.class" -nt $src ]] || stale=1
    done
    ((stale)) || return 0
    timeout 120 javac -d "$LEGACY_BUILD" "$LEGACY_DIR"/*.java
}

# start_server NAME CMD...: run CMD in the background with no preload, its
# stdin a FIFO we hold open (EOF when this script goes away), stdout/stderr in
# build/legacy/NAME.{out,err}. Waits up to 15 s for its "PORT <n>" line.
start_server() {
    launch_server "$@" || return 1
    server_port "$1"
}

# launch_server NAME CMD...: start_server without the wait (SERVER_PORT
# unset); server_port NAME then waits. Servers launched one after another
# start side by side.
launch_server() {
    local name=$1 fd pid i
    shift
    local out="$LEGACY_BUILD/$name.out" err="$LEGACY_BUILD/$name.err"
    local fifo="$LEGACY_BUILD/$name.stdin"
    SERVER_PORT=""
    rm -f "$out" "$fifo"
    : >"$out"
    mkfifo "$fifo" || return 1
    exec {fd}<>"$fifo"
    (
        for i in "${SERVER_FDS[@]}" "$fd"; do exec {i}>&-; done
        exec timeout -k 5 "$((SERVER_LIFETIME + 10))" env -u LD_PRELOAD "$@" \
            <"$fifo" >"$out" 2>"$err"
    ) &
    pid=$!
    SERVER_FDS+=("$fd")
    SERVER_PIDS+=("$pid")
    SERVER_PID_OF[$name]=$pid
    SERVER_FD_OF[$name]=$fd
}

# server_port NAME: waits up to 15 s for the "PORT <n>" line of the server
# launch_server NAME started; sets SERVER_PORT. Status 1 (said on stderr)
# if none came.
server_port() {
    local name=$1 tag port=""
    local out="$LEGACY_BUILD/$name.out" err="$LEGACY_BUILD/$name.err"
    SERVER_PORT=""
    wait_until 15 port_or_gone "$out" "${SERVER_PID_OF[$name]:-0}"
    read -r tag port <"$out" || true
    [[ ${tag:-} == PORT ]] || port=""
    if [[ -z $port ]]; then
        echo "start_server: $name reported no port (see $err)" >&2
        return 1
    fi
    # shellcheck disable=SC2034 # read by the caller
    SERVER_PORT=$port
}

# port_or_gone FILE PID: true once FILE begins with a "PORT <n>" line, or
# the process PID has gone (start_server's wait).
port_or_gone() {
    local tag port
    read -r tag port <"$1" || true
    [[ ${tag:-} == PORT && -n ${port:-} ]] || gone "$2"
}

# stop_server NAME: closes the stdin of the server start_server NAME started
# (a server of this harness exits at its EOF; one run under `naglefix audit`
# then prints its table on stderr, in build/legacy/NAME.err) and waits up to
# 15 s for it to exit. Status 1 if it is still running.
stop_server() {
    local name=$1
    local pid=${SERVER_PID_OF[$name]:-} fd=${SERVER_FD_OF[$name]:-}
    [[ -n $pid && -n $fd ]] || return 1
    exec {fd}>&-
    wait_until 15 gone "$pid"
}

# run_client MODE CMD...: MODE "none" runs CMD as is (LD_PRELOAD unset), any
# other MODE runs it as `build/naglefix -m MODE -- CMD...`. Prints the median
# from the client's "median_ms=..." line, or NA (status 1) on any failure.
run_client() {
    local mode=$1 output line median=""
    shift
    local -a cmd=(env -u LD_PRELOAD "$@")
    if [[ $mode != none ]]; then
        if [[ ! -x $NAGLEFIX ]]; then
            echo "run_client: $NAGLEFIX missing or not executable" >&2
            echo NA
            return 1
        fi
        cmd=("$NAGLEFIX" -m "$mode" -- "$@")
    fi
    echo "== $mode: ${cmd[*]}" >>"$CLIENT_LOG"
    output=$(timeout -k 5 "$CLIENT_TIMEOUT" "${cmd[@]}" 2>>"$CLIENT_LOG")
    local rc=$?
    printf '%s\n' "$output" >>"$CLIENT_LOG"
    while read -r line; do
        [[ $line =~ ^median_ms=([0-9]+(\.[0-9]+)?)\  ]] && median=${BASH_REMATCH[1]}
    done <<<"$output"
    if ((rc != 0)) || [[ -z $median ]]; then
        echo "run_client: failed (exit $rc, see $CLIENT_LOG): ${cmd[*]}" >&2
        echo NA
        return 1
    fi
    echo "$median"
}

# Milliseconds with up to 3 decimals -> integer microseconds (pure bash).
_ms_to_us() {
    local int=${1%%.*} frac=""
    [[ $1 == *.* ]] && frac=${1#*.}
    frac="${frac}000"
    echo $((10#$int * 1000 + 10#${frac:0:3}))
}

# _assert_ms NAME VALUE OP LIMIT, OP is ge or lt.
_assert_ms() {
    local name=$1 value=$2 op=$3 limit=$4 ok
    if [[ ! $value =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
        fail "$name" "no measurement"
        return
    fi
    local v l
    v=$(_ms_to_us "$value")
    l=$(_ms_to_us "$limit")
    case $op in
        ge) ok=$((v >= l)) ;;
        lt) ok=$((v < l)) ;;
    esac
    if ((ok)); then
        pass "$name ($value ms)"
    else
        fail "$name ($value ms)" "expected $op $limit ms"
    fi
}
assert_ms_ge() { _assert_ms "$1" "$2" ge "$3"; }
assert_ms_lt() { _assert_ms "$1" "$2" lt "$3"; }
