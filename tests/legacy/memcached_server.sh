#!/usr/bin/env bash
# memcached_server.sh: a memcached on 127.0.0.1 for the legacy harness.
# Picks a free port, prints "PORT <n>" (what start_server waits for), then
# becomes memcached on it (TCP only; as root, it runs as root: the harness
# owns nothing else). Exits with memcached, which the harness kills.
set -eu
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "PORT $port"
user=()
[ "$(id -u)" -eq 0 ] && user=(-u root)
exec memcached -l 127.0.0.1 -p "$port" -U 0 "${user[@]}"
