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
# T=pattern runs only the checks whose name it matches (tests/lib.sh).
set -u
export LC_ALL=C
SERVER_LIFETIME=${SERVER_LIFETIME:-400} # the servers serve the whole suite
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../legacy/common.sh
. "$HERE/../legacy/common.sh"
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

# check_fixed NAME: NAME stalled before the fix and every round started
# after it is fast and intact. FIXAT is the number of rounds printed when
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
    elif ! lt "$amed" "$FAST_MAX_MS" || ! lt "$amax" "$HELD_MIN_MS"; then
        fail "$name: rounds after the fix < $FAST_MAX_MS ms (median), none stalled" \
            "before: median $before ms; after: median $amed, p99 $ap99, max $amax ms over $an rounds"
    else
        pass "$name: $before ms a round before; after 'fix PID' $an rounds, median $amed, p99 $ap99, max $amax ms (none stalled), every echo intact"
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
timeout 120 javac -d "$W" "$HERE"/*.java || fail "compile tests/fix Java sources"
for p in nodelay_of deny_getfd; do
    cc -std=gnu11 -Wall -Wextra -Werror -O2 -o "$W/$p" "$HERE/$p.c" || fail "build $p"
done
cc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -iquote "$TOP/src" -I"$TOP/include" \
    -o "$W/api_check" "$HERE/api_check.c" "$TOP/build/libnfcli.a" "$TOP/build/libnfcore.a" ||
    fail "build api_check"
cc -static -std=gnu11 -Wall -Wextra -Werror -O2 -o "$W/static_client" "$HERE/static_client.c" ||
    fail "build static_client (cc -static)"

start_server fix-java-echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME" || exit 1
JPORT=$SERVER_PORT
start_server fix-py-echo python3 "$HERE/echo_server.py" "$H" "$SERVER_LIFETIME" || exit 1
PPORT=$SERVER_PORT
start_server fix-py-echo6 python3 "$HERE/echo_server.py" ::1 "$SERVER_LIFETIME" || exit 1
P6PORT=$SERVER_PORT
start_server fix-legacy-py python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME" || exit 1
LPORT=$SERVER_PORT

# ---- every stalling client, fixed while it runs ----------------------------

split_client "java client" "$JPORT" java -cp "$W" FixClient "$H" PORT "$ROUNDS"
split_client "python client IPv4" "$PPORT" python3 "$HERE/fix_client.py" "$H" PORT "$ROUNDS"
split_client "python client IPv6" "$P6PORT" python3 "$HERE/fix_client.py" ::1 PORT "$ROUNDS"
split_client "node client" "$JPORT" node "$HERE/fix_client.js" "$H" PORT "$ROUNDS"
split_client "perl client" "$JPORT" perl "$HERE/fix_client.pl" "$H" PORT "$ROUNDS"
if selected "static C client"; then
    # no program interpreter: no dynamic loader, so no LD_PRELOAD reaches it
    if readelf -lW "$W/static_client" >"$W/static.readelf" && ! grep -q INTERP "$W/static.readelf"; then
        split_client "static C client" "$JPORT" "$W/static_client" "$H" PORT "$ROUNDS"
    else
        fail "static C client" "$W/static_client is not statically linked"
    fi
fi

# The legacy harness's own clients, unmodified (tests/legacy/), 400 rounds:
# fixed after about 1.5 s of stalling, their own final line has the stall in
# its p99 (the rounds before the fix) and a fast median (the rest).
check_legacy() {
    local name=$1 port=$2 tpid pid line med p99 i
    shift 2
    selected "$name" || return 0
    (exec timeout -k 5 90 "${@/#PORT/$port}" </dev/null >"$W/legacy.out" 2>"$W/legacy.err") &
    tpid=$!
    CLIENT_PIDS+=("$tpid")
    for ((i = 0; i < 50; i++)); do
        pid=$(pgrep -P "$tpid" | head -n 1)
        [[ -n $pid ]] && break
        sleep 0.1
    done
    sleep 1.5
    timeout 20 "${FIX[@]}" -m nodelay "$pid" >"$W/legacy.fix" 2>&1
    local rc=$?
    wait "$tpid"
    line=$(grep '^median_ms=' "$W/legacy.out")
    med=${line#median_ms=} med=${med%% *} p99=${line#*p99_ms=} p99=${p99%% *}
    if ((rc != 0)) || ! grep -q 'connect .* set' "$W/legacy.fix"; then
        fail "$name: naglefix fix PID" "exit $rc" "$W/legacy.fix"
    elif ge "$p99" "$STALL_MIN_MS" && lt "$med" "$FAST_MAX_MS"; then
        pass "$name: its own line after a fix at 1.5 s: $line"
    else
        fail "$name" "its line: '$line' (expected p99 >= $STALL_MIN_MS, median < $FAST_MAX_MS)" "$W/legacy.err"
    fi
}
check_legacy "legacy LegacyClient.java, unmodified" "$JPORT" java -cp "$LEGACY_BUILD" LegacyClient "$H" PORT 400 split
check_legacy "legacy legacy_client.py, unmodified" "$LPORT" python3 "$LEGACY_DIR/legacy_client.py" "$H" PORT 400 split
check_legacy "legacy legacy_client.js, unmodified" "$JPORT" node "$LEGACY_DIR/legacy_client.js" "$H" PORT 400 split
check_legacy "legacy legacy_client.pl, unmodified" "$JPORT" perl "$LEGACY_DIR/legacy_client.pl" "$H" PORT 400 split

# memccp: one process storing one 200,000-byte file 3,000 times; each store
# timed from memcached's side (mc_watch.py). As is, stores stall (about half
# of them, 42 ms each); after fix, none of the next 300.
check_memccp() {
    local name="memccp" mport before after i
    selected "$name" || return 0
    if ! command -v memccp >/dev/null || ! command -v memcached >/dev/null; then
        skip "$name" "memccp or memcached missing (tests/install-deps.sh installs them)"
        return
    fi
    start_server fix-memcached "$LEGACY_DIR/memcached_server.sh" || { fail "$name: memcached"; return; }
    mport=$SERVER_PORT
    head -c 200000 /dev/zero | tr '\0' m >"$W/memccp.bin"
    local -a files=()
    for ((i = 0; i < 3000; i++)); do files+=("$W/memccp.bin"); done
    (exec timeout -k 5 90 memccp --servers="$H:$mport" "${files[@]}" >"$W/memccp.out" 2>&1) &
    local tpid=$!
    CLIENT_PIDS+=("$tpid")
    before=$(timeout 30 python3 "$HERE/mc_watch.py" "$mport" 40)
    PID=$(pgrep -P "$tpid" -x memccp)
    if [[ -z $PID ]]; then
        fail "$name: running" "no memccp process" "$W/memccp.out"
        return
    fi
    timeout 20 "${FIX[@]}" -m nodelay "$PID" >"$W/memccp.fix" 2>&1
    FIXRC=$?
    after=$(timeout 30 python3 "$HERE/mc_watch.py" "$mport" 300)
    local bstalls=${before##*stalls=} astalls=${after##*stalls=} amed=${after#median_ms=}
    bstalls=${bstalls%% *} astalls=${astalls%% *} amed=${amed%% *}
    if ((FIXRC != 0)) || ! grep -q 'connect .* set' "$W/memccp.fix"; then
        fail "$name: naglefix fix PID" "exit $FIXRC" "$W/memccp.fix"
    elif [[ -z $bstalls || -z $astalls ]] || ((bstalls < 3)); then
        fail "$name: stalls before the fix" "before: $before" "$W/memccp.out"
    elif ((astalls != 0)) || ! lt "$amed" "$FAST_MAX_MS"; then
        fail "$name: no store stalls after the fix" "before: $before; after: $after"
    else
        pass "$name: before $before; after 'fix PID' $after"
    fi
    kill "$tpid" 2>/dev/null
}
check_memccp

# ---- servers, fixed through their listener ---------------------------------

# accepted_nodelay SPID PORT FIXOUT: opens a connection to PORT and, while
# it is open, sets ND to the TCP_NODELAY of a socket SPID accepted that is
# not listening and not listed (by inode) in FIXOUT, ND_INO to its inode.
accepted_nodelay() {
    local spid=$1 port=$2 out=$3 hold
    ND="" ND_INO=""
    exec {hold}<>"/dev/tcp/$H/$2"
    sleep 0.3
    read -r ND_INO ND < <("$W/nodelay_of" "$spid" | while read -r _ ino nd listen; do
        ((listen == 0)) && ! grep -q "\"inode\":$ino," "$out" && echo "$ino $nd"
    done | tail -n 1)
    exec {hold}>&-
}

# check_server NAME SERVER...: an HTTP server answering http_client.py
# (http.client, keep-alive) stalls; fixed once, a new connection (accepted
# after the fix, so never touched by it) is fast and has TCP_NODELAY 1:
# Linux passes the listener's to what it accepts.
check_server() {
    local name=$1 port spid before after ino ino_new
    shift
    selected "$name" || return 0
    start_server "fix-$name" "$@" || { fail "$name: started"; return; }
    port=$SERVER_PORT
    spid=$(pgrep -P "${SERVER_PID_OF[fix-$name]}" | head -n 1)
    before=$(timeout 30 python3 "$HERE/http_client.py" "$port" 15)
    accepted_nodelay "$spid" "$port" /dev/null
    local nd0=$ND
    timeout 20 "${FIX[@]}" -m nodelay --json "$spid" >"$W/$name.fix" 2>&1
    FIXRC=$?
    after=$(timeout 30 python3 "$HERE/http_client.py" "$port" 30)
    accepted_nodelay "$spid" "$port" "$W/$name.fix"
    local bmed=${before#median_ms=} amed=${after#median_ms=} amax=${after#*max_ms=}
    bmed=${bmed%% *} amed=${amed%% *} amax=${amax%% *}
    if ((FIXRC != 0)) || ! grep -q '"side":"listen".*"result":"set"' "$W/$name.fix"; then
        fail "$name: fix through its listener" "exit $FIXRC" "$W/$name.fix"
    elif ! ge "$bmed" "$STALL_MIN_MS"; then
        fail "$name: stalls before the fix" "$before"
    elif ! lt "$amed" "$FAST_MAX_MS" || ! lt "$amax" "$HELD_MIN_MS"; then
        fail "$name: a new connection after the fix" "before: $before; after: $after"
    else
        pass "$name: $bmed ms a round before; a new connection after 'fix PID' $amed ms (max $amax), body intact"
    fi
    local n="$name: a connection accepted after the fix inherits TCP_NODELAY from the listener"
    if [[ $nd0 == 0 && $ND == 1 ]]; then
        pass "$n (one accepted before the fix reads 0; after, inode $ND_INO, not touched by fix, reads 1)"
    else
        fail "$n" "accepted before the fix: '$nd0' (expected 0); after: '$ND' (expected 1)"
    fi
}
check_server "python http.server" python3 "$HERE/http_server.py" "$SERVER_LIFETIME"
check_server "java HttpServer" java -cp "$W" HttpServerFix "$SERVER_LIFETIME"

# ---- --follow -----------------------------------------------------------------

# A client that opens a new connection for every request and reads its own
# TCP_NODELAY every millisecond: without --follow none is fixed (and it
# stalls); under `fix --follow PID` each new one is within BOUND_MS, and
# follow ends by itself when the client does.
check_follow() {
    local name="--follow: new connections" fpid rc go="$W/follow.go" worst n
    selected "$name" || return 0
    touch "$W/nofollow.go"
    start_client nofollow python3 "$HERE/fix_client.py" "$H" "$PPORT" 2 --newconn "$W/nofollow.go"
    wait_done nofollow
    rm -f "$go"
    start_client follow python3 "$HERE/fix_client.py" "$H" "$PPORT" 20 --newconn "$go" ||
        { fail "$name: started"; return; }
    timeout 60 "${FIX[@]}" -m nodelay --follow "$PID" >"$W/follow.fix" 2>&1 &
    fpid=$!
    wait_until 3 grep -q "holds no TCP socket yet: waiting for one" "$W/follow.fix" # following
    touch "$go"
    wait_done follow
    wait_until 3 gone "$fpid"
    kill -0 "$fpid" 2>/dev/null && { kill -INT "$fpid"; rc=999; }
    wait "$fpid"
    rc=${rc:-$?}
    # conn I fixed_ms X max_round_ms Y
    worst=$(awk '$1 == "conn" { if ($4 < 0) bad = 1; if ($4 > w) w = $4; n++ }
        END { printf "%s %.1f %d", bad ? "unfixed" : "ok", w, n }' "$W/follow.out")
    read -r verdict fmax n <<<"$worst"
    # the median over the connections of each one's slowest round
    rmax=$(awk '$1 == "conn" { print $6 }' "$W/follow.out" | sort -g |
        awk '{ t[NR] = $1 } END { print NR ? t[int((NR + 1) / 2)] : "NA" }')
    local ctrl
    ctrl=$(awk '$1 == "conn" && $4 < 0 && $6 >= 30 { n++ } END { print n + 0 }' "$W/nofollow.out")
    if ((ctrl != 2)); then
        fail "$name: without --follow none is fixed and each stalls" "" "$W/nofollow.out"
    elif [[ $verdict != ok ]] || ((n != 20)) || ! lt "$fmax" "$BOUND_MS" || ! lt "$rmax" "$FAST_MAX_MS"; then
        fail "$name: each of 20 fixed within $BOUND_MS ms" "$worst" "$W/follow.out"
    elif ((rc != 0)) || ! grep -q "pid $PID ended (20 sockets set)" "$W/follow.fix"; then
        fail "$name: follow ends with the process" "exit $rc" "$W/follow.fix"
    elif ! grep -q "pid $PID (python3) holds no TCP socket yet: waiting for one" "$W/follow.fix"; then
        fail "$name: its wait for a first socket said" "" "$W/follow.fix"
    elif [[ -e $W/state/fix-$PID ]]; then
        fail "$name: the record of the ended process removed at follow's exit" "$W/state/fix-$PID is left"
    else
        pass "$name: without it 2 of 2 unfixed and stalled; under it (its wait for a first socket said) each of $n fixed within $fmax ms at most (bound $BOUND_MS), then fast (median of each one's slowest round $rmax ms); ended with the process (exit 0), its record removed"
    fi
}
check_follow

# ---- --dry-run, --undo, a program's own setsockopt ------------------------------

# A client holding a socket it set TCP_NODELAY on itself and one with Nagle
# on: --dry-run changes nothing; fix sets only the second; --undo clears
# only that one again and removes the record; the stall is back.
check_dry_undo() {
    local name="dry-run and undo" main own oport
    selected "$name" || return 0
    start_client undo python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 --own-nodelay ||
        { fail "$name: started"; return; }
    wait_rounds undo "$PRE"
    oport=$(sed -n 's/^own_nodelay_port //p' "$W/undo.out")
    "${FIX[@]}" -m nodelay --json --dry-run "$PID" >"$W/undo-dry.fix" 2>&1
    local rc=$?
    own=$(sed -n "s/.*\"inode\":\([0-9]*\),.*\"local\":\"$H:$oport\".*/\1/p" "$W/undo-dry.fix")
    main=$(grep -v "\"local\":\"$H:$oport\"" "$W/undo-dry.fix" | sed -n 's/.*"inode":\([0-9]*\),.*"side":"connect".*/\1/p')
    local n1=$(rounds undo)
    sleep 0.5
    read -r med _ < <(stat_rounds undo "$n1" 999999)
    if ((rc != 0)) || [[ -z $own || -z $main ]] || ! grep -q '"result":"would_set"' "$W/undo-dry.fix"; then
        fail "$name: --dry-run" "exit $rc" "$W/undo-dry.fix"
    elif [[ $(nodelay "$PID" "$main") != 0 || -e $W/state/fix-$PID ]] || ! ge "$med" "$STALL_MIN_MS"; then
        fail "$name: --dry-run changes nothing" "nodelay $(nodelay "$PID" "$main"), rounds after $med ms"
    else
        pass "$name: --dry-run says 'would set', changes nothing (TCP_NODELAY still 0, no record, rounds $med ms)"
    fi
    "${FIX[@]}" -m nodelay "$PID" >"$W/undo.fix" 2>&1
    n1=$(rounds undo)
    sleep 0.3
    read -r med _ < <(stat_rounds undo $((n1 + 1)) 999999)
    if [[ $(nodelay "$PID" "$main") == 1 && $(nodelay "$PID" "$own") == 1 ]] && lt "$med" "$FAST_MAX_MS" &&
        [[ $(wc -l <"$W/state/fix-$PID") == 1 ]] && grep -q " $main\$" "$W/state/fix-$PID"; then
        pass "$name: fix sets the one with Nagle on ($med ms a round), records only it"
    else
        fail "$name: fix sets the one with Nagle on, records only it" "rounds $med ms" "$W/undo.fix"
    fi
    "${FIX[@]}" --undo "$PID" >"$W/undo-undo.fix" 2>&1
    rc=$?
    n1=$(rounds undo)
    sleep 0.6
    read -r med _ < <(stat_rounds undo $((n1 + 1)) 999999)
    if ((rc == 0)) && [[ $(nodelay "$PID" "$main") == 0 && $(nodelay "$PID" "$own") == 1 && ! -e $W/state/fix-$PID ]] &&
        ge "$med" "$STALL_MIN_MS" && grep -q 'undone' "$W/undo-undo.fix"; then
        pass "$name: --undo turns off only what fix turned on (the program's own TCP_NODELAY stays 1), the record removed, the stall back ($med ms)"
    else
        fail "$name: --undo restores exactly" "exit $rc, main $(nodelay "$PID" "$main"), own $(nodelay "$PID" "$own"), rounds $med ms" "$W/undo-undo.fix"
    fi
    "${FIX[@]}" --undo "$PID" >"$W/undo-again.fix" 2>&1
    rc=$?
    if ((rc == 1)) && grep -q "nothing to undo" "$W/undo-again.fix"; then
        pass "$name: a second --undo: nothing to undo, exit 1"
    else
        fail "$name: a second --undo" "exit $rc" "$W/undo-again.fix"
    fi
    kill "$PID" 2>/dev/null
}

# What the program does later wins: under --follow, the client sets
# TCP_NODELAY 0 itself; follow leaves it (the stall is back), and --undo
# then says the program turned it off and leaves it.
check_program_wins() {
    local name="the program's own setsockopt(TCP_NODELAY, 0) wins" fpid off="$W/off.flag" ino n1 med
    selected "$name" || return 0
    rm -f "$off"
    start_client off python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 --off-when "$off" ||
        { fail "$name: started"; return; }
    wait_rounds off "$PRE"
    timeout 60 "${FIX[@]}" -m nodelay --follow --json "$PID" >"$W/off.fix" 2>&1 &
    fpid=$!
    wait_until 5 grep -q '"side":"connect".*"result":"set"' "$W/off.fix"
    ino=$(sed -n 's/.*"inode":\([0-9]*\),.*"side":"connect".*"result":"set".*/\1/p' "$W/off.fix")
    touch "$off"
    sleep 0.8
    n1=$(sed -n 's/^nodelay_off //p' "$W/off.out")
    read -r med _ < <(stat_rounds off $((n1 + 1)) 999999)
    local nd
    nd=$(nodelay "$PID" "$ino")
    kill -INT "$fpid"
    wait "$fpid"
    local rc=$?
    "${FIX[@]}" --undo "$PID" >"$W/off-undo.fix" 2>&1
    if [[ -n $ino && -n $n1 && $nd == 0 ]] && ge "$med" "$STALL_MIN_MS" && ((rc == 0)) &&
        grep -q 'stopped following' "$W/off.fix" && grep -q 'the program turned it off' "$W/off-undo.fix"; then
        pass "$name: under --follow it stays 0 (stall back, $med ms); SIGINT ends follow (exit 0); --undo leaves it"
    else
        fail "$name" "inode '$ino', off at '$n1', nodelay $nd, rounds $med ms, follow exit $rc" "$W/off.fix"
    fi
    kill "$PID" 2>/dev/null
}

check_dry_undo
check_program_wins

# ---- the functions watch --fix calls ---------------------------------------------

# nf_fix_inode on a client's socket (by inode alone, then again: already
# on; a wrong fd: -ESTALE; an inode it does not hold: -ENOENT) and
# nf_fix_listener on a server's port (another port: -ENOENT); what they
# set is recorded: --undo turns exactly that off.
check_api() {
    local name="nf_fix_inode and nf_fix_listener" c s ino lino other out=""
    selected "$name" || return 0
    start_server fix-api-echo python3 "$HERE/echo_server.py" "$H" "$SERVER_LIFETIME" || return
    local aport=$SERVER_PORT
    s=$(pgrep -P "${SERVER_PID_OF[fix-api-echo]}" | head -n 1)
    start_client api python3 "$HERE/fix_client.py" "$H" "$aport" 100000 || return
    c=$PID
    wait_rounds api 2
    read -r fd ino _ < <("$W/nodelay_of" "$c" | awk '$4 == 0')
    read -r lfd lino _ < <("$W/nodelay_of" "$s" | awk '$4 == 1')
    other=$("$W/nodelay_of" "$s" | awk '$4 == 0 { print $1; exit }')
    out+="$("$W/api_check" inode "$c" "$ino" -1)|"
    out+="$("$W/api_check" inode "$c" "$ino" "$fd")|"
    out+="$("$W/api_check" inode "$s" "$lino" "$other")|"
    out+="$("$W/api_check" inode "$c" 1 -1)|"
    out+="$("$W/api_check" listener "$s" "$aport")|"
    out+="$("$W/api_check" listener "$s" 1)"
    local want="rc 0 before 0 recorded 1 nodelay 1|rc 0 before 1 recorded 0 nodelay 1|rc -116 before -1 recorded 0 nodelay -1|rc -2 before -1 recorded 0 nodelay -1|rc 0 before 0 recorded 1 nodelay 1|rc -2 before -1 recorded 0 nodelay -1"
    if [[ $out != "$want" || $(nodelay "$c" "$ino") != 1 || $(nodelay "$s" "$lino") != 1 ]]; then
        fail "$name" "got '$out'"
        return
    fi
    "${FIX[@]}" --undo "$c" "$s" >"$W/api-undo.fix" 2>&1
    if [[ $? == 0 && $(nodelay "$c" "$ino") == 0 && $(nodelay "$s" "$lino") == 0 ]] &&
        (($(grep -c undone "$W/api-undo.fix") == 2)); then
        pass "$name: set by inode (fd looked up or given), already on, -ESTALE, -ENOENT, a listener by port; recorded, and --undo clears exactly those two"
    else
        fail "$name: --undo of what they set" "" "$W/api-undo.fix"
    fi
    kill "$c" 2>/dev/null
}
check_api

# ---- --json ---------------------------------------------------------------------

check_json() {
    local name="--json lines" v
    selected "$name" || return 0
    start_client json python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    v=$PID
    wait_rounds json 2
    "${FIX[@]}" -m nodelay --json "$v" >"$W/json.fix" 2>"$W/json.err"
    "${FIX[@]}" --undo --json "$v" >>"$W/json.fix" 2>>"$W/json.err"
    if python3 - "$W/json.fix" "$v" <<'PY'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
pid = int(sys.argv[2])
keys = {"event", "pid", "fd", "inode", "side", "local", "peer", "state",
        "nodelay_before", "nodelay_after", "result"}
assert rows and all(keys <= set(r) and r["pid"] == pid for r in rows), rows
fix = [r for r in rows if r["event"] == "fix"]
undo = [r for r in rows if r["event"] == "fix_undo"]
assert [(r["side"], r["result"], r["nodelay_before"], r["nodelay_after"], r["action"], r["rule"])
        for r in fix] == [("connect", "set", 0, 1, "nodelay", "-m nodelay")], fix
assert [(r["result"], r["inode"]) for r in undo] == [("undone", fix[0]["inode"])], undo
PY
        pass "$name: every line JSON, the audit log's names (pid, fd, side, local, peer) and the change"
    else
        fail "$name" "" "$W/json.fix"
    fi
    kill "$v" 2>/dev/null
}
check_json

# ---- -c CONF: rules and sides ---------------------------------------------------

# The echo server's listener and accepted sockets are the accept side, a
# client's socket the connect side: "accept 127.0.0.1 nodelay" sets the
# first, passes the second; a coalesce rule is left, said once.
check_conf() {
    local name="-c CONF" conf="$W/fix.conf" spid
    selected "$name" || return 0
    start_server fix-conf-echo python3 "$HERE/echo_server.py" "$H" "$SERVER_LIFETIME" || return
    local cport=$SERVER_PORT
    spid=$(pgrep -P "${SERVER_PID_OF[fix-conf-echo]}" | head -n 1)
    start_client conf1 python3 "$HERE/fix_client.py" "$H" "$cport" 100000 || return
    local c1=$PID
    start_client conf2 python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    local c2=$PID
    wait_rounds conf1 2
    printf 'accept 127.0.0.1 nodelay\nconnect 127.0.0.1:%s coalesce\ndefault pass\n' "$PPORT" >"$conf"
    "${FIX[@]}" -c "$conf" "$spid" "$c1" "$c2" >"$W/conf.fix" 2>&1
    local rc=$?
    local lsn acc cli1 cli2 lib
    lsn=$(grep -c "^$spid .* listen .* 0 -> 1 *set (nodelay, $conf:1)" "$W/conf.fix")
    acc=$(grep -c "^$spid .* accept .* 0 -> 1 *set (nodelay, $conf:1)" "$W/conf.fix")
    cli1=$(grep -c "^$c1 .* connect .* 0 -> 0 *left (pass, $conf: default)" "$W/conf.fix")
    cli2=$(grep -c "^$c2 .* connect .* 0 -> 0 *left (coalesce, $conf:2): needs the library" "$W/conf.fix")
    lib=$(grep -c "$conf:2: coalesce needs the library" "$W/conf.fix")
    if ((rc == 0 && lsn == 1 && acc == 1 && cli1 == 1 && cli2 == 1 && lib == 1)); then
        pass "$name: accept rule sets the server's listener and accepted socket, the client's passes, coalesce left and said once"
    else
        fail "$name" "exit $rc; listen $lsn accept $acc pass $cli1 coalesce $cli2 said $lib" "$W/conf.fix"
    fi
    kill "$c1" "$c2" 2>/dev/null
}
check_conf

# ---- failures ---------------------------------------------------------------------

# expect_fail NAME STATUS PATTERN PID CMD...: CMD exits STATUS, says
# PATTERN, and the client PID's connection still has TCP_NODELAY 0.
expect_fail() {
    local name=$1 want=$2 pattern=$3 pid=$4 ino
    shift 4
    "$@" >"$W/fail.out" 2>&1
    local rc=$?
    ino=$("$W/nodelay_of" "$pid" | awk '$4 == 0 { print $2; exit }')
    if ((rc == want)) && grep -q -- "$pattern" "$W/fail.out" && [[ $(nodelay "$pid" "$ino") == 0 ]]; then
        pass "$name: exit $rc, '$(grep -m1 -- "$pattern" "$W/fail.out" | cut -c1-150)', nothing changed"
    else
        fail "$name" "exit $rc (expected $want), nodelay $(nodelay "$pid" "$ino")" "$W/fail.out"
    fi
}

check_failures() {
    any_selected "failure: ENOSYS" "failure: EMFILE" "failure: process gone" "failure: a thread's id" \
        "failure: another user" "failure: PID reused" || return 0
    start_client victim python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    local v=$PID
    wait_rounds victim 2
    selected "failure: ENOSYS" && expect_fail "failure: ENOSYS (seccomp refuses pidfd_getfd)" 3 \
        "no pidfd_open/pidfd_getfd (ENOSYS" "$v" "$W/deny_getfd" "${FIX[@]}" -m nodelay "$v"
    selected "failure: EMFILE" && expect_fail "failure: EMFILE (ulimit -n 5)" 5 \
        "own descriptor limit is reached" "$v" bash -c 'ulimit -n 5; exec "$@"' - "${FIX[@]}" -m nodelay "$v"
    selected "failure: EMFILE" && expect_fail "failure: EMFILE (ulimit -n 4)" 5 \
        "own descriptor limit is reached" "$v" bash -c 'ulimit -n 4; exec "$@"' - "${FIX[@]}" -m nodelay "$v"
    if selected "failure: process gone"; then
        sleep 0 & local gone=$!
        wait "$gone"
        expect_fail "failure: process gone" 4 "pid $gone: no such process" "$v" "${FIX[@]}" -m nodelay "$gone"
    fi
    if selected "failure: a thread's id"; then
        # the echo server: a thread per connection
        local tid spid
        spid=$(pgrep -P "${SERVER_PID_OF[fix-py-echo]}" | head -n 1)
        tid=$(ls "/proc/$spid/task" | grep -vx "$spid" | head -n 1)
        if [[ -n $tid ]]; then
            expect_fail "failure: a thread's id" 1 "is a thread of process $spid, not a process" "$spid" \
                "${FIX[@]}" -m nodelay "$tid"
        else
            fail "failure: a thread's id" "the echo server has no thread but its main one"
        fi
    fi
    if selected "failure: another user"; then
        if make_test_user; then
            expect_fail "failure: another user, no ptrace right" 2 "belongs to another user (uid 0" "$v" \
                runuser -u "$TEST_USER" -- "${FIX[@]}" -m nodelay "$v"
            # the same user's own process: allowed (no Yama here), but the
            # record's directory is root's: nothing changed, said so
            start_client own runuser -u "$TEST_USER" -- python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000
            local own=$PID
            wait_rounds own 2
            expect_fail "failure: its own process, the undo record not writable" 1 "cannot keep the undo record" \
                "$own" runuser -u "$TEST_USER" -- env NAGLEFIX_STATE_DIR=/run/naglefix-$$-root "${FIX[@]}" -m nodelay "$own"
            mkdir -p "$W/ustate" && chown "$TEST_USER" "$W/ustate"
            runuser -u "$TEST_USER" -- env NAGLEFIX_STATE_DIR="$W/ustate/d" "${FIX[@]}" -m nodelay "$own" >"$W/own.fix" 2>&1
            local rc=$? ino
            ino=$(awk '/ connect .* set/ { print $0 }' "$W/own.fix" | head -n 1)
            if ((rc == 0)) && [[ -n $ino ]]; then
                pass "failure: none for a user's own process, without root (no Yama here): set"
            else
                fail "a user's own process, without root" "exit $rc" "$W/own.fix"
            fi
            kill "$own" 2>/dev/null
            rm -rf "$W/ustate"
        else
            skip "failure: another user" "useradd failed: $(head -n 1 "$W/useradd.err")"
        fi
    fi
    if selected "failure: PID reused"; then
        "${FIX[@]}" -m nodelay "$v" >"$W/reuse.fix" 2>&1
        local ino
        ino=$(awk '{ print $4 }' "$W/state/fix-$v")
        awk '{ $2 = $2 + 1; print }' "$W/state/fix-$v" >"$W/state/x" && mv "$W/state/x" "$W/state/fix-$v"
        "${FIX[@]}" --undo "$v" >"$W/reuse-undo.fix" 2>&1
        local rc=$?
        if ((rc == 4)) && grep -q "another process has this PID now" "$W/reuse-undo.fix" &&
            [[ $(nodelay "$v" "$ino") == 1 && ! -e $W/state/fix-$v ]]; then
            pass "failure: PID reused (the record's start time is not the process's): nothing undone, record removed, exit 4"
        else
            fail "failure: PID reused" "exit $rc, nodelay $(nodelay "$v" "$ino")" "$W/reuse-undo.fix"
        fi
    fi
    kill "$v" 2>/dev/null
}
check_failures

# ---- no policy, nothing to fix, the record's place and its removal ---------------

# No -c, no -m and no policy file: nodelay, the one action fix applies, is
# applied and said; with NAGLEFIX_CONF=none, and with NAGLEFIX_CONF unset
# and no /etc/naglefix.conf (an empty /etc of its own, in a mount
# namespace: the machine's may hold one).
check_no_policy() {
    local name="no policy anywhere: nodelay applied, said" c ino rc
    selected "$name" || return 0
    start_client nopol python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    c=$PID
    wait_rounds nopol 2
    ino=$("$W/nodelay_of" "$c" | awk '$4 == 0 { print $2; exit }')
    NAGLEFIX_CONF=none "${FIX[@]}" "$c" >"$W/nopol.fix" 2>&1
    rc=$?
    if ((rc == 0)) && [[ $(nodelay "$c" "$ino") == 1 ]] &&
        grep -q "no policy file (no -c or -m, NAGLEFIX_CONF=none): nodelay for every TCP socket" "$W/nopol.fix" &&
        grep -q "^$c .* connect .* 0 -> 1 *set (nodelay, no policy file)$" "$W/nopol.fix"; then
        pass "$name (NAGLEFIX_CONF=none): exit 0, its socket set, '$(grep -m1 'no policy' "$W/nopol.fix")'"
    else
        fail "$name (NAGLEFIX_CONF=none)" "exit $rc, nodelay $(nodelay "$c" "$ino")" "$W/nopol.fix"
    fi
    "${FIX[@]}" --undo "$c" >"$W/nopol-undo.fix" 2>&1 || fail "$name: --undo" "" "$W/nopol-undo.fix"
    if ! unshare -m true 2>/dev/null; then
        skip "$name (no /etc/naglefix.conf)" "unshare -m not allowed here"
    else
        # shellcheck disable=SC2016 # expanded by that sh
        unshare -m sh -c 'mount -t tmpfs -o size=64k none /etc && exec "$@"' - "${FIX[@]}" "$c" \
            >"$W/nopol2.fix" 2>&1
        rc=$?
        if ((rc == 0)) && [[ $(nodelay "$c" "$ino") == 1 ]] &&
            grep -q "no policy file (no -c or -m, no NAGLEFIX_CONF, no /etc/naglefix.conf)" "$W/nopol2.fix" &&
            grep -q "^$c .* connect .* 0 -> 1 *set (nodelay, no policy file)$" "$W/nopol2.fix"; then
            pass "$name (NAGLEFIX_CONF unset, no /etc/naglefix.conf): exit 0, its socket set, said"
        else
            fail "$name (NAGLEFIX_CONF unset, no /etc/naglefix.conf)" "exit $rc, nodelay $(nodelay "$c" "$ino")" "$W/nopol2.fix"
        fi
    fi
    kill "$c" 2>/dev/null
}
check_no_policy

# A process that holds no TCP socket is said, with its child processes (a
# wrapper shell's PID given for its program's), exit 6; beside a process
# that has sockets (set) still 6; beside a PID that is gone, 4 (the more
# serious). Under --follow: waiting for one is said; a process that ends,
# or a follow stopped, without one: said, 6.
check_no_tcp() {
    local name="a process with no TCP socket" s c w gone rc ino
    selected "$name" || return 0
    sleep 60 &
    s=$!
    CLIENT_PIDS+=("$s")
    "${FIX[@]}" -m nodelay "$s" >"$W/notcp.fix" 2>&1
    rc=$?
    if ((rc == 6)) && grep -qx "naglefix fix: pid $s (sleep) holds no TCP socket: nothing to fix" "$W/notcp.fix"; then
        pass "$name: exit 6, '$(cat "$W/notcp.fix")'"
    else
        fail "$name: said, exit 6" "exit $rc" "$W/notcp.fix"
    fi
    # shellcheck disable=SC2016 # expanded by that bash
    start_client wrap bash -c 'python3 "$@"; exit 0' - "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    c=$PID
    w=$(ps -o ppid= -p "$c" | tr -d ' ')
    wait_rounds wrap 2
    ino=$("$W/nodelay_of" "$c" | awk '$4 == 0 { print $2; exit }')
    "${FIX[@]}" -m nodelay "$w" >"$W/notcp-wrap.fix" 2>&1
    rc=$?
    if ((rc == 6)) && [[ $(nodelay "$c" "$ino") == 0 ]] &&
        grep -qx "naglefix fix: pid $w (bash) holds no TCP socket: nothing to fix; its child process: $c (python3): give its PID" "$W/notcp-wrap.fix"; then
        pass "$name: a wrapper shell's PID: exit 6, its child named, nothing changed"
    else
        fail "$name: a wrapper shell's PID" "exit $rc, nodelay $(nodelay "$c" "$ino")" "$W/notcp-wrap.fix"
    fi
    "${FIX[@]}" -m nodelay "$c" "$s" >"$W/notcp-mixed.fix" 2>&1
    rc=$?
    if ((rc == 6)) && [[ $(nodelay "$c" "$ino") == 1 ]] && grep -q "^$c .* connect .* 0 -> 1 *set" "$W/notcp-mixed.fix" &&
        grep -q "pid $s (sleep) holds no TCP socket" "$W/notcp-mixed.fix"; then
        pass "$name: beside a process with a socket (set): exit 6, both said"
    else
        fail "$name: beside a process with a socket" "exit $rc, nodelay $(nodelay "$c" "$ino")" "$W/notcp-mixed.fix"
    fi
    "${FIX[@]}" --undo "$c" >/dev/null 2>&1
    sleep 0 &
    gone=$!
    wait "$gone"
    "${FIX[@]}" -m nodelay "$s" "$gone" >"$W/notcp-gone.fix" 2>&1
    rc=$?
    if ((rc == 4)) && grep -q "pid $s (sleep) holds no TCP socket" "$W/notcp-gone.fix" &&
        grep -q "pid $gone: no such process" "$W/notcp-gone.fix"; then
        pass "$name: beside a PID that is gone: exit 4, the more serious"
    else
        fail "$name: beside a PID that is gone" "exit $rc (expected 4)" "$W/notcp-gone.fix"
    fi
    sleep 1 &
    w=$!
    timeout 20 "${FIX[@]}" -m nodelay --follow "$w" >"$W/notcp-follow.fix" 2>&1
    rc=$?
    if ((rc == 6)) && grep -q "pid $w (sleep) holds no TCP socket yet: waiting for one" "$W/notcp-follow.fix" &&
        grep -q "pid $w ended (0 sockets set)" "$W/notcp-follow.fix" &&
        grep -q "pid $w held no TCP socket while followed: nothing fixed" "$W/notcp-follow.fix"; then
        pass "$name: --follow waits, said; the process ended without one: said, exit 6"
    else
        fail "$name: --follow, none came" "exit $rc" "$W/notcp-follow.fix"
    fi
    timeout --preserve-status -s INT 1 "${FIX[@]}" -m nodelay --follow "$s" >"$W/notcp-int.fix" 2>&1
    rc=$?
    if ((rc == 6)) && grep -q "stopped following (0 sockets set)" "$W/notcp-int.fix" &&
        grep -q "pid $s held no TCP socket while followed" "$W/notcp-int.fix"; then
        pass "$name: --follow stopped by SIGINT, none came: said, exit 6"
    else
        fail "$name: --follow stopped, none came" "exit $rc" "$W/notcp-int.fix"
    fi
    kill "$s" "$c" 2>/dev/null
}
check_no_tcp

# As the process's own user (ptrace rights over it, not root) and no
# variable set, fix and --undo work: the record lands in a directory of
# the user's own, mode 0700 (/tmp/naglefix-UID: this user has no
# XDG_RUNTIME_DIR and no /run/user/UID; $XDG_RUNTIME_DIR/naglefix when it
# is set and the user's). A path another user holds first (a symbolic
# link, a directory of root's) is refused: nothing changed, said.
check_owner() {
    local name="as the process's own user" o ino d rc xdg="$W/xdg"
    selected "$name" || return 0
    make_test_user || { skip "$name" "useradd failed: $(head -n 1 "$W/useradd.err")"; return; }
    d=/tmp/naglefix-$TEST_UID
    local -a as_user=(runuser -u "$TEST_USER" -- env -u NAGLEFIX_STATE_DIR -u XDG_RUNTIME_DIR)
    start_client owner runuser -u "$TEST_USER" -- python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    o=$PID
    wait_rounds owner 2
    ino=$("$W/nodelay_of" "$o" | awk '$4 == 0 { print $2; exit }')
    "${as_user[@]}" "${FIX[@]}" -m nodelay "$o" >"$W/owner.fix" 2>&1
    rc=$?
    if ((rc == 0)) && [[ $(nodelay "$o" "$ino") == 1 && $(stat -c '%U %a %F' "$d" 2>&1) == "$TEST_USER 700 directory" ]] &&
        grep -q "^$o [0-9]* [0-9]* $ino\$" "$d/fix-$o"; then
        pass "$name, no variable: set, the record in $d (the user's, 0700)"
    else
        fail "$name, no variable: set, recorded in $d" "exit $rc, nodelay $(nodelay "$o" "$ino"), $d: $(stat -c '%U %a %F' "$d" 2>&1)" "$W/owner.fix"
    fi
    "${as_user[@]}" "${FIX[@]}" --undo "$o" >"$W/owner-undo.fix" 2>&1
    rc=$?
    if ((rc == 0)) && [[ $(nodelay "$o" "$ino") == 0 && ! -e $d/fix-$o ]] && grep -q undone "$W/owner-undo.fix"; then
        pass "$name, no variable: --undo finds the record there, undone, removed"
    else
        fail "$name, no variable: --undo" "exit $rc, nodelay $(nodelay "$o" "$ino")" "$W/owner-undo.fix"
    fi
    rm -rf "$xdg" && mkdir -m 700 "$xdg" && chown "$TEST_USER" "$xdg"
    local -a as_xdg=(runuser -u "$TEST_USER" -- env -u NAGLEFIX_STATE_DIR XDG_RUNTIME_DIR="$xdg")
    "${as_xdg[@]}" "${FIX[@]}" -m nodelay "$o" >"$W/owner-xdg.fix" 2>&1
    rc=$?
    local rec=no
    grep -q "^$o [0-9]* [0-9]* $ino\$" "$xdg/naglefix/fix-$o" 2>/dev/null && rec=yes
    "${as_xdg[@]}" "${FIX[@]}" --undo "$o" >>"$W/owner-xdg.fix" 2>&1
    local urc=$?
    if ((rc == 0 && urc == 0)) && [[ $rec == yes && $(nodelay "$o" "$ino") == 0 && ! -e $d/fix-$o ]]; then
        pass "$name, XDG_RUNTIME_DIR set: the record in \$XDG_RUNTIME_DIR/naglefix, --undo finds it"
    else
        fail "$name, XDG_RUNTIME_DIR set" "exit $rc, --undo $urc, recorded there: $rec, nodelay $(nodelay "$o" "$ino")" "$W/owner-xdg.fix"
    fi
    # su keeps the first user's XDG_RUNTIME_DIR: not this user's, not used
    runuser -u "$TEST_USER" -- env -u NAGLEFIX_STATE_DIR XDG_RUNTIME_DIR="$W" "${FIX[@]}" -m nodelay "$o" >"$W/owner-su.fix" 2>&1
    rc=$?
    if ((rc == 0)) && [[ -e $d/fix-$o && ! -e $W/naglefix ]]; then
        pass "$name, XDG_RUNTIME_DIR another user's (root's): not used, the record in $d"
    else
        fail "$name, XDG_RUNTIME_DIR another user's" "exit $rc" "$W/owner-su.fix"
    fi
    "${as_user[@]}" "${FIX[@]}" --undo "$o" >/dev/null 2>&1
    rm -rf "$d" && ln -s "$xdg" "$d"
    expect_fail "$name: $d a symbolic link (made by root) refused" 1 \
        "cannot keep the undo record in $d: a symbolic link" "$o" "${as_user[@]}" "${FIX[@]}" -m nodelay "$o"
    # a record planted there is not read (xdg's is the live process's own)
    echo "$o $(awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$o/stat") 3 $ino" >"$xdg/fix-$o"
    "${as_user[@]}" "${FIX[@]}" --undo "$o" >"$W/owner-link-undo.fix" 2>&1
    rc=$?
    if ((rc == 1)) && [[ -e $xdg/fix-$o ]] &&
        grep -q "nothing to undo ($d/fix-$o: a symbolic link" "$W/owner-link-undo.fix"; then
        pass "$name: --undo reads no record through $d a symbolic link: exit 1, said, the file left"
    else
        fail "$name: --undo through $d a symbolic link" "exit $rc" "$W/owner-link-undo.fix"
    fi
    rm -f "$xdg/fix-$o"
    rm -f "$d" && mkdir -m 700 "$d"
    expect_fail "$name: $d a directory of root's refused" 1 \
        "cannot keep the undo record in $d: owned by uid 0, not by uid $TEST_UID" "$o" "${as_user[@]}" "${FIX[@]}" -m nodelay "$o"
    rm -rf "$d" "$xdg"
    kill "$o" 2>/dev/null
}
check_owner

# Records that can no longer be undone are removed by the next fix or
# --undo run (not by --dry-run, which changes nothing): of a process gone,
# of a zombie (no descriptors left), of a PID that is another process's
# now (the start time differs); a live process's (its start time) is kept.
# (--undo never applies a record to the PID's new process: "failure: PID
# reused".)
check_sweep() {
    local name="records that can no longer be undone are removed" gone live reused z zp rc i
    selected "$name" || return 0
    sleep 0 &
    gone=$!
    wait "$gone"
    sleep 60 &
    live=$!
    sleep 60 &
    reused=$!
    CLIENT_PIDS+=("$live" "$reused")
    # shellcheck disable=SC2016 # expanded by that bash
    bash -c 'sleep 0 & echo $!; exec sleep 60' >"$W/zombie.pid" &
    zp=$!
    CLIENT_PIDS+=("$zp")
    for ((i = 0; i < 50; i++)); do
        z=$(cat "$W/zombie.pid")
        [[ -n $z ]] && [[ $(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$z/stat" 2>/dev/null) == Z ]] && break
        sleep 0.1
    done
    start_of() { awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$1/stat"; }
    mkdir -p "$W/state"
    echo "$gone 12345 3 999" >"$W/state/fix-$gone"
    echo "$z $(start_of "$z") 3 999" >"$W/state/fix-$z"
    echo "$reused $(($(start_of "$reused") + 1)) 3 999" >"$W/state/fix-$reused"
    echo "$live $(start_of "$live") 3 999" >"$W/state/fix-$live"
    "${FIX[@]}" -m nodelay --dry-run "$live" >"$W/sweep-dry.fix" 2>&1
    local kept_dry
    kept_dry=$(ls "$W/state" | grep -cx "fix-\($gone\|$z\|$reused\|$live\)")
    "${FIX[@]}" -m nodelay "$live" >"$W/sweep.fix" 2>&1
    rc=$?
    local left
    left=$(ls "$W/state" | grep -x "fix-\($gone\|$z\|$reused\|$live\)" | tr '\n' ' ')
    if ((kept_dry == 4 && rc == 6)) && [[ $left == "fix-$live " ]]; then
        pass "$name: by fix (a process gone, a zombie, a PID reused: removed; the live one's kept; --dry-run removed none)"
    else
        fail "$name: by fix" "after --dry-run $kept_dry of 4 kept; after fix (exit $rc) left: '$left' (expected fix-$live)" "$W/sweep.fix"
    fi
    echo "$gone 12345 3 999" >"$W/state/fix-$gone"
    "${FIX[@]}" --undo "$reused" >"$W/sweep-undo.fix" 2>&1
    rc=$?
    if ((rc == 1)) && [[ ! -e $W/state/fix-$gone && -e $W/state/fix-$live ]]; then
        pass "$name: by --undo (of another PID, nothing to undo: exit 1)"
    else
        fail "$name: by --undo" "exit $rc; left: $(ls "$W/state" | tr '\n' ' ')" "$W/sweep-undo.fix"
    fi
    rm -f "$W/state/fix-$live"
    kill "$live" "$reused" "$zp" 2>/dev/null
}
check_sweep

# A process already under the library is left to it (here -m pass: its
# socket stays as the program set it).
check_library() {
    local name="a process under libnaglefix.so is left to it"
    selected "$name" || return 0
    start_client lib "$NAGLEFIX" -m pass -- python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    wait_rounds lib 2
    expect_fail "$name" 0 "runs under libnaglefix.so" "$PID" "${FIX[@]}" -m nodelay "$PID"
    kill "$PID" 2>/dev/null
}
check_library

# Another network namespace: a server and client of their own loopback.
check_netns() {
    local name="a process in another network namespace"
    selected "$name" || return 0
    if ! unshare -n true 2>/dev/null; then
        skip "$name" "unshare -n not allowed here"
        return
    fi
    start_client netns unshare -n bash -c '
        ip link set lo up || exit 1
        sleep 90 2>/dev/null | python3 "$1" 127.0.0.1 90 >"$2" &
        for i in $(seq 100); do read -r _ port <"$2"; [ -n "$port" ] && break; sleep 0.1; done
        exec python3 "$3" 127.0.0.1 "$port" "$4"' - "$HERE/echo_server.py" "$W/netns-srv.out" \
        "$HERE/fix_client.py" "$ROUNDS" || { fail "$name: started" "" "$W/netns.err"; return; }
    fix_running netns -m nodelay
    if ((FIXRC != 0)) || ! grep -q 'connect .* set' "$W/netns.fix"; then
        fail "$name: naglefix fix PID" "exit $FIXRC" "$W/netns.fix"
        return
    fi
    check_fixed netns
}
check_netns

# ---- a service or a container: --unit NAME, --cgroup PATH --------------------------

# Cgroups made under the cgroup2 mount as systemd and a container runtime
# make them: nffix<PID>.slice/nffix<PID>-app.service (a client in it and
# one in a cgroup below it, as a service that delegates) and
# nffix<PID>.slice/docker-<64 hex>.scope (a client in it), each client
# moved in by writing cgroup.procs before it execs; a fourth client
# outside them; a helper with no socket (sleep) in the service, and one
# alone in nffix<PID>-idle.service. `fix -m nodelay --unit nffix<PID>-app`
# sets the service's two clients (its lines naming the unit), not the
# others, and exits 0 (the helper is no failure); `fix --json
# --cgroup` with the scope's path relative to the mount sets the
# container's (its lines "cgroup":"docker-<12 hex>"); the outside client
# is untouched and still stalls; `fix --undo --cgroup nffix<PID>.slice`
# turns the three off again (exit 0: the helpers have no record); a unit
# whose processes hold no TCP socket: exit 6, said once; a unit that is
# not running: exit 4, said.
# TCP_NODELAY read by the tests' own nodelay_of; the cgroups removed after.
# cg_nodelay PID...: the TCP_NODELAY of each one's sockets, "PID:N,N " each
cg_nodelay() {
    local p
    for p in "$@"; do printf '%s:%s ' "$p" "$("$W/nodelay_of" "$p" | awk '{ print $3 }' | paste -sd, -)"; done
}
check_cgroups() {
    local name="--unit and --cgroup" root slice unit id c0 c1 c2 c3 rc nd want med i d
    selected "$name" || return 0
    root=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break; if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; exit } }' /proc/self/mountinfo)
    slice=$root/nffix$$.slice unit=nffix$$-app.service
    id=$(printf '%08x' $$)fedcba9876543210fedcba9876543210fedcba9876543210fedcba98
    if [[ -z $root ]]; then
        skip "$name" "no cgroup2 hierarchy is mounted"
        return
    elif ! mkdir "$slice" "$slice/$unit" "$slice/$unit/worker" "$slice/docker-$id.scope" \
        "$slice/nffix$$-idle.service" 2>"$W/cg.err"; then
        skip "$name" "cannot make cgroups under $root: $(head -n 1 "$W/cg.err")"
        rmdir "$slice/$unit/worker" "$slice/$unit" "$slice/docker-$id.scope" "$slice/nffix$$-idle.service" \
            "$slice" 2>/dev/null
        return
    fi
    local in_cg='echo $$ >"$0/cgroup.procs" && exec "$@"' client=(python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000)
    start_client cg1 sh -c "$in_cg" "$slice/$unit" "${client[@]}" && c1=$PID &&
        start_client cg2 sh -c "$in_cg" "$slice/$unit/worker" "${client[@]}" && c2=$PID &&
        start_client cg3 sh -c "$in_cg" "$slice/docker-$id.scope" "${client[@]}" && c3=$PID &&
        start_client cg0 "${client[@]}" && c0=$PID || { fail "$name: clients started" "" "$W/cg.err"; return; }
    local helpers=()
    for d in "$slice/$unit" "$slice/nffix$$-idle.service"; do
        sh -c "$in_cg" "$d" sleep 90 &
        helpers+=("$!")
    done
    wait_rounds cg0 "$PRE"
    "${FIX[@]}" -m nodelay --unit "nffix$$-app" >"$W/cg-unit.fix" 2>&1
    rc=$? nd=$(cg_nodelay "$c1" "$c2" "$c3" "$c0")
    if ((rc == 0)) && [[ $nd == "$c1:1 $c2:1 $c3:0 $c0:0 " ]] &&
        (($(grep -cE "^($c1|$c2) +$unit +[0-9]+ +connect .* 0 -> 1 +set" "$W/cg-unit.fix") == 2)) &&
        ! grep -qE "^($c3|$c0) " "$W/cg-unit.fix"; then
        pass "$name: --unit nffix<PID>-app sets its two processes (the one below it too), named $unit, no other ($nd)"
    else
        fail "$name: --unit sets the unit's processes, named" "exit $rc, TCP_NODELAY $nd" "$W/cg-unit.fix"
    fi
    "${FIX[@]}" -m nodelay --json --cgroup "nffix$$.slice/docker-$id.scope" >"$W/cg-docker.fix" 2>&1
    rc=$? nd=$(cg_nodelay "$c3" "$c0")
    want=$(jq -r --argjson p "$c3" 'select(.pid == $p and .side == "connect") | "\(.cgroup) \(.result)"' "$W/cg-docker.fix" 2>/dev/null)
    if ((rc == 0)) && [[ $nd == "$c3:1 $c0:0 " && $want == "docker-${id:0:12} set" ]] &&
        (($(jq -r '.pid' "$W/cg-docker.fix" | sort -u | wc -l) == 1)); then
        pass "$name: --cgroup SLICE/docker-<64 hex>.scope sets its process, named docker-${id:0:12} (--json)"
    else
        fail "$name: --cgroup sets the container's process, named" "exit $rc, TCP_NODELAY $nd, '$want'" "$W/cg-docker.fix"
    fi
    wait_rounds cg0 $(($(rounds cg0) + 20))
    read -r med _ < <(stat_rounds cg0 1 999999)
    if ge "$med" "$STALL_MIN_MS"; then
        pass "$name: the process outside still stalls ($med ms a round) and its socket untouched"
    else
        fail "$name: the process outside still stalls" "median $med ms"
    fi
    "${FIX[@]}" --undo --cgroup "$slice" >"$W/cg-undo.fix" 2>&1
    rc=$? nd=$(cg_nodelay "$c1" "$c2" "$c3" "$c0")
    if ((rc == 0)) && [[ $nd == "$c1:0 $c2:0 $c3:0 $c0:0 " ]] && (($(grep -c ' undone' "$W/cg-undo.fix") == 3)); then
        pass "$name: --undo --cgroup SLICE turns off the three again ($nd)"
    else
        fail "$name: --undo --cgroup SLICE" "exit $rc, TCP_NODELAY $nd" "$W/cg-undo.fix"
    fi
    "${FIX[@]}" -m nodelay --unit "nffix$$-idle" >"$W/cg-idle.fix" 2>&1
    rc=$?
    if ((rc == 6)) && (($(wc -l <"$W/cg-idle.fix") == 1)) &&
        grep -q "none of the 1 process of the cgroups given holds a TCP socket" "$W/cg-idle.fix"; then
        pass "$name: a unit whose process holds no TCP socket: exit 6, said once"
    else
        fail "$name: a unit whose process holds no TCP socket: exit 6, said once" "exit $rc" "$W/cg-idle.fix"
    fi
    "${FIX[@]}" -m nodelay --unit "nffix$$-none" >"$W/cg-none.fix" 2>&1
    rc=$?
    if ((rc == 4)) && grep -q "unit nffix$$-none.service: not running" "$W/cg-none.fix"; then
        pass "$name: a unit not running: exit 4, said"
    else
        fail "$name: a unit not running: exit 4, said" "exit $rc" "$W/cg-none.fix"
    fi
    kill "$c0" "$c1" "$c2" "$c3" "${helpers[@]}" 2>/dev/null
    wait "${helpers[@]}" 2>/dev/null
    for ((i = 0; i < 50; i++)); do # until the processes have left them
        rmdir "$slice/$unit/worker" "$slice/$unit" "$slice/docker-$id.scope" "$slice/nffix$$-idle.service" \
            "$slice" 2>/dev/null
        [[ -d $slice ]] || break
        sleep 0.1
    done
    [[ ! -d $slice ]] || fail "$name: its cgroups removed" "$slice is left"
}
check_cgroups

# ---- the cost of --follow ---------------------------------------------------------

# A process holding 1,000 connections, followed: the CPU time of naglefix
# itself (utime + stime) until its first scan has set all 1,000 and in the
# next 5 s (rescans, 50 of them, the share of a core over the window as
# measured); each socket duplicated twice (identify, set), never again on
# later rescans (strace counts pidfd_getfd).
check_cost() {
    local name="--follow on 1,000 connections" fpid ticks first hz=$(getconf CLK_TCK) calls
    selected "$name" || return 0
    start_client many python3 "$HERE/many_conns.py" "$H" "$PPORT" 1000 60 || return
    wait_until 10 grep -q '^ready' "$W/many.out"
    "${FIX[@]}" -m nodelay --follow "$PID" >"$W/many.fix" 2>&1 &
    fpid=$!
    # the first scan: 1,000 set, recorded
    wait_until 20 awk '/ connect .* set/ { n++ } END { exit n < 1000 }' "$W/many.fix"
    first=$(awk '{ print $14 + $15 }' "/proc/$fpid/stat")
    local t0=$EPOCHREALTIME window
    sleep 5 # the rescans measured
    ticks=$(awk -v f="$first" '{ print $14 + $15 - f }' "/proc/$fpid/stat")
    window=$(elapsed "$t0")
    kill -TERM "$fpid"
    wait "$fpid"
    local sets frc=$?
    sets=$(grep -c ' connect .* set' "$W/many.fix")
    if command -v strace >/dev/null; then
        timeout -k 5 20 strace -f -c -e trace=pidfd_getfd -o "$W/many.strace" \
            timeout -s INT 3 "${FIX[@]}" -m nodelay --follow --dry-run "$PID" >/dev/null 2>&1
        calls=$(awk '/pidfd_getfd/ { print $4 }' "$W/many.strace")
    fi
    local pct
    pct=$(awk -v t="$ticks" -v hz="$hz" -v s="$window" 'BEGIN { printf "%.1f", 100 * t / hz / s }')
    echo "note: fix --follow, 1,000 connections: the first scan $first ticks, next $window s $ticks ticks ($pct% of one core); pidfd_getfd in 3 s of --dry-run: ${calls:-?} (clock ticks of 1/$hz s)"
    if ((sets != 1000)); then
        fail "$name: each set once" "$sets set lines" "$W/many.fix"
    elif ((frc != 0)) || ! grep -q 'Terminated: stopped following (1000 sockets set)' "$W/many.fix"; then
        fail "$name: SIGTERM ends follow" "exit $frc" "$W/many.fix"
    elif [[ -n ${calls:-} ]] && ((calls != 1000)); then
        fail "$name: a rescan takes no socket again" "pidfd_getfd $calls times in 3 s (1,000 sockets)"
    elif ! lt "$pct" 25; then
        fail "$name: cost" "$pct% of a core"
    else
        pass "$name: rescans every 100 ms cost $pct% of one core ($window s), the first scan $first ticks; 1000 set once, ${calls:-?} pidfd_getfd in 3 s of --dry-run rescans; SIGTERM ends it (exit 0)"
    fi
    kill "$PID" 2>/dev/null
}
check_cost

finish
