#!/usr/bin/env bash
# t_captures.sh: `naglefix scan` on captures of programs nobody here wrote
# (issue 18, "Judged by", first bullet), made with the real tcpdump and
# Wireshark's dumpcap on loopback, each restricted by a port filter to the
# test's own traffic.
#
# Found, each with exactly one row (scan --json's wire_stall lines): the
# holder (the client's address:port, the one that connected to the server
# port the test gave it, for a client; the server's for a server), the side
# (connect for a client, accept for a server), the stall count, and the
# median stall within 10% of the program's own median time a round (and
# within 5% of the ground truth's):
#   java      tests/legacy LegacyClient vs EchoServer     tcpdump -i lo
#   python4   legacy_client.py over IPv4                  tcpdump -i any (cooked)
#   python6   legacy_client.py over IPv6 (::1)            dumpcap -i lo (pcapng)
#   node      legacy_client.js vs EchoServer              tcpdump -i lo -s 96
#   perl      legacy_client.pl vs EchoServer              tcpdump -w - | naglefix scan -
#   http.server  python3 -m http.server (HTTP/1.1) answering http.client  tcpdump -i lo
#   HttpServer   the JDK's com.sun.net.httpserver answering http.client   tcpdump -i lo
#   memccp    tests/legacy/memccp_rounds.sh vs memcached  tcpdump -i lo -s 96
# Stall counts, reasoned: a Linux receiver delays its ACKs only in
# ping-pong mode, which it enters when it sends data within its ACK
# timeout (ato) of receiving some; ato is 0 until it first receives data.
# The server that receives the split request answers round 1 right after
# it, so from round 2 on it delays; the client that receives the split
# response (http.client) sent its first request with ato still 0, and its
# second one right after the first response. Either way round 1 is ACKed
# at once and rounds 2..ROUNDS stall: ROUNDS-1 stalls (round 1 is also the
# programs' own warm-up, outside their median; seen so in every capture
# here). memccp's stalls depend on when memcached
# reads (tests/legacy/run.sh): their count and median are the ground
# truth's, and the measured check is the time they cost: a run's median
# as is less its median under `naglefix -m nodelay`, within 10% of the
# stall total a run (scan's total over the measured runs / their number).
#
# The ground truth is capcheck.py's own reading of the packets (tshark's
# fields): a data segment, the peer's first ACK of it pure and >= 30 ms
# late, the holder's next new data <= 2 ms after that ACK.
#
# Nothing found (no row, and none in the ground truth either, on a capture
# that holds the connections): the one-write control (LegacyClient single,
# legacy_client.py single); every stalling program above under
# `naglefix -m nodelay` (the client, or the HTTP server), whose median must
# also be under 5 ms (the fix took); and real servers' traffic: nginx with
# curl (keep-alive and Connection: close), PostgreSQL's pgbench (select-only
# and TPC-B), memcached with memaslap, OpenSSH's sshd with ssh and scp,
# git daemon with git clone. A real server's capture in which the ground
# truth finds a stall must have exactly those rows (and, for git, whose
# client and server run under `naglefix audit`, the audit's split writes
# on each holder); a missing real server program is a SKIP.
#
# Env: ROUNDS (default 11), T (tests/lib.sh's name filter, by program:
# T=node, T=nginx). Captures, scan's output and logs stay in
# build/wire-captures/. Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../legacy/common.sh
. "$HERE/../legacy/common.sh"
export LC_ALL=C
clean_env
ROUNDS=${ROUNDS:-11}
CAP_LIMIT=90 # seconds a capture may run, at most
W=$TOP/build/wire-captures
CHECK=(timeout 150 python3 "$HERE/capcheck.py")
H=127.0.0.1
rm -rf "$W"
mkdir -p "$W"

CAP_PID=""
PG_PIDFILE=""
on_exit() {
    [[ -z $CAP_PID ]] || { kill -INT "$CAP_PID" 2>/dev/null; wait "$CAP_PID" 2>/dev/null; }
    declare -F pg_stop >/dev/null && pg_stop
    cleanup # common.sh's: the servers start_server started
}
trap on_exit EXIT

# results CMD...: capcheck.py's lines -> pass / fail (read in this shell:
# the counts are its variables); its failure to run is a failure too
results() {
    local kind name why rc
    "$@" >"$W/capcheck.out" 2>"$W/capcheck.err"
    rc=$?
    while IFS=$'\t' read -r kind name why; do
        case $kind in
            pass) pass "$name" ;;
            fail) fail "$name" "$why" ;;
            note) echo "note: $name" ;;
            *) fail "capcheck" "unexpected line: $kind $name $why" ;;
        esac
    done <"$W/capcheck.out"
    ((rc == 0)) || fail "capcheck.py $2 ${3:-}" "exit $rc" "$W/capcheck.err"
}

# ---- capturing -------------------------------------------------------------

# cap_start NAME TOOL FILTER OPTS...: TOOL (tcpdump: pcap, dumpcap:
# pcapng) with OPTS captures FILTER into $W/NAME.pcap; waits until it says
# it is listening. tcpdump in immediate mode (every packet read at once, not
# a ring block at a time: else the packets of the last block are lost at
# SIGINT, "0 packets captured" of 124 received) and packet-buffered (-U),
# with an 8 MiB buffer (-B: in immediate mode the ring's slots are
# snaplen-sized, 256 KiB on `any`, whose default 2 MiB then dropped 1-10
# of a client's 62 packets here); dumpcap has no immediate mode: cap_stop
# waits for its ring's timeout. Status 1 if it never listens.
CAP_FILE="" CAP_TOOL=""
cap_start() {
    local name=$1 tool=$2 filter=$3 i
    shift 3
    CAP_FILE=$W/$name.pcap CAP_TOOL=$tool
    : >"$CAP_FILE.log"
    case $tool in
        tcpdump) timeout -s INT -k 5 "$CAP_LIMIT" tcpdump --immediate-mode -U -B 8192 -n "$@" \
            -w "$CAP_FILE" "$filter" 2>"$CAP_FILE.log" & ;;
        dumpcap) timeout -s INT -k 5 "$CAP_LIMIT" dumpcap "$@" -f "$filter" \
            -w "$CAP_FILE" 2>"$CAP_FILE.log" & ;;
    esac
    CAP_PID=$!
    for ((i = 0; i < 200; i++)); do
        grep -Eq '^(tcpdump: )?listening on|^Capturing on' "$CAP_FILE.log" && return 0
        kill -0 "$CAP_PID" 2>/dev/null || break
        sleep 0.05
    done
    fail "$name: $tool listens" "no 'listening' line" "$CAP_FILE.log"
    cap_stop quiet
    return 1
}

# cap_stop [quiet]: SIGINT (through timeout, which passes it on), then
# waits for the capture to flush and exit; checks it exited 0 and that the
# kernel dropped nothing.
cap_stop() {
    local rc name=${CAP_FILE##*/}
    [[ -n $CAP_PID ]] || return 1
    [[ $CAP_TOOL == dumpcap ]] && sleep 0.3 # its ring's blocks time out (no immediate mode)
    kill -INT "$CAP_PID" 2>/dev/null
    wait "$CAP_PID"
    rc=$?
    CAP_PID=""
    [[ ${1:-} == quiet ]] && return 0
    if ((rc != 0)) || ! grep -Eq '^0 packets dropped by kernel|/0 \(pcap:0' "$CAP_FILE.log"; then
        fail "${name%.pcap}: $CAP_TOOL stopped cleanly, nothing dropped" "exit $rc" "$CAP_FILE.log"
        return 1
    fi
}

# scan NAME [FILE]: `naglefix scan --json` of $W/NAME.pcap (or FILE) into
# $W/NAME.json, SCAN_JSON its name; if scan fails, a failed check and
# SCAN_JSON "-" (the capture's and the ground truth's checks still run).
SCAN_JSON=-
scan() {
    local name=$1 file=${2:-$W/$1.pcap} rc
    timeout 60 "$NAGLEFIX" scan --json "$file" >"$W/$name.json" 2>"$W/$name.scan.err"
    scan_status "$name" $? "naglefix scan --json exits 0"
}

# scan_status NAME RC WHAT: SCAN_JSON for scan's exit status RC
scan_status() {
    SCAN_JSON=$W/$1.json
    (($2 == 0)) && return 0
    fail "$1: $3" "exit $2: $(head -c 200 "$W/$1.scan.err")"
    SCAN_JSON=-
}

# measured NAME VALUE: VALUE is a client's median (run_client's), or fail.
measured() {
    [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] && return 0
    fail "$1: the program ran and measured its rounds" "see $CLIENT_LOG" "$CLIENT_LOG"
    return 1
}

# found NAME SIDE SERVER MS STALLS [capcheck options]: NAME's capture and
# scan output checked for its one row (MS "": no program's time a round).
found() {
    local name=$1 side=$2 server=$3 ms=$4 stalls=$5
    shift 5
    [[ -z $ms ]] || set -- --program-ms "$ms" "$@"
    results "${CHECK[@]}" found "$name" "$SCAN_JSON" "$W/$name.pcap" --side "$side" \
        --server "$server" --stalls "$stalls" "$@"
}

# capture_client NAME TOOL SERVER SIDE STALLS OPTS... -- CLIENT...: the
# whole check of one stalling client against the server at SERVER
# (addr:port): capture (port filter), run, stop, scan, check.
capture_client() {
    local name=$1 tool=$2 server=$3 side=$4 stalls=$5 ms
    shift 5
    local -a opts=()
    while [[ $1 != -- ]]; do opts+=("$1"); shift; done
    shift
    selected "$name" || return 0
    cap_start "$name" "$tool" "tcp port ${server##*:}" "${opts[@]}" || return
    ms=$(run_client none "$@")
    cap_stop || return
    measured "$name" "$ms" || return
    scan "$name"
    found "$name" "$side" "$server" "$ms" "$stalls"
}

# ---- the stalling programs ---------------------------------------------------

compile_java || fail "compile Java sources"
timeout 120 javac -d "$LEGACY_BUILD" "$HERE/JHttpServer.java" || fail "compile JHttpServer.java"
start_server java-echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"
jport=$SERVER_PORT
start_server py-server python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME"
pyport=$SERVER_PORT
start_server py6-server python3 "$HERE/reply_server.py" ::1 "$SERVER_LIFETIME"
py6port=$SERVER_PORT
mkdir -p "$W/www"
printf 'hello world\n' >"$W/www/hello.txt"

capture_client java tcpdump "$H:$jport" connect $((ROUNDS - 1)) -i lo -- \
    java -cp "$LEGACY_BUILD" LegacyClient "$H" "$jport" "$ROUNDS" split
capture_client python4 tcpdump "$H:$pyport" connect $((ROUNDS - 1)) -i any -- \
    python3 "$LEGACY_DIR/legacy_client.py" "$H" "$pyport" "$ROUNDS" split
capture_client python6 dumpcap "[::1]:$py6port" connect $((ROUNDS - 1)) -i lo -q -- \
    python3 "$LEGACY_DIR/legacy_client.py" ::1 "$py6port" "$ROUNDS" split
capture_client node tcpdump "$H:$jport" connect $((ROUNDS - 1)) -i lo -s 96 -- \
    node "$LEGACY_DIR/legacy_client.js" "$H" "$jport" "$ROUNDS" split

# perl: tcpdump's stream piped into scan as it is captured (tee keeps a
# copy for the ground truth)
check_perl_pipe() {
    local name=perl ms rc
    selected "$name" || return 0
    : >"$W/$name.pcap.log"
    {
        timeout -s INT -k 5 "$CAP_LIMIT" tcpdump --immediate-mode -U -B 8192 -n -i lo -w - \
            "tcp port $jport" 2>"$W/$name.pcap.log" &
        echo $! >"$W/$name.pid"
        wait
    } | tee "$W/$name.pcap" | timeout -k 5 $((CAP_LIMIT + 30)) "$NAGLEFIX" scan --json - \
        >"$W/$name.json" 2>"$W/$name.scan.err" &
    local scan_pid=$! i
    for ((i = 0; i < 200; i++)); do
        grep -q 'listening on' "$W/$name.pcap.log" && break
        sleep 0.05
    done
    ms=$(run_client none perl "$LEGACY_DIR/legacy_client.pl" "$H" "$jport" "$ROUNDS" split)
    kill -INT "$(cat "$W/$name.pid")" 2>/dev/null
    wait "$scan_pid"
    rc=$?
    if ! grep -q '^0 packets dropped by kernel' "$W/$name.pcap.log"; then
        fail "$name: tcpdump -w - stopped cleanly, nothing dropped" "" "$W/$name.pcap.log"
        return
    fi
    scan_status "$name" "$rc" "tcpdump -w - | naglefix scan --json - exits 0"
    measured "$name" "$ms" || return
    found "$name" connect "$H:$jport" "$ms" $((ROUNDS - 1))
}
check_perl_pipe

# HTTP servers (the holder): http.client GETs a 12-byte body on one
# keep-alive connection
start_server http.server "$HERE/serve_port.sh" python3 -m http.server --protocol HTTP/1.1 \
    --bind "$H" --directory "$W/www" PORT
hsport=$SERVER_PORT
capture_client http.server tcpdump "$H:$hsport" accept $((ROUNDS - 1)) -i lo -- \
    python3 "$HERE/http_rounds.py" "$H" "$hsport" "$ROUNDS" /hello.txt
start_server jhttp java -cp "$LEGACY_BUILD" JHttpServer "$SERVER_LIFETIME"
jhport=$SERVER_PORT
capture_client HttpServer tcpdump "$H:$jhport" accept $((ROUNDS - 1)) -i lo -- \
    python3 "$HERE/http_rounds.py" "$H" "$jhport" "$ROUNDS" /hello.txt

# memccp: a whole memccp process a round (memccp_rounds.sh), 40 files of
# 200,000 bytes: round 1 a warm-up, round 2 measured; the capture cut to
# 96 bytes a packet (-s 96: sizes from the IP header). Then the same under
# `naglefix -m nodelay`, captured too (a control: no row): what a run
# loses is its time as is less its time fixed.
MC_FILES=40
check_memccp() {
    local name=memccp asis fixed i files=()
    any_selected "$name" "$name -m nodelay" || return 0
    if ! command -v memccp >/dev/null || ! command -v memcached >/dev/null; then
        skip "$name" "memccp or memcached missing (tests/install-deps.sh installs them)"
        return
    fi
    mkdir -p "$W/mc"
    head -c 200000 /dev/zero | tr '\0' m >"$W/mc/f1.bin"
    for ((i = 1; i <= MC_FILES; i++)); do
        ((i > 1)) && cp "$W/mc/f1.bin" "$W/mc/f$i.bin"
        files+=("$W/mc/f$i.bin")
    done
    start_server memcached "$LEGACY_DIR/memcached_server.sh" || return
    local server=$H:$SERVER_PORT
    cap_start "$name" tcpdump "tcp port $SERVER_PORT" -i lo -s 96 || return
    asis=$(run_client none "$LEGACY_DIR/memccp_rounds.sh" "$server" 2 "${files[@]}")
    cap_stop || return
    cap_start "$name-nodelay" tcpdump "tcp port $SERVER_PORT" -i lo -s 96 || return
    fixed=$(run_client nodelay "$LEGACY_DIR/memccp_rounds.sh" "$server" 2 "${files[@]}")
    cap_stop || return
    measured "$name" "$asis" && measured "$name -m nodelay" "$fixed" || return
    scan "$name"
    found "$name" connect "$server" "" truth \
        --run-ms "$(awk -v a="$asis" -v f="$fixed" 'BEGIN { printf "%.3f", a - f }')" --run-conn 2
    scan "$name-nodelay"
    results "${CHECK[@]}" none "$name -m nodelay" "$SCAN_JSON" "$W/$name-nodelay.pcap" \
        --ports "$SERVER_PORT" --conns 2
}
check_memccp

# ---- controls: one write, and the stalling programs fixed --------------------

# control NAME FILE PORTS CONNS: scan of the capture NAME (FILE) must find
# nothing, nor the ground truth, with at least CONNS connections captured.
control() {
    scan "$1" "$2"
    results "${CHECK[@]}" none "$1" "$SCAN_JSON" "$2" --ports "$3" --conns "$4"
}

# the one-write control: LegacyClient and legacy_client.py, single
if selected "one write"; then
    if cap_start single tcpdump "tcp port $jport or tcp port $pyport" -i lo; then
        j=$(run_client none java -cp "$LEGACY_BUILD" LegacyClient "$H" "$jport" "$ROUNDS" single)
        p=$(run_client none python3 "$LEGACY_DIR/legacy_client.py" "$H" "$pyport" "$ROUNDS" single)
        cap_stop && measured "one write: java" "$j" && measured "one write: python" "$p" &&
            control "one write (java, python single)" "$W/single.pcap" "$jport,$pyport" 2
    fi
fi

# every stalling program under `naglefix -m nodelay` (the HTTP servers
# under it, their client as is), one capture; each must also be fast
if selected "-m nodelay"; then
    start_server http.server-nodelay "$HERE/serve_port.sh" "$NAGLEFIX" -m nodelay -- \
        python3 -m http.server --protocol HTTP/1.1 --bind "$H" --directory "$W/www" PORT
    hsnd=$SERVER_PORT
    start_server jhttp-nodelay "$NAGLEFIX" -m nodelay -- java -cp "$LEGACY_BUILD" JHttpServer \
        "$SERVER_LIFETIME"
    jhnd=$SERVER_PORT
    nd_ports="$jport,$pyport,$py6port,$hsnd,$jhnd"
    if cap_start nodelay tcpdump "tcp port ${nd_ports//,/ or tcp port }" -i lo; then
        nd_fast() { # nd_fast NAME MODE CMD...: run, and fast
            local ms
            ms=$(run_client "$@")
            assert_ms_lt "$NAME -m nodelay: fast" "$ms" 5
        }
        NAME=java nd_fast nodelay java -cp "$LEGACY_BUILD" LegacyClient "$H" "$jport" "$ROUNDS" split
        NAME=python4 nd_fast nodelay python3 "$LEGACY_DIR/legacy_client.py" "$H" "$pyport" "$ROUNDS" split
        NAME=python6 nd_fast nodelay python3 "$LEGACY_DIR/legacy_client.py" ::1 "$py6port" "$ROUNDS" split
        NAME=node nd_fast nodelay node "$LEGACY_DIR/legacy_client.js" "$H" "$jport" "$ROUNDS" split
        NAME=perl nd_fast nodelay perl "$LEGACY_DIR/legacy_client.pl" "$H" "$jport" "$ROUNDS" split
        NAME=http.server nd_fast none python3 "$HERE/http_rounds.py" "$H" "$hsnd" "$ROUNDS" /hello.txt
        NAME=HttpServer nd_fast none python3 "$HERE/http_rounds.py" "$H" "$jhnd" "$ROUNDS" /hello.txt
        cap_stop && control "-m nodelay (java, python4, python6, node, perl, http.server, HttpServer)" \
            "$W/nodelay.pcap" "$nd_ports" 7
    fi
fi

finish
