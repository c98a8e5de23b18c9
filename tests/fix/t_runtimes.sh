# t_runtimes.sh - naglefix fix: every stalling client of each runtime, fixed while it runs; servers fixed through their listener.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

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

# The legacy harness's own clients, unmodified (tests/programs/), 400 rounds:
# fixed once their connection has sent LEGACY_SEGS data segments (two a
# round: 12 rounds, 10 or more of them stalled, where p99, the 4th slowest
# of 399, needs 4), their own final line has the stall in its p99 (the
# rounds before the fix) and a fast median (the rest).
LEGACY_SEGS=24
check_legacy() {
    local name=$1 port=$2 tpid pid line med p99
    shift 2
    selected "$name" || return 0
    (exec timeout -k 5 90 "${@/#PORT/$port}" </dev/null >"$W/legacy.out" 2>"$W/legacy.err") &
    tpid=$!
    CLIENT_PIDS+=("$tpid")
    wait_until 5 pgrep -P "$tpid" >/dev/null
    pid=$(pgrep -P "$tpid" | head -n 1)
    wait_until 20 segs_sent "${pid:-0}" "$port" "$LEGACY_SEGS"
    timeout 20 "${FIX[@]}" -m nodelay "$pid" >"$W/legacy.fix" 2>&1
    local rc=$?
    wait "$tpid"
    line=$(grep '^median_ms=' "$W/legacy.out")
    med=${line#median_ms=} med=${med%% *} p99=${line#*p99_ms=} p99=${p99%% *}
    if ((rc != 0)) || ! grep -q 'connect .* set' "$W/legacy.fix"; then
        fail "$name: naglefix fix PID" "exit $rc" "$W/legacy.fix"
    elif ge "$p99" "$STALL_MIN_MS" && lt "$med" "$FAST_MAX_MS"; then
        pass "$name: its own line after a fix at its round 12: $line"
    else
        fail "$name" "its line: '$line' (expected p99 >= $STALL_MIN_MS, median < $FAST_MAX_MS)" "$W/legacy.err"
    fi
}
check_legacy "legacy LegacyClient.java, unmodified" "$JPORT" java -cp "$LEGACY_BUILD" LegacyClient "$H" PORT 400 split
check_legacy "legacy legacy_client.py, unmodified" "$LPORT" python3 "$LEGACY_DIR/legacy_client.py" "$H" PORT 400 split
check_legacy "legacy legacy_client.js, unmodified" "$JPORT" node "$LEGACY_DIR/legacy_client.js" "$H" PORT 400 split
check_legacy "legacy legacy_client.pl, unmodified" "$JPORT" perl "$LEGACY_DIR/legacy_client.pl" "$H" PORT 400 split

# memccp: one process storing one 200,000-byte file MC_FILES times; each
# store timed from memcached's side (tests/programs/mc_watch.py). As is,
# stores stall (3-9 of 40 here, 42 ms each; a busy machine takes the
# stall away from most: 2 of 40 beside the plain lane; CI's machine
# stalled 5 of 160 files), so they are timed until the MC_SURE-th stall
# or MC_SAMPLE stores; fewer than MC_SURE stalls: a SKIP naming the
# count (too few to judge), and the fix itself must still have set the
# socket. After the fix, none of the next N stores may stall, N sized so
# that a fix that did nothing would show MC_SURE stalls expected there
# (MC_SURE x stores / stalls of the sample before, at least MC_AFTER_MIN;
# a fix that did nothing shows none with chance about e^-5). The files
# bound N: those memcached has not yet stored when the fix has ended, less
# MC_SLACK for the stores made while the watcher starts; a bound under N
# is a SKIP naming both. MC_FILES covers the sample before (MC_SAMPLE at
# most), N (MC_SAMPLE at most), the untimed start and the fix's own time
# (a store not held takes 0.3-0.9 ms here: 8,000 files are 2.4 s or more).
MC_SURE=5
MC_SAMPLE=1000
MC_AFTER_MIN=300
MC_FILES=10000
MC_SLACK=100

# mc_sets PORT: memcached's cmd_set at PORT (the stores made so far)
mc_sets() {
    local fd line
    exec {fd}<>"/dev/tcp/$H/$1" || return 1
    printf 'stats\r\n' >&"$fd"
    while read -r -t 5 -u "$fd" line; do
        line=${line%$'\r'}
        [[ $line == "STAT cmd_set "* ]] && echo "${line##* }"
        [[ $line == END ]] && break
    done
    exec {fd}>&-
}

check_memccp() {
    local name="memccp" mport before after="" i bstalls bstores astalls amed made left need=0 n=0
    selected "$name" || return 0
    if ! command -v memccp >/dev/null || ! command -v memcached >/dev/null; then
        skip "$name" "memccp or memcached missing (tests/install-deps.sh installs them)"
        return
    fi
    start_server fix-memcached "$LEGACY_DIR/memcached_server.sh" || { fail "$name: memcached"; return; }
    mport=$SERVER_PORT
    head -c 200000 /dev/zero | tr '\0' m >"$W/memccp.bin"
    local -a files=()
    for ((i = 0; i < MC_FILES; i++)); do files+=("$W/memccp.bin"); done
    (exec timeout -k 5 90 memccp --servers="$H:$mport" "${files[@]}" >"$W/memccp.out" 2>&1) &
    local tpid=$!
    CLIENT_PIDS+=("$tpid")
    before=$(timeout 40 python3 "$LEGACY_DIR/mc_watch.py" "$mport" "$MC_SAMPLE" 30 --until "$MC_SURE")
    bstalls=${before##*stalls=} bstalls=${bstalls%% *} bstores=${before##*stores=}
    PID=$(pgrep -P "$tpid" -x memccp)
    if [[ -z $PID ]]; then
        fail "$name: running" "no memccp process" "$W/memccp.out"
        return
    fi
    timeout 20 "${FIX[@]}" -m nodelay "$PID" >"$W/memccp.fix" 2>&1
    FIXRC=$?
    made=$(mc_sets "$mport")
    left=$((MC_FILES - ${made:-$MC_FILES} - MC_SLACK))
    if [[ $bstalls =~ ^[0-9]+$ ]] && ((bstalls >= MC_SURE)); then
        need=$(((MC_SURE * bstores + bstalls - 1) / bstalls))
        ((need < MC_AFTER_MIN)) && need=$MC_AFTER_MIN
        n=$((need < left ? need : left))
        ((n == need)) && after=$(timeout 40 python3 "$LEGACY_DIR/mc_watch.py" "$mport" "$n" 30)
    fi
    kill "$tpid" 2>/dev/null
    astalls=${after##*stalls=} amed=${after#median_ms=}
    astalls=${astalls%% *} amed=${amed%% *}
    if ((FIXRC != 0)) || ! grep -q 'connect .* set' "$W/memccp.fix"; then
        fail "$name: naglefix fix PID" "exit $FIXRC" "$W/memccp.fix"
    elif [[ ! $bstalls =~ ^[0-9]+$ ]]; then
        fail "$name: stores timed before the fix" "before: '$before'" "$W/memccp.out"
    elif ((bstalls < MC_SURE)); then
        skip "$name" "$bstalls stalls in $bstores stores before the fix (under $MC_SURE): too few to judge"
        pass "$name: naglefix fix PID set its socket ($bstalls stalls before it)"
    elif ((n < need)); then
        skip "$name" "before: $before; $n files left after the fix (of $MC_FILES; '${made:-}' stored), $need needed: not judged"
        pass "$name: naglefix fix PID set its socket (files short after it)"
    elif [[ ! $astalls =~ ^[0-9]+$ ]]; then
        fail "$name: stores timed after the fix" "before: $before; after: '$after'" "$W/memccp.out"
    elif ((astalls != 0)) || [[ ${after##*stores=} != "$n" ]] || ! lt "$amed" "$FAST_MAX_MS"; then
        fail "$name: no store of the next $n stalls after the fix" "before: $before; after: $after"
    else
        pass "$name: before $before; after 'fix PID' $after (unfixed, ~$((n * bstalls / bstores)) expected; $left of $MC_FILES files left after the fix)"
    fi
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
    wait_until 5 accepted_one "$spid" "$out"
    exec {hold}>&-
}
# accepted_one SPID FIXOUT: accepted_nodelay's reading; true once there is one
accepted_one() {
    read -r ND_INO ND < <("$W/nodelay_of" "$1" | while read -r _ ino nd listen; do
        ((listen == 0)) && ! grep -q "\"inode\":$ino," "$2" && echo "$ino $nd"
    done | tail -n 1)
    [[ -n $ND_INO ]]
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
