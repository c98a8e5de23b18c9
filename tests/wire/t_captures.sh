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
#   java      tests/programs LegacyClient vs EchoServer     tcpdump -i lo
#   python4   legacy_client.py over IPv4                  tcpdump -i any (cooked v2)
#   python6   legacy_client.py over IPv6 (::1)            dumpcap -i lo (pcapng)
#   node      legacy_client.js vs EchoServer              tcpdump -i any -y LINUX_SLL
#                                                         (cooked v1) -s 96
#   perl      legacy_client.pl vs EchoServer              tcpdump -w - | naglefix scan -
#   http.server  python3 -m http.server (HTTP/1.1) answering http.client
#                                                         tcpdump -i lo, ns timestamps
#   HttpServer   the JDK's com.sun.net.httpserver answering http.client   tcpdump -i lo
#   memccp    tests/programs/memccp_rounds.sh vs memcached  tcpdump -i lo -s 96
#             (2 connections, one row: scan keeps one row per client address
#             and server end, the port that of the first that held)
# Stall counts, reasoned: a Linux receiver delays its ACKs only in
# ping-pong mode, which it enters when it sends data within its ACK
# timeout (ato) of receiving some; ato is 0 until it first receives data.
# The server that receives the split request answers round 1 right after
# it, so from round 2 on it delays; the client that receives the split
# response (http.client) sent its first request with ato still 0, and its
# second one right after the first response. Either way round 1 is ACKed
# at once and rounds 2..ROUNDS stall: ROUNDS-1 stalls (round 1 is also the
# programs' own warm-up, outside their median; seen so in every capture
# here, once each server has answered a client before: see below). memccp's
# stalls depend on when memcached reads (tests/legacy/run.sh): 40-90 of 160
# files here, 5 on CI's machine; their count and median are the ground
# truth's, and the measured check is the time they cost: the stalls of
# each measured run's connection on the wire at most that run as is less
# the median run fixed (-m nodelay), plus 10%, and at least half of it
# (the difference of two whole runs moves by 20% on this machine), in
# more than half of the runs; none stalling at all is a SKIP (below).
#
# The ground truth is capcheck.py's own reading of the packets (tshark's
# fields): a data segment, the peer's first ACK of it pure and >= 30 ms
# late, the holder's next new data <= 2 ms after that ACK, no
# retransmission between. scan's rows must match it: count, median (5%),
# total (2%).
#
# Nothing found (no row, and none in the ground truth either, on a capture
# that holds the connections): the one-write control (LegacyClient single,
# legacy_client.py single); every stalling program above under
# `naglefix -m nodelay` (the client, or the HTTP server), whose median must
# also be under 5 ms (the fix took); and real servers' traffic: nginx with
# curl (keep-alive and Connection: close), PostgreSQL's pgbench (select-only
# and TPC-B), memcached with memaslap. Two real programs do stall, truly,
# and are checked the other way: OpenSSH (sshd with ssh and scp: the
# client's 16-byte NEWKEYS then its 44 bytes behind sshd's delayed ACK, and
# sshd's 280 then 208 bytes of authentication) and git (git daemon with
# clone and ls-remote: pkt-lines both ways); their rows must be the ground
# truth's exactly, and their clients run under `naglefix audit`, whose
# records must name the holders it can see. A missing program is a SKIP.
#
# Env: ROUNDS (default 11), T (tests/lib.sh's name filter, by program:
# T=node, T=nginx). Captures, scan's output and logs stay in
# build/wire-captures/ (one run at a time: a lock). Ends with
# "N passed, M failed"; about 50 s here.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# One run at a time: make test-wire and a run by hand share
# build/wire-captures (flock -o: the lock is flock's own, and no server of
# ours inherits it; status 75 if another run held it 600 s)
if [[ -z ${T_CAPTURES_LOCKED:-} ]]; then
    mkdir -p "$HERE/../../build"
    exec env T_CAPTURES_LOCKED=1 flock -w 600 -o -E 75 "$HERE/../../build/wire-captures.lock" \
        bash "$HERE/t_captures.sh" "$@"
fi
# The servers started first (EchoServer, legacy_server.py) serve until the
# -m nodelay controls, after every capture; common.sh's default lifetime of
# 120 s is shorter than a run on a loaded machine (200 s): a server the
# run outlives refuses its later clients. Each still exits at the script's
# end (cleanup closes its stdin).
SERVER_LIFETIME=${SERVER_LIFETIME:-600}
# shellcheck source-path=SCRIPTDIR source=../programs/common.sh
. "$HERE/../programs/common.sh"
export LC_ALL=C
clean_env
ROUNDS=${ROUNDS:-11}
CAP_LIMIT=90 # seconds a capture may run, at most
W=$TOP/build/wire-captures
CHECK=(timeout 150 python3 "$HERE/capcheck.py")
H=127.0.0.1
need_built make "$NAGLEFIX" "$TOP/build/libnaglefix.so"
for tool in tcpdump dumpcap tshark; do
    command -v "$tool" >/dev/null && continue
    fail "$tool" "not installed: run tests/install-deps.sh (tcpdump, tshark)"
    finish
done
if [[ $(id -u) != 0 ]]; then
    skip "captures" "tcpdump and dumpcap on lo need root here"
    finish
fi
# this run's servers' files and clients' log in $W, not in build/legacy,
# where tests/legacy/run.sh keeps its own under the same names
rm -rf "$W"
LEGACY_BUILD=$W/run
CLIENT_LOG=$LEGACY_BUILD/clients.log
mkdir -p "$LEGACY_BUILD"

CAP_PID=""
PG_PIDFILE=""
on_exit() {
    [[ -z $CAP_PID ]] || { kill -INT "$CAP_PID" 2>/dev/null; wait "$CAP_PID" 2>/dev/null; }
    declare -F pg_stop >/dev/null && pg_stop
    cleanup # common.sh's: the servers start_server started
}
trap on_exit EXIT

# results KIND NAME SCAN CAPTURE OPTS...: capcheck.py KIND's checks of
# CAPTURE and SCAN, queued until verdicts (at the end: one tshark reads
# every capture's packets); each is still judged on its own capture
QUEUED=0
results() {
    QUEUED=$((QUEUED + 1))
    mkdir -p "$W/verdicts"
    printf '%s\0' "$@" >"$W/verdicts/$QUEUED"
}

# verdict KIND NAME SCAN CAPTURE OPTS...: capcheck.py's lines -> pass /
# fail (read in this shell: the counts are its variables); its failure to
# run is a failure too
verdict() {
    local kind name why rc
    "${CHECK[@]}" "$@" >"$W/capcheck.out" 2>"$W/capcheck.err"
    rc=$?
    while IFS=$'\t' read -r kind name why; do
        case $kind in
            pass) pass "$name" ;;
            fail) fail "$name" "$why" ;;
            skip) skip "$name" "$why" ;;
            note) echo "note: $name" ;;
            *) fail "capcheck" "unexpected line: $kind $name $why" ;;
        esac
    done <"$W/capcheck.out"
    ((rc == 0)) || fail "capcheck.py $1 $2" "exit $rc" "$W/capcheck.err"
}

# classic FILE: FILE is a classic pcap (tcpdump's), which holds one
# interface by its format
classic() {
    case $(od -An -tx1 -N4 "$1" 2>/dev/null | tr -d ' \n') in
        d4c3b2a1 | a1b2c3d4 | 4d3cb2a1 | a1b23c4d) return 0 ;;
    esac
    return 1
}

# verdicts: the checks results queued, in their order. tshark's start
# costs 0.6-0.9 s of CPU: the classic pcap captures among them go into one
# pcapng (mergecap -a -I none: each file's interface kept apart, so a
# packet's frame.interface_id is its file's place), one tshark prints
# capcheck.py's fields of it, and awk splits its lines by that id into
# each capture's (capcheck.py --fields). A pcapng capture (dumpcap's: it
# may hold several interfaces) gets a tshark of its own, and so does every
# capture if mergecap, the tshark or the split fails (a capture cut short:
# mergecap fails, then its own tshark fails its checks, as before).
verdicts() {
    local i n cap
    local -a q caps=() fields=()
    local -A place=()
    for ((i = 1; i <= QUEUED; i++)); do
        mapfile -d '' q <"$W/verdicts/$i"
        cap=${q[3]}
        if [[ -n ${place[$cap]:-} ]] || ! classic "$cap"; then continue; fi
        place[$cap]=${#caps[@]}
        caps+=("$cap")
    done
    n=${#caps[@]}
    while read -r i; do fields+=(-e "$i"); done < <(python3 "$HERE/capcheck.py" fields)
    mkdir -p "$W/fields"
    for ((i = 0; i < n; i++)); do : >"$W/fields/$i.tsv"; done
    if ((n == 0)) || ! mergecap -a -I none -F pcapng -w "$W/all.pcapng" "${caps[@]}" \
        2>"$W/all.merge.err" || ! timeout 300 tshark -n -r "$W/all.pcapng" -Y tcp -T fields \
        -E separator=/t -e frame.interface_id "${fields[@]}" >"$W/all.tsv" 2>"$W/all.tshark.err" ||
        ! awk -F'\t' -v d="$W/fields" -v n="$n" '
            $1 !~ /^[0-9]+$/ || $1 >= n { exit 1 }
            { print substr($0, length($1) + 2) > (d "/" $1 ".tsv") }' "$W/all.tsv"; then
        place=()
    fi
    for ((i = 1; i <= QUEUED; i++)); do
        mapfile -d '' q <"$W/verdicts/$i"
        cap=${q[3]}
        if [[ -n ${place[$cap]:-} ]]; then
            verdict "${q[@]}" --fields "$W/fields/${place[$cap]}.tsv"
        else
            verdict "${q[@]}"
        fi
    done
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
CAP_FILE="" CAP_TOOL="" CAP_PORTS=""
cap_start() {
    local name=$1 tool=$2 filter=$3 i
    shift 3
    CAP_FILE=$W/$name.pcap CAP_TOOL=$tool
    CAP_PORTS=$(grep -Eo 'port [0-9]+' <<<"$filter" | cut -d' ' -f2 | tr '\n' ' ')
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

# cap_counts LOG: the capture's latest counts, "CAPTURED RECEIVED DROPPED":
# tcpdump's "received by filter" counts each loopback packet twice (its
# outgoing copy, which libpcap skips, and its incoming one), dumpcap's
# once (doubled here).
cap_counts() {
    awk 'function n(re) { match($0, re); return substr($0, RSTART, RLENGTH) + 0 }
        /[0-9]+ packets? captured/ { c = n("[0-9]+ packets? captured") }
        /[0-9]+ packets? received by filter/ { r = n("[0-9]+ packets? received by filter") }
        /[0-9]+ packets? dropped by kernel/ { d = n("[0-9]+ packets? dropped by kernel") }
        /Packets captured:/ { c = $NF + 0 } # dumpcap: after a carriage return
        /^Packets received\/dropped/ && match($0, /: [0-9]+\/[0-9]+ /) {
            split(substr($0, RSTART + 2, RLENGTH - 3), b, "/"); r = 2 * b[1]; d = b[2] + 0 }
        END { if (c != "") print c, r, d }' "$1"
}

# cap_clean LOG: the capture's closing counts: none dropped. (Captured =
# received / 2 is not asked: once, 3 packets more were received than ever
# came to tcpdump, whose filter was not yet set, perhaps, when they came;
# capcheck.py checks that each connection of the test is whole instead.)
cap_clean() {
    local c r d
    read -r c r d < <(cap_counts "$1") && [[ $d == 0 ]]
}

# cap_drain LOG: tcpdump, slower than the traffic on a busy machine, may
# still be reading its ring, and what it has not read at SIGINT is lost
# (the last 2 of nginx's 101 connections here, with "0 packets dropped by
# kernel"); on SIGUSR1 it prints its counts, after reading what its ring
# held: asks (up to 5 s) until they say it wrote all (captured = received
# / 2) or it answered 3 times with the same count. dumpcap has no such
# signal: its ring's blocks time out in 250 ms, and then its file stops
# growing.
cap_drain() {
    local pid i j size last=-1 same=0 lines c r d
    if [[ $CAP_TOOL == tcpdump ]]; then
        pid=$(pgrep -P "$CAP_PID" -x tcpdump) || return 0
        for ((i = 0; i < 50 && same < 3; i++)); do
            lines=$(wc -l <"$1")
            kill -USR1 "$pid" 2>/dev/null || return 0
            for ((j = 0; j < 20; j++)); do
                sleep 0.05
                (($(wc -l <"$1") > lines)) && break
            done
            read -r c r d < <(cap_counts "$1") || continue
            ((r == 2 * c)) && return 0
            if [[ $c == "$last" ]]; then same=$((same + 1)); else same=1; fi
            last=$c
        done
        return 0
    fi
    sleep 0.3
    for ((i = 0; i < 100 && same < 3; i++)); do
        size=$(stat -c %s "$CAP_FILE" 2>/dev/null || echo 0)
        if [[ $size == "$last" ]]; then same=$((same + 1)); else same=0; fi
        last=$size
        sleep 0.05
    done
}

# cap_closed: waits (up to 10 s) until no connection on the capture's
# ports is open or closing (only listeners and TIME-WAIT left): a client
# may exit before its server's FIN is sent (sshd's session process ends
# after ssh does), and a connection is whole only with both FINs.
cap_closed() {
    local i p open
    for ((i = 0; i < 200; i++)); do
        open=0
        for p in $CAP_PORTS; do
            ss -Htan "( sport = :$p or dport = :$p )" |
                awk '$1 != "LISTEN" && $1 != "TIME-WAIT" { f = 1 } END { exit !f }' && open=1
        done
        ((open)) || return 0
        sleep 0.05
    done
}

# cap_stop [quiet]: SIGINT (through timeout, which passes it on) once the
# capture's connections are closed (cap_closed) and it has written what
# it was given (cap_drain), then waits for the capture to flush and exit;
# checks it exited 0 and dropped nothing.
cap_stop() {
    local rc name=${CAP_FILE##*/}
    [[ -n $CAP_PID ]] || return 1
    [[ ${1:-} == quiet ]] || cap_closed
    cap_drain "$CAP_FILE.log"
    kill -INT "$CAP_PID" 2>/dev/null
    wait "$CAP_PID"
    rc=$?
    CAP_PID=""
    [[ ${1:-} == quiet ]] && return 0
    if ((rc != 0)) || ! cap_clean "$CAP_FILE.log"; then
        fail "${name%.pcap}: $CAP_TOOL stopped cleanly, nothing dropped" "exit $rc" \
            "$CAP_FILE.log"
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
    results found "$name" "$SCAN_JSON" "$W/$name.pcap" --side "$side" \
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

# The Java programs (tests/programs/*.java: EchoServer, JHttpServer,
# LegacyClient), compiled once into a folder of their own that outlives
# $W (compile_java compiles only when a class is older than its source).
JCLASSES=$TOP/build/wire-classes
mkdir -p "$JCLASSES"
LEGACY_BUILD=$JCLASSES compile_java || fail "compile Java sources"
start_server java-echo java -cp "$JCLASSES" EchoServer 0 "$SERVER_LIFETIME"
jport=$SERVER_PORT
start_server py-server python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME"
pyport=$SERVER_PORT
start_server py6-server python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME" ::1
py6port=$SERVER_PORT
mkdir -p "$W/www"
printf 'hello world\n' >"$W/www/hello.txt"
# Each server answers a one-write client first, not captured: a JVM's first
# answer on its first connection took 43 ms once (classes loaded), later
# than the ACK timeout after the request, so the server was not yet in
# ping-pong mode at round 2, which did not stall (ROUNDS-2 stalls)
run_client none java -cp "$JCLASSES" LegacyClient "$H" "$jport" 11 single >/dev/null
run_client none python3 "$LEGACY_DIR/legacy_client.py" "$H" "$pyport" 11 single >/dev/null
run_client none python3 "$LEGACY_DIR/legacy_client.py" ::1 "$py6port" 11 single >/dev/null

capture_client java tcpdump "$H:$jport" connect $((ROUNDS - 1)) -i lo -- \
    java -cp "$JCLASSES" LegacyClient "$H" "$jport" "$ROUNDS" split
capture_client python4 tcpdump "$H:$pyport" connect $((ROUNDS - 1)) -i any -- \
    python3 "$LEGACY_DIR/legacy_client.py" "$H" "$pyport" "$ROUNDS" split
capture_client python6 dumpcap "[::1]:$py6port" connect $((ROUNDS - 1)) -i lo -q -- \
    python3 "$LEGACY_DIR/legacy_client.py" ::1 "$py6port" "$ROUNDS" split
capture_client node tcpdump "$H:$jport" connect $((ROUNDS - 1)) -i any -y LINUX_SLL -s 96 -- \
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
    local scan_pid=$!
    wait_until 10 grep -q 'listening on' "$W/$name.pcap.log"
    ms=$(run_client none perl "$LEGACY_DIR/legacy_client.pl" "$H" "$jport" "$ROUNDS" split)
    CAP_PID=$(cat "$W/$name.pid") CAP_TOOL=tcpdump CAP_FILE=$W/$name.pcap CAP_PORTS=$jport
    cap_closed
    cap_drain "$W/$name.pcap.log"
    CAP_PID=""
    kill -INT "$(cat "$W/$name.pid")" 2>/dev/null
    wait "$scan_pid"
    rc=$?
    if ! cap_clean "$W/$name.pcap.log"; then
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
start_server http.server "$HERE/../programs/serve_port.sh" python3 -m http.server --protocol HTTP/1.1 \
    --bind "$H" --directory "$W/www" PORT
hsport=$SERVER_PORT
capture_client http.server tcpdump "$H:$hsport" accept $((ROUNDS - 1)) -i lo \
    --time-stamp-precision=nano -- \
    python3 "$HERE/../programs/http_rounds.py" "$H" "$hsport" "$ROUNDS" /hello.txt
start_server jhttp java -cp "$JCLASSES" JHttpServer "$SERVER_LIFETIME"
jhport=$SERVER_PORT
capture_client HttpServer tcpdump "$H:$jhport" accept $((ROUNDS - 1)) -i lo -- \
    python3 "$HERE/../programs/http_rounds.py" "$H" "$jhport" "$ROUNDS" /hello.txt

# memccp: a whole memccp process a round (memccp_rounds.sh), 80 files of
# 200,000 bytes: round 1 a warm-up, rounds 2-4 measured, each run's time
# kept (MEMCCP_TIMES); the capture cut to 96 bytes a packet (-s 96: sizes
# from the IP header). Then the same under `naglefix -m nodelay`, captured
# too (a control: no row), 3 rounds after the warm-up: what each measured
# run lost is its time as is less the median fixed run (a median, which
# one fixed run's hiccup does not move), and each is judged against its
# own connection's stalls, more than half of them agreeing (an as-is
# run's hiccup is outvoted).
# memccp's stalls depend on when memcached reads (40-90 of 160 files
# here, 5 of 160 on CI's machine, all in the warm-up): as is is captured
# again, up to MC_CAPTURES times in all, until a measured run stalls. No
# stall in any: a SKIP naming the count, and scan must write no row for
# the last capture; stalls only in warm-ups: the run-loss check SKIPs.
MC_FILES=80
MC_MEASURED=3
MC_CAPTURES=3
check_memccp() {
    local name=memccp asis fixed i try files=() counts=() out total=0 later=0 all=0 losses why
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
    for ((try = 1; try <= MC_CAPTURES; try++)); do
        cap_start "$name" tcpdump "tcp port $SERVER_PORT" -i lo -s 96 || return
        asis=$(MEMCCP_TIMES=$W/mc-asis.ms run_client none "$LEGACY_DIR/memccp_rounds.sh" "$server" \
            $((MC_MEASURED + 1)) "${files[@]}")
        cap_stop || return
        measured "$name" "$asis" || return
        if ! out=$(timeout 150 python3 "$HERE/capcheck.py" stalls "$W/$name.pcap" \
            --server "$server" 2>"$W/$name.stalls.err"); then
            fail "$name: the capture's stalls counted (capcheck.py stalls)" "capture $try" \
                "$W/$name.stalls.err"
            return
        fi
        counts=()
        [[ -z $out ]] || mapfile -t counts <<<"$out"
        total=0 later=0
        for ((i = 0; i < ${#counts[@]}; i++)); do
            total=$((total + counts[i]))
            ((i > 0)) && later=$((later + counts[i]))
        done
        all=$((all + total))
        ((later > 0)) && break
        echo "note: $name: capture $try of $MC_CAPTURES: stalls a connection: ${counts[*]:-none}"
    done
    ((try > MC_CAPTURES)) && try=$MC_CAPTURES
    cap_start "$name-nodelay" tcpdump "tcp port $SERVER_PORT" -i lo -s 96 || return
    fixed=$(run_client nodelay "$LEGACY_DIR/memccp_rounds.sh" "$server" 4 "${files[@]}")
    cap_stop || return
    measured "$name -m nodelay" "$fixed" || return
    scan "$name"
    if ((total == 0)); then
        why="0 stalls in the last of $try captures of $((MC_MEASURED + 1)) runs of $MC_FILES files"
        if ((all == 0)); then why+=", nor in the others"; else
            why+=" (the others' $all all in their warm-up runs)"; fi
        why+=" here: nothing to judge"
        skip "$name" "$why"
        results none "$name (no stall)" "$SCAN_JSON" "$W/$name.pcap" \
            --ports "$SERVER_PORT" --conns $((MC_MEASURED + 1))
    else
        losses=$(awk -v f="$fixed" '{ printf "%s%.3f", (NR > 1 ? "," : ""), $1 - f }' "$W/mc-asis.ms")
        found "$name" connect "$server" "" truth --run-ms="$losses" --run-conn 2
    fi
    scan "$name-nodelay"
    results none "$name -m nodelay" "$SCAN_JSON" "$W/$name-nodelay.pcap" \
        --ports "$SERVER_PORT" --conns 4
}
check_memccp

# ---- controls: one write, and the stalling programs fixed --------------------

# control NAME FILE PORTS CONNS: scan of the capture NAME (FILE) must find
# nothing, nor the ground truth, with at least CONNS connections captured.
control() {
    scan "$1" "$2"
    results none "$1" "$SCAN_JSON" "$2" --ports "$3" --conns "$4"
}

# the one-write control: LegacyClient and legacy_client.py, single
if selected "one write"; then
    if cap_start single tcpdump "tcp port $jport or tcp port $pyport" -i lo; then
        j=$(run_client none java -cp "$JCLASSES" LegacyClient "$H" "$jport" "$ROUNDS" single)
        p=$(run_client none python3 "$LEGACY_DIR/legacy_client.py" "$H" "$pyport" "$ROUNDS" single)
        if cap_stop && measured "one write: java" "$j" && measured "one write: python" "$p"; then
            assert_ms_lt "one write: java single, fast" "$j" 5
            assert_ms_lt "one write: python single, fast" "$p" 5
            control "one write (java, python single)" "$W/single.pcap" "$jport,$pyport" 2
        fi
    fi
fi

# every stalling program under `naglefix -m nodelay` (the HTTP servers
# under it, their client as is), one capture; each must also be fast

# nd_fast NAME MODE CMD...: CMD run under MODE (run_client's) is fast
nd_fast() {
    local name=$1
    shift
    assert_ms_lt "$name -m nodelay: fast" "$(run_client "$@")" 5
}
if selected "-m nodelay"; then
    start_server http.server-nodelay "$HERE/../programs/serve_port.sh" "$NAGLEFIX" -m nodelay -- \
        python3 -m http.server --protocol HTTP/1.1 --bind "$H" --directory "$W/www" PORT
    hsnd=$SERVER_PORT
    start_server jhttp-nodelay "$NAGLEFIX" -m nodelay -- java -cp "$JCLASSES" JHttpServer \
        "$SERVER_LIFETIME"
    jhnd=$SERVER_PORT
    nd_ports="$jport,$pyport,$py6port,$hsnd,$jhnd"
    if cap_start nodelay tcpdump "tcp port ${nd_ports//,/ or tcp port }" -i lo; then
        nd_fast java nodelay java -cp "$JCLASSES" LegacyClient "$H" "$jport" "$ROUNDS" split
        nd_fast python4 nodelay python3 "$LEGACY_DIR/legacy_client.py" "$H" "$pyport" "$ROUNDS" split
        nd_fast python6 nodelay python3 "$LEGACY_DIR/legacy_client.py" ::1 "$py6port" "$ROUNDS" split
        nd_fast node nodelay node "$LEGACY_DIR/legacy_client.js" "$H" "$jport" "$ROUNDS" split
        nd_fast perl nodelay perl "$LEGACY_DIR/legacy_client.pl" "$H" "$jport" "$ROUNDS" split
        nd_fast http.server none python3 "$HERE/../programs/http_rounds.py" "$H" "$hsnd" "$ROUNDS" /hello.txt
        nd_fast HttpServer none python3 "$HERE/../programs/http_rounds.py" "$H" "$jhnd" "$ROUNDS" /hello.txt
        cap_stop && control "-m nodelay (java, python4, python6, node, perl, http.server, HttpServer)" \
            "$W/nodelay.pcap" "$nd_ports" 7
    fi
fi

# ---- real servers' traffic ---------------------------------------------------

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Real servers' captures are cut to 256 bytes a packet: in immediate mode
# tcpdump's ring has a slot of the snaplen for each packet (64 KiB on lo:
# 128 of them in 8 MiB), and nginx's bulk sends overran it (792 of 1,719
# packets dropped here with the full snaplen).
REAL_CAP=(-i lo -s 256)

# real_check NAME PORTS CONNS [--audit LOG...]: the capture NAME as a real
# server's traffic (capcheck.py real)
real_check() {
    local name=$1 ports=$2 conns=$3
    shift 3
    scan "$name"
    results real "$name" "$SCAN_JSON" "$W/$name.pcap" --ports "$ports" \
        --conns "$conns" "$@"
}

# ran NAME RC LOG: a real client's run; fails NAME unless RC is 0
ran() {
    (($2 == 0)) && return 0
    fail "$1: the client ran" "exit $2" "$3"
    return 1
}

# nginx (Debian's, a foreground process of our own, as tests/external runs
# it) with curl: 200 small files and 50 of 100 KiB on one keep-alive
# connection, then 100 with Connection: close (a connection each)
check_nginx() {
    local name=nginx d=$W/nginx port ngx rc try
    selected "$name" || return 0
    ngx=$(command -v nginx || echo /usr/sbin/nginx)
    if [[ ! -x $ngx ]] || ! command -v curl >/dev/null; then
        skip "$name" "nginx or curl missing (tests/install-deps.sh installs them)"
        return
    fi
    mkdir -p "$d/tmp"
    head -c 700 /dev/zero | tr '\0' a >"$W/www/small"
    head -c 102400 /dev/urandom >"$W/www/f100k"
    cat >"$d/nginx.conf.in" <<NGINX
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log info;
events { worker_connections 128; }
http {
    access_log $d/access.log;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    keepalive_timeout 30;
    keepalive_requests 1000;
    default_type application/octet-stream;
    server {
        listen $H:@PORT@;
        root $W/www;
    }
}
NGINX
    # a port free when picked may be taken before nginx binds it: 5 tries
    for ((try = 0; try < 5; try++)); do
        port=$(free_port)
        sed "s/@PORT@/$port/" "$d/nginx.conf.in" >"$d/nginx.conf"
        start_server nginx env SERVE_PORT="$port" "$HERE/../programs/serve_port.sh" "$ngx" -p "$d" \
            -c "$d/nginx.conf" -e stderr && break
    done
    ((try < 5)) || { fail "$name: the server starts" "no listener on 5 ports" "$d/error.log"; return; }
    cap_start "$name" tcpdump "tcp port $port" "${REAL_CAP[@]}" || return
    timeout 60 curl -sS "http://$H:$port/small?[1-200]" "http://$H:$port/f100k?[1-50]" \
        >/dev/null 2>"$d/curl.err"
    rc=$?
    timeout 60 curl -sS -H 'Connection: close' "http://$H:$port/small?[1-100]" \
        >/dev/null 2>>"$d/curl.err"
    ((rc == 0)) && rc=$?
    cap_stop || return
    ran "$name" "$rc" "$d/curl.err" || return
    real_check "$name" "$port" 101
}
check_nginx

# PostgreSQL (a private server, as tests/bench/real.sh starts one) with
# pgbench: select-only on one connection, then TPC-B on two
AS_PG=()
[[ $(id -u) == 0 ]] && AS_PG=(runuser -u postgres --) # PostgreSQL refuses root
as_pg() { "${AS_PG[@]}" "$@"; }
pg_stop() {
    local pid
    [[ -n $PG_PIDFILE && -s $PG_PIDFILE ]] || return 0
    pid=$(head -n 1 "$PG_PIDFILE")
    kill -INT "$pid" 2>/dev/null # fast shutdown
    wait_until 10 gone "$pid"
    PG_PIDFILE=""
}
# pg_start BIN DIR: pg_ctl start of DIR/data on a free port (port set),
# another port if the last was taken before the server bound it (5 in
# all: a line "port = N" added to postgresql.conf, the last one counts)
pg_start() {
    local try lines
    for ((try = 0; try < 5; try++)); do
        port=$(free_port)
        echo "port = $port" | as_pg tee -a "$2/data/postgresql.conf" >/dev/null
        lines=$(wc -l <"$2/postgres.log" 2>/dev/null || echo 0)
        as_pg "$1/pg_ctl" -D "$2/data" -l "$2/postgres.log" -w -t 30 start >"$W/pg-ctl.log" 2>&1 &&
            return 0
        tail -n "+$((lines + 1))" "$2/postgres.log" | grep -q 'Address already in use' || return 1
    done
    return 1
}
check_pgbench() {
    local name=pgbench d=$W/pg pg_bin="" b port rc
    selected "$name" || return 0
    for b in /usr/lib/postgresql/*/bin; do [[ -x $b/postgres ]] && pg_bin=$b; done
    if [[ -z $pg_bin ]] || ! command -v pgbench >/dev/null; then
        skip "$name" "PostgreSQL's server or pgbench missing (tests/install-deps.sh installs them)"
        return
    fi
    mkdir -p "$d"
    if [[ $(id -u) == 0 ]]; then
        chown postgres: "$d"
        if ! runuser -u postgres -- test -w "$d"; then
            skip "$name" "the postgres user cannot reach $d"
            return
        fi
    fi
    if ! timeout 60 "${AS_PG[@]}" "$pg_bin/initdb" -D "$d/data" -A trust -U postgres -E UTF8 \
        --no-sync >"$W/pg-initdb.log" 2>&1; then
        fail "$name: initdb" "" "$W/pg-initdb.log"
        return
    fi
    as_pg tee -a "$d/data/postgresql.conf" >/dev/null <<PGCONF
listen_addresses = '$H'
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
PGCONF
    PG_PIDFILE=$d/data/postmaster.pid
    if ! pg_start "$pg_bin" "$d"; then
        fail "$name: the server starts" "" "$d/postgres.log"
        return
    fi
    if ! timeout 60 pgbench -h "$H" -p "$port" -U postgres -i -s 1 -q postgres \
        >"$W/pgbench-init.log" 2>&1; then
        fail "$name: pgbench -i" "" "$W/pgbench-init.log"
        return
    fi
    cap_start "$name" tcpdump "tcp port $port" "${REAL_CAP[@]}" || return
    timeout 60 pgbench -h "$H" -p "$port" -U postgres -n -S -c 1 -t 1000 postgres \
        >"$W/pgbench.log" 2>&1
    rc=$?
    timeout 60 pgbench -h "$H" -p "$port" -U postgres -n -c 2 -t 150 postgres \
        >>"$W/pgbench.log" 2>&1
    ((rc == 0)) && rc=$?
    cap_stop || return
    pg_stop
    ran "$name" "$rc" "$W/pgbench.log" || return
    real_check "$name" "$port" 3
}
check_pgbench

# memcached (the legacy harness's) with memaslap (Debian: memcaslap): one
# thread, 4 connections, 4000 gets and sets of 100-byte values
check_memaslap() {
    local name=memaslap mc rc
    selected "$name" || return 0
    mc=$(command -v memaslap || command -v memcaslap)
    if [[ -z $mc ]] || ! command -v memcached >/dev/null; then
        skip "$name" "memcached or memaslap missing (tests/install-deps.sh installs them)"
        return
    fi
    start_server memcached-slap "$LEGACY_DIR/memcached_server.sh" || return
    cap_start "$name" tcpdump "tcp port $SERVER_PORT" "${REAL_CAP[@]}" || return
    timeout 60 "$mc" -s "$H:$SERVER_PORT" -T 1 -c 4 -x 4000 -X 100 >"$W/memaslap.log" 2>&1
    rc=$?
    cap_stop || return
    ran "$name" "$rc" "$W/memaslap.log" || return
    real_check "$name" "$SERVER_PORT" 4
}
check_memaslap

# OpenSSH: a private sshd (as tests/external runs it) with ssh (a
# command's standard input of 1 MiB) and scp (a file of 1 MiB back)
check_ssh() {
    local name=ssh d=$W/ssh rc port
    local -a o
    selected "$name" || return 0
    if [[ ! -x /usr/sbin/sshd ]] || ! command -v ssh-keygen scp >/dev/null; then
        skip "$name" "OpenSSH's server or client missing (tests/install-deps.sh installs them)"
        return
    fi
    if [[ $(id -u) != 0 ]]; then
        skip "$name" "sshd's privilege separation needs root"
        return
    fi
    mkdir -p /run/sshd "$d"
    if ! ssh-keygen -q -t ed25519 -N '' -f "$d/hostkey" ||
        ! ssh-keygen -q -t ed25519 -N '' -f "$d/userkey"; then
        fail "$name: keys" "ssh-keygen failed"
        return
    fi
    cp "$d/userkey.pub" "$d/authorized_keys"
    head -c 1048576 /dev/urandom >"$d/file"
    cat >"$d/sshd_config" <<SSHD
HostKey $d/hostkey
ListenAddress $H
AuthorizedKeysFile $d/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
PidFile $d/sshd.pid
Subsystem sftp internal-sftp
SSHD
    start_server sshd "$HERE/../programs/serve_port.sh" /usr/sbin/sshd -D -e -f "$d/sshd_config" -p PORT ||
        return
    port=$SERVER_PORT
    o=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
        -o BatchMode=yes -i "$d/userkey")
    cap_start "$name" tcpdump "tcp port $port" "${REAL_CAP[@]}" || return
    timeout 60 "$NAGLEFIX" -m audit -l "$d/audit-%p.log" -- ssh "${o[@]}" -p "$port" \
        "$(id -un)@$H" "cat > '$d/up'" <"$d/file" >"$d/ssh.log" 2>&1
    rc=$?
    timeout 60 "$NAGLEFIX" -m audit -l "$d/audit-%p.log" -- scp -q "${o[@]}" -P "$port" \
        "$(id -un)@$H:$d/file" "$d/back" >>"$d/ssh.log" 2>&1
    ((rc == 0)) && rc=$?
    cap_stop || return
    ((rc == 0)) && cmp -s "$d/file" "$d/up" && cmp -s "$d/file" "$d/back" || rc=1
    ran "$name" "$rc" "$d/ssh.log" || return
    real_check "$name" "$port" 2 --audit "$d"/audit-*.log
}
check_ssh

# git: git daemon and git clone (and ls-remote), both under `naglefix
# audit` (which changes nothing), a repository of 12 commits. Both ends
# stall here, truly (the ground truth: the client's 20-byte pkt-line, the
# daemon's ACK 43 ms later, the client's next 155 bytes 26 us after it; and
# upload-pack's pack data behind a 1,566-byte segment). Audit names what it
# can: the client's reads (recv_split) see the daemon's held pieces, so the
# accept-side row must be among audit's holders; the client's own holds it
# cannot see (git's client writes through one descriptor and reads through
# a dup of it, upload-pack reads fd 0 and writes fd 1: README, audit's
# Limits), so a connect-side row audit missed is only a note.
check_git() {
    local name=git d=$W/git i rc port
    selected "$name" || return 0
    if ! git daemon --help >/dev/null 2>&1 && [[ ! -x /usr/lib/git-core/git-daemon ]]; then
        skip "$name" "git daemon missing (tests/install-deps.sh installs git)"
        return
    fi
    (
        export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t \
            GIT_AUTHOR_EMAIL=t@localhost GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@localhost
        git init -q -b main "$d/repo" || exit 1
        for ((i = 1; i <= 12; i++)); do
            head -c $((i * i * 311)) /dev/urandom >"$d/repo/f$i"
            git -C "$d/repo" add -A && git -C "$d/repo" commit -q -m "commit $i" || exit 1
        done
        git clone -q --bare "$d/repo" "$d/served.git"
    ) >"$d.log" 2>&1 || { fail "$name: a repository to serve" "" "$d.log"; return; }
    start_server git-daemon "$HERE/../programs/serve_port.sh" "$NAGLEFIX" -m audit -l "$d/audit-%p.log" -- \
        git daemon --reuseaddr --export-all --base-path="$d" --listen="$H" --port=PORT || return
    port=$SERVER_PORT
    cap_start "$name" tcpdump "tcp port $port" "${REAL_CAP[@]}" || return
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null timeout 60 "$NAGLEFIX" -m audit \
        -l "$d/audit-%p.log" -- git clone -q "git://$H:$port/served.git" "$d/clone" \
        >"$d/clone.log" 2>&1
    rc=$?
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null timeout 60 "$NAGLEFIX" -m audit \
        -l "$d/audit-%p.log" -- git ls-remote "git://$H:$port/served.git" >>"$d/clone.log" 2>&1
    ((rc == 0)) && rc=$?
    cap_stop || return
    stop_server git-daemon
    ran "$name" "$rc" "$d/clone.log" || return
    real_check "$name" "$port" 2 --audit "$d"/audit-*.log --audit-sides accept
}
check_git

verdicts
finish
