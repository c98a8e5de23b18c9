# t_cost.sh - naglefix fix: the cost of --follow on 1,000 connections.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

# ---- the cost of --follow ---------------------------------------------------------

# A process holding 1,000 connections, followed: the CPU time of naglefix
# itself (utime + stime) until its first scan has set all 1,000 and in the
# next 2 s (rescans, 20 of them, the share of a core over the window as
# measured); each socket duplicated twice (identify, set), never again on
# later rescans (strace counts pidfd_getfd, and the ppoll waits between
# scans: 5 of them, so 4 rescans at least were made).
# traced_waits N: the strace of check_cost shows N ppoll waits, or more
traced_waits() {
    (($(grep -c '^ppoll(' "$W/many.strace" 2>/dev/null) >= $1))
}
check_cost() {
    local name="--follow on 1,000 connections" fpid ticks first hz=$(getconf CLK_TCK) calls
    selected "$name" || return 0
    start_client many python3 "$HERE/many_conns.py" "$H" "$PPORT" 1000 60 || return
    wait_until 30 grep -q '^ready' "$W/many.out"
    "${FIX[@]}" -m nodelay --follow "$PID" >"$W/many.fix" 2>&1 &
    fpid=$!
    # the first scan: 1,000 set, recorded
    wait_until 20 awk '/ connect .* set/ { n++ } END { exit n < 1000 }' "$W/many.fix"
    first=$(awk '{ print $14 + $15 }' "/proc/$fpid/stat")
    local t0=$EPOCHREALTIME window
    sleep 2 # the rescans measured
    ticks=$(awk -v f="$first" '{ print $14 + $15 - f }' "/proc/$fpid/stat")
    window=$(elapsed "$t0")
    kill -TERM "$fpid"
    wait "$fpid"
    local sets frc=$?
    sets=$(grep -c ' connect .* set' "$W/many.fix")
    local waits=""
    if command -v strace >/dev/null; then
        # --dry-run under strace, stopped (SIGINT) after its 5th wait
        rm -f "$W/many.strace"
        strace -e trace=pidfd_getfd,ppoll -o "$W/many.strace" \
            "${FIX[@]}" -m nodelay --follow --dry-run "$PID" >/dev/null 2>&1 &
        local sp=$! dp
        wait_until 20 traced_waits 5
        dp=$(pgrep -P "$sp")
        [[ -n $dp ]] && kill -INT "$dp"
        wait_until 10 gone "$sp" || kill -KILL "$sp" "$dp" 2>/dev/null
        wait "$sp"
        calls=$(grep -c '^pidfd_getfd(' "$W/many.strace")
        waits=$(grep -c '^ppoll(' "$W/many.strace")
    fi
    local pct
    pct=$(awk -v t="$ticks" -v hz="$hz" -v s="$window" 'BEGIN { printf "%.1f", 100 * t / hz / s }')
    echo "note: fix --follow, 1,000 connections: the first scan $first ticks, next $window s $ticks ticks ($pct% of one core); pidfd_getfd in --dry-run's first scan and rescans (${waits:-?} waits between): ${calls:-?} (clock ticks of 1/$hz s)"
    if ((sets != 1000)); then
        fail "$name: each set once" "$sets set lines" "$W/many.fix"
    elif ((frc != 0)) || ! grep -q 'Terminated: stopped following (1000 sockets set)' "$W/many.fix"; then
        fail "$name: SIGTERM ends follow" "exit $frc" "$W/many.fix"
    elif [[ -n ${calls:-} ]] && ((calls != 1000 || waits < 5)); then
        fail "$name: a rescan takes no socket again" "pidfd_getfd $calls times, ${waits:-0} waits between scans (1,000 sockets; 5 waits wanted)"
    elif ! lt "$pct" 25; then
        fail "$name: cost" "$pct% of a core"
    else
        pass "$name: rescans every 100 ms cost $pct% of one core ($window s), the first scan $first ticks; 1000 set once, ${calls:-?} pidfd_getfd in --dry-run's first scan and rescans (${waits:-?} waits between); SIGTERM ends it (exit 0)"
    fi
    kill "$PID" 2>/dev/null
}
check_cost
