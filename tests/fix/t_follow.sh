# t_follow.sh - naglefix fix: --follow: connections made after the fix.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

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
