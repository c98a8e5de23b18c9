#!/usr/bin/env bash
# memcached_server.sh: a memcached on 127.0.0.1 for the legacy harness.
# Picks a free port, starts memcached on it (TCP only; as root, it runs as
# root: the harness owns nothing else), and prints "PORT <n>" (what
# start_server waits for) once it accepts connections: printed before,
# a fast client met "Connection refused" (memccp, 2 runs of 2 on a fast
# machine). Exits with memcached; a signal to this script stops it too.
set -eu
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user=()
[ "$(id -u)" -eq 0 ] && user=(-u root)
memcached -l 127.0.0.1 -p "$port" -U 0 "${user[@]}" &
mc=$!
trap 'kill "$mc" 2>/dev/null' EXIT
trap 'exit 143' TERM INT HUP
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$mc" 2>/dev/null || exit 1
    sleep 0.05
done
echo "PORT $port"
wait "$mc"
