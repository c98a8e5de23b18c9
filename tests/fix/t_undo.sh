# t_undo.sh - naglefix fix: --dry-run, --undo, and a program's own setsockopt, which wins.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

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
    wait_rounds undo $((n1 + 8)) # the rounds after it measured
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
    wait_rounds undo $((n1 + 1 + 50))
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
    wait_rounds undo $((n1 + 1 + 10))
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
    wait_until 5 grep -q '^nodelay_off ' "$W/off.out"
    n1=$(sed -n 's/^nodelay_off //p' "$W/off.out")
    wait_rounds off $((${n1:-0} + 1 + 10)) # the rounds after it measured
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
