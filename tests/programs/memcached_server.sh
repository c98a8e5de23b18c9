#!/usr/bin/env bash
# memcached_server.sh: a memcached on 127.0.0.1 for the legacy harness.
# Picks a free port, starts memcached on it (TCP only; as root, it runs as
# root: the harness owns nothing else), and prints "PORT <n>" (what
# start_server waits for) once it accepts connections: printed before,
# a fast client met "Connection refused" (memccp, 2 runs of 2 on a fast
# machine). The port is free when picked, not when memcached binds it:
# if memcached ends before it listens, a new port is picked, 5 in all.
# Exits with memcached; a signal to this script stops it too.
set -eu
user=()
[ "$(id -u)" -eq 0 ] && user=(-u root)
mc=""
trap '[ -z "$mc" ] || kill "$mc" 2>/dev/null' EXIT
trap 'exit 143' TERM INT HUP
for _ in 1 2 3 4 5; do
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    memcached -l 127.0.0.1 -p "$port" -U 0 "${user[@]}" &
    mc=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        kill -0 "$mc" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$mc" 2>/dev/null && break
    wait "$mc" || true
    mc=""
done
[ -n "$mc" ] || exit 1
echo "PORT $port"
wait "$mc"
