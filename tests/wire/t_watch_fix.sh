#!/usr/bin/env bash
# t_watch_fix.sh: `naglefix watch --fix` (issue 19, its last section).
# Root only; runs in a network namespace of its own (re-executed under
# `unshare -n`), so that watch sees this test's traffic and nothing of
# the tests running beside it, plus a second namespace ("remote", joined
# by a veth pair) standing for another host.
#
# With memcached running beside (and a client holding three Nagle-on
# connections to it, one-write requests, never stalling), watch --fix
# --json runs while these stall, bare:
#   python   legacy_client.py vs legacy_server.py, 60 rounds
#   java     LegacyClient vs EchoServer, 60 rounds
#   static   split_client.c built with cc -static, 60 rounds (prints its
#            slow rounds), against java's server (so in java's row)
#   python6  legacy_client.py over ::1 vs reply_server.py, 60 rounds
#   node, perl  legacy_client.js and .pl vs java's server, 60 rounds each
#   memccp   memccp_rounds.sh vs the memcached beside: each memccp process
#            that stalls fixed at its first stall
#   HttpServer  Java's (tests/wire/JHttpServer.java), as http.server below
#   http     python3 -m http.server (the holder is the server: its
#            connection and its listener are fixed) answering
#            http_rounds.py, 30 rounds; then a second client on a new
#            connection, fast from its first round (the listener passed
#            TCP_NODELAY on at accept)
#   remote   legacy_client.py in the remote namespace (a holder that is
#            not on this host) vs reply_server.py here: the receiving end's fix
#            printed (quickack rule, per-route quickack), nothing changed:
#            it stays slow, and neither end's TCP_NODELAY moves
# Checked: each local holder fixed at once (a wire_fix line for its pid
# with TCP_NODELAY 0 -> 1; then the program's median under 5 ms, the
# static client's slow rounds 3 at most: fixed within a round or two of
# its first stall, well within a second); and every TCP socket of every
# process in both namespaces (tests/wire/nodelay_all.c: pidfd_getfd over
# /proc/*/fd) read before and after: none changed but those watch said it
# set (the http.server listener is the one alive at both readings).
# Env: T (tests/lib.sh's name filter). Output in build/wire-watch-fix/.
# Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $EUID -eq 0 && -z ${NF_WATCH_FIX_NS:-} ]]; then
    exec env NF_WATCH_FIX_NS=1 unshare -n bash "${BASH_SOURCE[0]}" "$@"
fi
# shellcheck source-path=SCRIPTDIR source=../legacy/common.sh
. "$HERE/../legacy/common.sh"
export LC_ALL=C
clean_env
FAST_MAX_MS=5
STALL_MIN_MS=30
W=$TOP/build/wire-watch-fix
REMOTE=nfwf$$
rm -rf "$W"
mkdir -p "$W"
need_built make "$NAGLEFIX"
if [[ $EUID -ne 0 ]]; then
    skip "t_watch_fix" "needs root (CAP_NET_RAW, pidfd_getfd, network namespaces)"
    finish
    exit
fi
H=127.0.0.1

WATCH_PID=""
BG_PIDS=()
on_exit() {
    local p
    [[ -z $WATCH_PID ]] || kill -KILL "$WATCH_PID" 2>/dev/null
    for p in "${BG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$REMOTE" 2>/dev/null
    cleanup
}
trap on_exit EXIT

ip link set lo up || { fail "lo up in the test's namespace"; finish; exit; }
# the remote namespace: 10.201.0.2 there, 10.201.0.1 here
RA=10.201.0.2 LA=10.201.0.1
if ip netns add "$REMOTE" && ip link add nfwf0 type veth peer name nfwf1 &&
    ip link set nfwf1 netns "$REMOTE" && ip addr add "$LA/24" dev nfwf0 && ip link set nfwf0 up &&
    ip netns exec "$REMOTE" ip addr add "$RA/24" dev nfwf1 &&
    ip netns exec "$REMOTE" ip link set nfwf1 up && ip netns exec "$REMOTE" ip link set lo up; then
    :
else
    fail "the remote namespace and its veth"
fi

cc -O2 -o "$W/nodelay_all" "$HERE/nodelay_all.c" || fail "cc nodelay_all.c"
cc -static -O2 -o "$W/split_client" "$HERE/split_client.c" || fail "cc -static split_client.c"
compile_java || fail "compile Java sources"

# run_bg NAME CMD...: CMD in the background through exec (BG_PID its pid).
run_bg() {
    local name=$1
    shift
    (exec env -u LD_PRELOAD "$@") >"$W/$name.out" 2>"$W/$name.err" &
    BG_PID=$!
    BG_PIDS+=("$BG_PID")
}
# wait_bg NAME PID: waits (CLIENT_TIMEOUT at most); prints NAME's median or NA.
wait_bg() {
    local name=$1 pid=$2 i m
    for ((i = 0; i < CLIENT_TIMEOUT * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    m=$(sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' "$W/$name.out" | tail -n 1)
    echo "${m:-NA}"
}
# snapshot FILE: every TCP socket's TCP_NODELAY in both namespaces, as
# "NS PID FD INODE NODELAY LISTEN" lines.
snapshot() {
    { "$W/nodelay_all" -n | sed 's/^/here /'
      ip netns exec "$REMOTE" "$W/nodelay_all" -n | sed 's/^/remote /'; } | sort >"$1"
}

# ---- servers, and memcached beside with its idle client ------------------------

# java and static share a server: one row, the second client's connection
# fixed at its own first stall (the detector's on_conn)
start_server echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"
port_echo=$SERVER_PORT
start_server py python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME"
port_py=$SERVER_PORT
start_server py6 python3 "$HERE/reply_server.py" ::1 "$SERVER_LIFETIME"
port_py6=$SERVER_PORT
timeout 120 javac -d "$LEGACY_BUILD" "$HERE/JHttpServer.java" || fail "compile JHttpServer.java"
start_server jhttp java -cp "$LEGACY_BUILD" JHttpServer "$SERVER_LIFETIME"
port_jhttp=$SERVER_PORT
mkdir -p "$W/www"
printf 'hello world\n' >"$W/www/hello.txt"
start_server http "$HERE/serve_port.sh" python3 -m http.server --protocol HTTP/1.1 \
    --bind "$H" --directory "$W/www" PORT
port_http=$SERVER_PORT
# a server on the veth address, for the remote holder
start_server veth python3 "$HERE/reply_server.py" "$LA" "$SERVER_LIFETIME"
port_veth=$SERVER_PORT
start_server memcached "$LEGACY_DIR/memcached_server.sh"
port_mc=$SERVER_PORT
run_bg mc-client python3 -c '
import socket, sys, time
conns = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(3)]
for c in conns:
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
for i in range(600):
    for c in conns:
        c.sendall(b"get k%d\r\n" % i)
        while not c.recv(64).endswith(b"END\r\n"):
            pass
    time.sleep(0.05)
' "$port_mc"
mc_client=$BG_PID
sleep 0.5
snapshot "$W/before"

# ---- watch --fix, the stalling programs -----------------------------------------

"$NAGLEFIX" watch --fix --json >"$W/watch.out" 2>"$W/watch.err" &
WATCH_PID=$!
for ((i = 0; i < 50; i++)); do # its packet socket bound (a protocol in /proc/net/packet)
    awk 'NR > 1 && $4 != "0000" { f = 1 } END { exit !f }' /proc/net/packet && break
    sleep 0.05
done

declare -A PID MED
client() { # NAME CMD...
    local name=$1
    shift
    run_bg "$name" "$@"
    PID[$name]=$BG_PID
    MED[$name]=$(wait_bg "$name" "$BG_PID")
}
client python python3 "$LEGACY_DIR/legacy_client.py" "$H" "$port_py" 60 split
client java java -cp "$LEGACY_BUILD" LegacyClient "$H" "$port_echo" 60 split
client static "$W/split_client" "$H" "$port_echo" 60
client python6 python3 "$LEGACY_DIR/legacy_client.py" ::1 "$port_py6" 60 split
client node node "$LEGACY_DIR/legacy_client.js" "$H" "$port_echo" 60 split
client perl perl "$LEGACY_DIR/legacy_client.pl" "$H" "$port_echo" 60 split
client jhttp python3 "$HERE/http_rounds.py" "$H" "$port_jhttp" 30 /hello.txt
mkdir -p "$W/mc"
head -c 200000 /dev/zero | tr '\0' m >"$W/mc/f1.bin"
mc_files=("$W/mc/f1.bin")
for ((i = 2; i <= 40; i++)); do cp "$W/mc/f1.bin" "$W/mc/f$i.bin"; mc_files+=("$W/mc/f$i.bin"); done
client memccp "$LEGACY_DIR/memccp_rounds.sh" "$H:$port_mc" 3 "${mc_files[@]}"
client http python3 "$HERE/http_rounds.py" "$H" "$port_http" 30 /hello.txt
client http2 python3 "$HERE/http_rounds.py" "$H" "$port_http" 30 /hello.txt
# the remote holder: read both ends' TCP_NODELAY while it runs, after
# watch has printed its advice
run_bg remote ip netns exec "$REMOTE" python3 "$LEGACY_DIR/legacy_client.py" "$LA" "$port_veth" 60 split
PID[remote]=$BG_PID
for ((i = 0; i < 50; i++)); do
    grep -q '"holder_here":false' "$W/watch.out" && break
    sleep 0.1
done
snapshot "$W/during-remote"
MED[remote]=$(wait_bg remote "${PID[remote]}")
sleep 0.3
snapshot "$W/after"
kill -INT "$WATCH_PID"
wait "$WATCH_PID"
rc=$?
WATCH_PID=""
kill "$mc_client" 2>/dev/null
selected "watch --fix: exit 0 at SIGINT" &&
    if [[ $rc == 0 ]]; then pass "watch --fix: exit 0 at SIGINT"; else
        fail "watch --fix: exit 0 at SIGINT" "exit $rc" "$W/watch.err"; fi

# fix_of FIELD VALUE KEY: KEY's "result before after" in the wire_fix
# line whose FIELD (pid, local) is VALUE
fix_of() {
    jq -r --arg f "$1" --arg v "$2" --arg k "$3" 'select(.event == "wire_fix" and (.[$f] | tostring) == $v)
        | .[$k] | select(. != null) | "\(.result) \(.before) \(.after)"' "$W/watch.out" 2>/dev/null | head -n 1
}

# fixed NAME FIELD VALUE: the wire_fix line of FIELD VALUE set its socket
# 0 -> 1, and NAME was then fast
fixed() {
    local name=$1 r
    selected "$name fixed" || return 0
    r=$(fix_of "$2" "$3" socket)
    if [[ $r != "set 0 1" ]]; then
        fail "$name fixed" "wire_fix of $2 $3: '$r'" "$W/watch.out"
        return
    fi
    assert_ms_lt "$name fixed (socket 0 -> 1), then median" "${MED[$name]:-NA}" "$FAST_MAX_MS"
}
fixed python pid "${PID[python]:-0}"
fixed java pid "${PID[java]:-0}"
fixed static pid "${PID[static]:-0}"
fixed http local "$H:$port_http" # the holder is the server
fixed python6 pid "${PID[python6]:-0}"
fixed node pid "${PID[node]:-0}"
fixed perl pid "${PID[perl]:-0}"
fixed jhttp local "$H:$port_jhttp"
# memccp: a process a round; each one that stalled fixed at its first stall
if selected "memccp: each process that stalled fixed"; then
    named=$(jq -r --arg p "$H:$port_mc" 'select((.event == "wire_stall" or .event == "wire_conn")
        and .peer == $p) | .pid' "$W/watch.out" 2>/dev/null | sort -u)
    bad="" n=0
    for p in $named; do
        n=$((n + 1))
        [[ $(fix_of pid "$p" socket) == "set 0 1" ]] || bad+=" $p"
    done
    if [[ $n -ge 1 && -z $bad ]]; then
        pass "memccp: each process that stalled fixed ($n of 3 stalled)"
    else
        fail "memccp: each process that stalled fixed" "$n named, not fixed:$bad" "$W/watch.out"
    fi
fi
if selected "static: fixed within a second of its first stall"; then
    slow=$(sed -n 's/.* slow=\([0-9]*\)$/\1/p' "$W/static.out")
    if [[ -n $slow && $slow -ge 1 && $slow -le 3 ]]; then
        pass "static: fixed within a second of its first stall ($slow slow rounds of 60)"
    else
        fail "static: fixed within a second of its first stall" "slow rounds '$slow'" "$W/static.out"
    fi
fi
if selected "http: the listener fixed, a new connection fast from its first round"; then
    l=$(fix_of local "$H:$port_http" listener)
    p99=$(sed -n 's/.* p99_ms=\([0-9.]*\).*/\1/p' "$W/http2.out")
    if [[ $l == "set 0 1" ]] && awk -v p="${p99:-99}" 'BEGIN { exit !(p < 5) }'; then
        pass "http: the listener fixed, a new connection fast from its first round (p99 $p99 ms)"
    else
        fail "http: the listener fixed, a new connection fast from its first round" \
            "listener '$l', second client's p99 '${p99:-}' ms" "$W/watch.out"
    fi
fi
# ---- the remote holder: advice, nothing changed -------------------------------------

if selected "remote holder: the receiving end's fix printed, nothing changed"; then
    line=$(jq -c 'select(.event == "wire_fix" and .holder_here == false)' "$W/watch.out" 2>/dev/null | head -n 1)
    rows=$(jq -r --arg l "$RA" 'select(.event == "wire_fix" and (.local | startswith($l)) and .action != "none")' \
        "$W/watch.out" 2>/dev/null | wc -l)
    # while it ran: the server's accepted socket and the client's, TCP_NODELAY 0
    srv=$(pgrep -f "reply_server.py $LA" | while read -r p; do
        [[ $(cat "/proc/$p/comm" 2>/dev/null) == python* ]] && echo "$p"; done | head -n 1)
    moved=$(awk -v p="${srv:-0}" '($1 == "remote" || $2 == p) && $6 == 0 && $5 != 0' "$W/during-remote" | wc -l)
    ends=$(awk -v p="${srv:-0}" '($1 == "remote" || $2 == p) && $6 == 0' "$W/during-remote" | wc -l)
    if [[ $line == *"\"peer_fix\":\"accept $LA:$port_veth quickack\""* && $line == *'"route_fix":"ip route change'* &&
        $line == *"\"waiting_pid\":$srv,"* && $rows == 0 && $ends -ge 2 && $moved == 0 ]]; then
        assert_ms_ge "remote holder: the receiving end's fix printed, nothing changed; its median" \
            "${MED[remote]:-NA}" "$STALL_MIN_MS"
    else
        fail "remote holder: the receiving end's fix printed, nothing changed" \
            "line '$line', fixes $rows, $moved of $ends ends with TCP_NODELAY" \
            "$W/watch.out"
    fi
fi

# ---- every socket before and after ------------------------------------------------

# sockets alive at both readings (same namespace, pid, fd, inode): their
# TCP_NODELAY may differ only where watch said it set it (pid and fd)
if selected "no socket watch did not name was touched"; then
    jq -r 'select(.event == "wire_fix" and .pid != null) as $f
        | ($f.socket, $f.listener) | select(. != null and .result == "set") | "\($f.pid) \(.fd)"' \
        "$W/watch.out" 2>/dev/null | sort -u >"$W/set-by-watch"
    join -j1 <(awk '{ print $1 ":" $2 ":" $3 ":" $4, $5 }' "$W/before" | sort) \
        <(awk '{ print $1 ":" $2 ":" $3 ":" $4, $5 }' "$W/after" | sort) >"$W/both"
    both=$(wc -l <"$W/both")
    changed=$(awk '$2 != $3' "$W/both" | tr ':' ' ' | awk '{ print $2, $3 }' | sort -u)
    unexpected=$(comm -23 <(printf '%s\n' "$changed" | sed '/^$/d') "$W/set-by-watch")
    nmc=$(awk -v p="$mc_client" '$2 == p' "$W/after" | wc -l)
    if [[ -z $unexpected && $both -ge 8 && $nmc == 3 ]]; then
        pass "no socket watch did not name was touched ($both sockets at both readings, memcached's client's 3 among them; changed: $(printf '%s' "$changed" | tr '\n' ',' ))"
    else
        fail "no socket watch did not name was touched" \
            "changed without a wire_fix: '$unexpected' ($both at both readings, $nmc of memcached's client)" \
            "$W/both"
    fi
fi
if selected "only stalled sockets were set"; then
    # each socket watch set belongs to a row it found (its pid is a holder's)
    bad=$(jq -r 'select(.event == "wire_fix" and .pid != null) | .pid' "$W/watch.out" 2>/dev/null | sort -u |
        while read -r p; do
            [[ $(jq -s --argjson p "$p" 'map(select((.event == "wire_stall" or .event == "wire_conn") and .pid == $p)) | length' \
                "$W/watch.out") -gt 0 ]] || echo "$p"
        done)
    n=$(jq -r 'select(.event == "wire_fix" and .pid != null)' "$W/watch.out" 2>/dev/null | grep -c '"pid"' || true)
    if [[ -z $bad && $n -ge 8 && -s $W/watch.out ]]; then
        pass "only stalled sockets were set ($n wire_fix lines, each for a holder found stalling)"
    else
        fail "only stalled sockets were set" "pids without a stall: '$bad', $n fixes" "$W/watch.out"
    fi
fi

finish
