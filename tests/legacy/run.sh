#!/usr/bin/env bash
# run.sh: legacy-program tests for naglefix (Java, Python, Node, Perl clients).
# Usage: tests/legacy/run.sh [MODE...]     (default MODE list: nodelay)
# Each split-write client must stall (>= 30 ms median) without the shim and,
# for every MODE that fixes the stall, be fast (< 5 ms) under
# `build/naglefix -m MODE` (quickack: servers under it too, plus a server
# whose config is only `accept 127.0.0.1 quickack` and a client as is). Env: ROUNDS (default 13), SERVER_LIFETIME.
# T=pattern runs only the checks whose name it matches (tests/lib.sh); the
# servers start anyway.
set -u
# shellcheck source-path=SCRIPTDIR source=../programs/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../programs/common.sh"

MODES=("$@")
((${#MODES[@]})) || MODES=(nodelay)
ROUNDS=${ROUNDS:-13}  # round 1 is a warm-up; the median is over ROUNDS-1 >= 10
STALL_MIN_MS=30       # a round stuck behind Nagle + delayed ACK (~40 ms)
FAST_MAX_MS=5         # a round that does not stall (~0.1 ms)

# Which modes must remove the stall; observe-only modes must leave it alone.
mode_fixes_stall() {
    case $1 in
        pass | audit) return 1 ;;
        *) return 0 ;; # nodelay, coalesce, auto, quickack, ...
    esac
}

# Modes that act on the receiving end (quickack: the ACK the sender's Nagle
# waits for) run the servers under the same mode as the client; a client's
# own quickack cannot release its own held write (checked below).
mode_on_server() { [[ $1 == quickack ]]; }

# port_of SERVER MODE: the port of the java or py server for MODE.
port_of() {
    local var=${1}_port
    mode_on_server "$2" && var=${1}_port_$2
    echo "${!var:-0}"
}

# check_split NAME SERVER CMD...: CMD is a split-write client command line
# against SERVER (java or py), the word PORT standing for its port.
check_split() {
    local name=$1 server=$2 mode
    shift 2
    selected "$name split, no shim" &&
        assert_ms_ge "$name split, no shim" "$(run_client none "${@/#PORT/$(port_of "$server" none)}")" "$STALL_MIN_MS"
    for mode in "${MODES[@]}"; do
        local -a cmd=("${@/#PORT/$(port_of "$server" "$mode")}")
        local label="-m $mode"
        mode_on_server "$mode" && label="-m $mode (server too)"
        if ! selected "$name split, $label"; then
            continue
        elif mode_fixes_stall "$mode"; then
            assert_ms_lt "$name split, $label" "$(run_client "$mode" "${cmd[@]}")" "$FAST_MAX_MS"
        else
            assert_ms_ge "$name split, $label" "$(run_client "$mode" "${cmd[@]}")" "$STALL_MIN_MS"
        fi
    done
}

compile_java || fail "compile Java sources"
java_port="" py_port=""
start_server java-echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME" &&
    java_port=$SERVER_PORT
start_server py-server python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME" &&
    py_port=$SERVER_PORT
[[ -x $NAGLEFIX ]] || echo "note: $NAGLEFIX not built; shim checks will fail" >&2
for mode in "${MODES[@]}"; do
    mode_on_server "$mode" || continue
    start_server "java-echo-$mode" "$NAGLEFIX" -m "$mode" -- \
        java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME" &&
        printf -v "java_port_$mode" %s "$SERVER_PORT"
    start_server "py-server-$mode" "$NAGLEFIX" -m "$mode" -- \
        python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME" &&
        printf -v "py_port_$mode" %s "$SERVER_PORT"
done

H=127.0.0.1
check_split java java java -cp "$LEGACY_BUILD" LegacyClient "$H" PORT "$ROUNDS" split
check_split python py python3 "$LEGACY_DIR/legacy_client.py" "$H" PORT "$ROUNDS" split
check_split node java node "$LEGACY_DIR/legacy_client.js" "$H" PORT "$ROUNDS" split
check_split perl java perl "$LEGACY_DIR/legacy_client.pl" "$H" PORT "$ROUNDS" split
selected "java single, no shim" && assert_ms_lt "java single, no shim" \
    "$(run_client none java -cp "$LEGACY_BUILD" LegacyClient "$H" "$java_port" "$ROUNDS" single)" \
    "$FAST_MAX_MS"

# memccp (libmemcached-tools), a C program that stalls in the wild: it
# stores each file in 8 KiB sends with MSG_MORE and the last without, and
# the tail after a full segment is held by Nagle until memcached's delayed
# ACK. How many of its stores stall depends on when memcached reads (40-90
# of 160 files of 200,000 bytes here, 42 ms each; 5 of 160 on CI's
# machine), so each store is timed from memcached's side
# (tests/programs/mc_watch.py: its stats polled, a store >= 40 ms a stall)
# in MC_RUNS memccp processes of MC_FILES files (the first store of each,
# and any made with it before the watcher saw one, untimed): a count of
# stalled stores, which a process's start and the machine's noise do not
# move as they move a whole run's time. As is, at least one stall; none:
# a SKIP naming the count, and the checks that need a stall SKIP too.
# Under a fix, no stall in as many stores; under an observe-only mode,
# at least one. A mode's 0 says something only where as is stalled
# MC_SURE times or more (a mode that changes nothing shows none there
# with chance about e^-5): with fewer, a fix's 0 (a PASS) and an
# observe-only mode's 0 (a failure) are a SKIP naming the counts.
MC_FILES=80
MC_RUNS=3
MC_SURE=5

# mc_timed PORT OUT CMD...: runs CMD (a memccp storing MC_FILES files on
# the memcached at PORT; its output in OUT) while mc_watch.py times its
# stores; sets MC_STALLS and MC_STORES (empty if the watcher timed none).
# Status: CMD's.
mc_timed() {
    local port=$1 out=$2 ready=$LEGACY_BUILD/mc_watch.ready wpid rc line
    shift 2
    rm -f "$ready"
    timeout 40 python3 "$LEGACY_DIR/mc_watch.py" "$port" $((MC_FILES - 1)) 30 --ready "$ready" \
        --end "$MC_FILES" >"$LEGACY_BUILD/mc_watch.out" 2>&1 &
    wpid=$!
    wait_until 10 test -e "$ready"
    timeout -k 5 "$CLIENT_TIMEOUT" "$@" >"$out" 2>&1
    rc=$?
    ((rc == 0)) || kill "$wpid" 2>/dev/null
    wait "$wpid"
    line=$(grep '^median_ms=' "$LEGACY_BUILD/mc_watch.out")
    MC_STALLS=${line##*stalls=} MC_STALLS=${MC_STALLS%% *} MC_STORES=${line##*stores=}
    [[ -n $line ]] || MC_STALLS="" MC_STORES=""
    return "$rc"
}

# mc_count MODE PORT: MC_RUNS runs of memccp as is (MODE none) or under
# `naglefix -m MODE`, each timed by mc_timed; sets MC_STALLS and
# MC_STORES to their sums, MC_SEEN to "stalls/stores" a run. Status 1
# (MC_SEEN says which) if a run failed or was not timed.
mc_count() {
    local mode=$1 port=$2 i stalls=0 stores=0
    local -a cmd=(memccp --servers="$H:$port" "${MC_FILE_LIST[@]}")
    if [[ $mode == none ]]; then cmd=(env -u LD_PRELOAD "${cmd[@]}"); else
        cmd=("$NAGLEFIX" -m "$mode" -- "${cmd[@]}"); fi
    MC_SEEN=""
    for ((i = 1; i <= MC_RUNS; i++)); do
        echo "== $mode: ${cmd[*]:0:4} ... (${#MC_FILE_LIST[@]} files)" >>"$CLIENT_LOG"
        if ! mc_timed "$port" "$LEGACY_BUILD/memccp.out" "${cmd[@]}" || [[ -z $MC_STALLS ]]; then
            cat "$LEGACY_BUILD/memccp.out" "$LEGACY_BUILD/mc_watch.out" >>"$CLIENT_LOG"
            MC_SEEN+="${MC_SEEN:+ }run $i failed or untimed"
            return 1
        fi
        MC_SEEN+="${MC_SEEN:+ }$MC_STALLS/$MC_STORES"
        stalls=$((stalls + MC_STALLS)) stores=$((stores + MC_STORES))
    done
    MC_STALLS=$stalls MC_STORES=$stores
}

# mc_judge NAME MODE PORT ASIS: NAME's stalls under MODE against as is's
# count ASIS (MC_RUNS runs each)
mc_judge() {
    local name=$1 mode=$2 port=$3 asis=$4
    if ! mc_count "$mode" "$port"; then
        fail "$name" "memccp under -m $mode: $MC_SEEN" "$CLIENT_LOG"
    elif ((asis == 0)); then
        skip "$name" "as is stalled 0 times here, $MC_STALLS under -m $mode: nothing to judge"
    elif mode_fixes_stall "$mode"; then
        if ((MC_STALLS != 0)); then
            fail "$name" "$MC_STALLS stalls in $MC_STORES stores (runs: $MC_SEEN), as is $asis: expected none"
        elif ((asis >= MC_SURE)); then
            pass "$name: 0 stalls in $MC_STORES stores (as is $asis)"
        else
            skip "$name" "0 stalls in $MC_STORES stores, as is only $asis (under $MC_SURE): too few to judge"
        fi
    elif ((MC_STALLS > 0)); then
        pass "$name: $MC_STALLS stalls in $MC_STORES stores (as is $asis)"
    elif ((asis >= MC_SURE)); then
        fail "$name" "0 stalls in $MC_STORES stores, as is $asis: expected the stall left alone"
    else
        skip "$name" "0 stalls in $MC_STORES stores, as is only $asis: too few to judge"
    fi
}

# mc_audit PORT: up to MC_RUNS runs of memccp under `naglefix audit`, each
# timed; passes at the first whose table has a row for the server, skips
# if no run stalled at all, fails if runs stalled and audit found none
mc_audit() {
    local port=$1 name="memccp: naglefix audit finds the stall" i stalls=0 stores=0
    for ((i = 1; i <= MC_RUNS; i++)); do
        mc_timed "$port" "$LEGACY_BUILD/memccp-audit.out" "$NAGLEFIX" audit -- \
            memccp --servers="$H:$port" "${MC_FILE_LIST[@]}"
        stalls=$((stalls + ${MC_STALLS:-0})) stores=$((stores + ${MC_STORES:-0}))
        if grep -q "^$H:$port  *connect " "$LEGACY_BUILD/memccp-audit.out"; then
            pass "$name (run $i)"
            return
        fi
    done
    if ((stalls == 0)); then
        skip "$name" "0 stalls in $MC_RUNS runs ($stores stores) here, no row: nothing to judge"
    else
        fail "$name" "no row for $H:$port in $MC_RUNS runs, which stalled $stalls times" \
            "$LEGACY_BUILD/memccp-audit.out"
    fi
}

check_memccp() {
    local mode port label asis i
    local -a names=("memccp $MC_FILES files, no shim" "memccp: naglefix audit finds the stall")
    for mode in "${MODES[@]}"; do names+=("memccp $MC_FILES files, -m $mode"); done
    any_selected "${names[@]}" || return 0
    if ! command -v memccp >/dev/null || ! command -v memcached >/dev/null; then
        skip "memccp" "memccp or memcached missing (tests/install-deps.sh installs them)"
        return
    fi
    head -c 200000 /dev/zero | tr '\0' m >"$LEGACY_BUILD/memccp-1.bin"
    MC_FILE_LIST=()
    for ((i = 1; i <= MC_FILES; i++)); do
        ((i > 1)) && cp "$LEGACY_BUILD/memccp-1.bin" "$LEGACY_BUILD/memccp-$i.bin"
        MC_FILE_LIST+=("$LEGACY_BUILD/memccp-$i.bin")
    done
    start_server memcached "$LEGACY_DIR/memcached_server.sh" || return
    port=$SERVER_PORT
    label="memccp $MC_FILES files, no shim"
    if ! mc_count none "$port"; then
        fail "$label" "memccp as is: $MC_SEEN" "$CLIENT_LOG"
        return
    fi
    asis=$MC_STALLS
    if ! selected "$label"; then
        :
    elif ((asis > 0)); then
        pass "$label: $asis stalls in $MC_STORES stores (runs: $MC_SEEN)"
    else
        skip "$label" "0 stalls in $MC_STORES stores here: nothing to judge"
    fi
    selected "memccp: naglefix audit finds the stall" && mc_audit "$port"
    for mode in "${MODES[@]}"; do
        label="-m $mode"
        selected "memccp $MC_FILES files, $label" || continue
        if mode_on_server "$mode"; then
            start_server "memcached-$mode" "$NAGLEFIX" -m "$mode" -- \
                "$LEGACY_DIR/memcached_server.sh" || continue
            mc_judge "memccp $MC_FILES files, -m $mode (server too)" "$mode" "$SERVER_PORT" "$asis"
        else
            mc_judge "memccp $MC_FILES files, $label" "$mode" "$port" "$asis"
        fi
    done
}
check_memccp

# quickack is a fix of the receiving end: with only an accept rule in the
# server's config, the unmodified Java client (no library) is fast; the
# client's own quickack against a server without it changes nothing.
if [[ " ${MODES[*]} " == *" quickack "* ]]; then
    qa_conf="$LEGACY_BUILD/accept-quickack.conf"
    echo "accept 127.0.0.1 quickack" >"$qa_conf"
    start_server java-echo-qa-conf env NAGLEFIX_CONF="$qa_conf" "$NAGLEFIX" -- \
        java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"
    n="java split, server config 'accept 127.0.0.1 quickack', client as is"
    selected "$n" && assert_ms_lt "$n" \
        "$(run_client none java -cp "$LEGACY_BUILD" LegacyClient "$H" "${SERVER_PORT:-0}" "$ROUNDS" split)" \
        "$FAST_MAX_MS"
    n="java split, -m quickack on the client only (receiver-side fix)"
    selected "$n" && assert_ms_ge "$n" \
        "$(run_client quickack java -cp "$LEGACY_BUILD" LegacyClient "$H" "$java_port" "$ROUNDS" split)" \
        "$STALL_MIN_MS"
    # per side: the same rule on the connect side does not touch accepted sockets
    echo "connect 127.0.0.1 quickack" >"$LEGACY_BUILD/connect-quickack.conf"
    start_server java-echo-qa-wrong env NAGLEFIX_CONF="$LEGACY_BUILD/connect-quickack.conf" \
        "$NAGLEFIX" -- java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"
    n="java split, server config 'connect 127.0.0.1 quickack' (wrong side)"
    selected "$n" && assert_ms_ge "$n" \
        "$(run_client none java -cp "$LEGACY_BUILD" LegacyClient "$H" "${SERVER_PORT:-0}" "$ROUNDS" split)" \
        "$STALL_MIN_MS"
fi

# auto per side: a connect rule fixes the client, an accept rule does not.
if [[ " ${MODES[*]} " == *" auto "* ]]; then
    for side in connect accept; do
        echo "$side 127.0.0.1 auto" >"$LEGACY_BUILD/$side-auto.conf"
    done
    n="java split, client config 'connect 127.0.0.1 auto'"
    selected "$n" && assert_ms_lt "$n" \
        "$(run_client none "$NAGLEFIX" -c "$LEGACY_BUILD/connect-auto.conf" -- \
            java -cp "$LEGACY_BUILD" LegacyClient "$H" "$java_port" "$ROUNDS" split)" "$FAST_MAX_MS"
    n="java split, client config 'accept 127.0.0.1 auto' (wrong side)"
    selected "$n" && assert_ms_ge "$n" \
        "$(run_client none "$NAGLEFIX" -c "$LEGACY_BUILD/accept-auto.conf" -- \
            java -cp "$LEGACY_BUILD" LegacyClient "$H" "$java_port" "$ROUNDS" split)" "$STALL_MIN_MS"
fi

finish
