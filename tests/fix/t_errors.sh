# t_errors.sh - naglefix fix: fix's failures, each said.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

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
