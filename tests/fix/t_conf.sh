# t_conf.sh - naglefix fix: -c CONF: rules and sides.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

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
