#!/usr/bin/env bash
# serve_port.sh CMD...: runs a server that cannot report its port itself
# (python3 -m http.server, nginx, sshd, git daemon) for
# tests/programs/common.sh's start_server: each argument's PORT replaced by a
# free loopback port, CMD started in the background, and "PORT <n>" printed
# once 127.0.0.1:<n> accepts connections (within 10 s; else status 1).
# The port is free when picked, not when CMD binds it: if CMD ends before
# it listens (another process took the port), a new port is picked, 5 in
# all, as tests/external/daemons.sh's start_daemon does.
# Exits when CMD does, or when its standard input closes (start_server's
# FIFO: the harness went away) or on TERM, INT or HUP, stopping CMD (TERM).
# CMD's standard output goes to our standard error: only the PORT line
# is ours. SERVE_PORT in the environment: that port instead of a free one
# (a server whose port is in a config file the caller wrote; one try).
set -u
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# listening: CMD's pid srv accepts on port (status 0), ended (1), or
# neither within 10 s (2)
listening() {
    local i
    for ((i = 0; i < 200; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$srv" 2>/dev/null || return 1
        sleep 0.05
    done
    return 2
}

exec 3<&0 # a background job's standard input is /dev/null: keep ours
srv=""
trap '[[ -z $srv ]] || { kill -TERM "$srv" 2>/dev/null; wait "$srv"; }' EXIT
trap 'exit 143' TERM INT HUP
tries=5
[[ -z ${SERVE_PORT:-} ]] || tries=1
for ((try = 0; try < tries; try++)); do
    port=${SERVE_PORT:-$(free_port)} || exit 1
    args=()
    for a in "$@"; do args+=("${a//PORT/$port}"); done
    "${args[@]}" </dev/null >&2 3<&- &
    srv=$!
    listening
    case $? in
    0) break ;;
    1) wait "$srv"; srv="" ;;
    *) exit 1 ;;
    esac
done
[[ -n $srv ]] || exit 1
echo "PORT $port"
# stdin's EOF or the server's end, whichever comes first
cat <&3 >/dev/null &
watch=$!
wait -n "$srv" "$watch"
kill "$watch" 2>/dev/null
