# t_context.sh - naglefix fix: a process under the library; one in another network namespace.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

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
