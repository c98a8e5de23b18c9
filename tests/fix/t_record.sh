# t_record.sh - naglefix fix: no policy, nothing to fix, the record's place and its removal.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

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
    # until the fork has become sleep (fix names the process by its comm)
    wait_until 5 grep -qx sleep "/proc/$s/comm"
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
    # a process that ends once followed (its wait said), without a socket
    sleep 30 &
    w=$!
    CLIENT_PIDS+=("$w")
    timeout 20 "${FIX[@]}" -m nodelay --follow "$w" >"$W/notcp-follow.fix" 2>&1 &
    local fp=$!
    wait_until 10 grep -q "holds no TCP socket yet: waiting for one" "$W/notcp-follow.fix"
    kill "$w"
    wait "$w" 2>/dev/null
    wait "$fp"
    rc=$?
    if ((rc == 6)) && grep -q "pid $w (sleep) holds no TCP socket yet: waiting for one" "$W/notcp-follow.fix" &&
        grep -q "pid $w ended (0 sockets set)" "$W/notcp-follow.fix" &&
        grep -q "pid $w held no TCP socket while followed: nothing fixed" "$W/notcp-follow.fix"; then
        pass "$name: --follow waits, said; the process ended without one: said, exit 6"
    else
        fail "$name: --follow, none came" "exit $rc" "$W/notcp-follow.fix"
    fi
    # SIGINT once it follows (its wait said)
    timeout -k 5 20 "${FIX[@]}" -m nodelay --follow "$s" >"$W/notcp-int.fix" 2>&1 & # (it passes INT on)
    fp=$!
    wait_until 10 grep -q "holds no TCP socket yet: waiting for one" "$W/notcp-int.fix"
    kill -INT "$fp"
    wait "$fp"
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
