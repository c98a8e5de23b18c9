#!/usr/bin/env bash
# serve_port.sh CMD...: runs a server that cannot report its port itself
# (python3 -m http.server, nginx, sshd, git daemon) for
# tests/programs/common.sh's start_server: each argument's PORT replaced by a
# free loopback port, CMD started in the background, and "PORT <n>" printed
# once 127.0.0.1:<n> accepts connections (within 10 s; else status 1).
# Exits when CMD does, or when its standard input closes (start_server's
# FIFO: the harness went away) or on TERM, INT or HUP, stopping CMD (TERM).
# CMD's standard output goes to our standard error: only the PORT line
# is ours. SERVE_PORT in the environment: that port instead of a free one
# (a server whose port is in a config file the caller wrote).
set -u
port=${SERVE_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')} || exit 1
args=()
for a in "$@"; do args+=("${a//PORT/$port}"); done
exec 3<&0 # a background job's standard input is /dev/null: keep ours
"${args[@]}" </dev/null >&2 3<&- &
srv=$!
trap 'kill -TERM "$srv" 2>/dev/null; wait "$srv"' EXIT
trap 'exit 143' TERM INT HUP
for ((i = 0; i < 200; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$srv" 2>/dev/null || exit 1
    sleep 0.05
done
((i < 200)) || exit 1
echo "PORT $port"
# stdin's EOF or the server's end, whichever comes first
cat <&3 >/dev/null &
watch=$!
wait -n "$srv" "$watch"
kill "$watch" 2>/dev/null
