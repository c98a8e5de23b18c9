#!/usr/bin/env bash
# t_watch_netns.sh: `naglefix watch` in every network namespace of the
# host (issue 28: items 1, 2, 5's drop count, the namespace of item 3, the
# --fix of item 4). Root only; otherwise every check is a SKIP.
#
# The namespaces are the test's own (ip netns add, unshare -n), removed
# at its end; traffic goes to loopback and to 192.0.2.x on a veth pair
# between two of them, nowhere else:
#   LO, LO2  two named namespaces, each a legacy_server.py on 127.0.0.1:
#            7301 and a client bound to 127.0.0.1:47301 (the same
#            four-tuple in both, tests/watch/bound_client.py): split
#            writes in LO (it stalls), one write in LO2 (it does not;
#            44 ms between its rounds, so that the two run side by side).
#            LO also holds one end of a veth pair whose other end is in
#            the namespace the test runs in (no address, no traffic):
#            when LO is deleted and freed, that end goes too.
#   B, C     two named namespaces joined by a veth pair (192.0.2.1 in B,
#            192.0.2.2 in C, no end outside them): legacy_client.py in
#            B against legacy_server.py in C, each segment seen by the
#            captures of both; the client moved first into a cgroup v2
#            directory the test makes (nfwn<PID>.slice/nfwn<PID>-app.service).
#   late     a namespace made by `unshare -n` after watch started (no
#            name: watch calls it pid:N), with a split client and its
#            server on its loopback.
#   mover    a python3 that calls unshare(CLONE_NEWNET) itself a second
#            after it started (no new process shows its new namespace).
# Watches, started before the traffic, each until SIGINT:
#   all      watch --json: every namespace
#   only     watch --json --netns B (a name): B only
#   lo       watch --json -i lo: each namespace's loopback only
#   bypid    watch --json --netns PID --netns B (PID: LO's server's)
#   vb       watch --json -i VB (B's end of the veth: no other namespace
#            has an interface of that name, the host's neither)
# Checked, the ground truth being tshark's reading (capcheck.py truth) of
# a tcpdump inside each namespace of the same traffic:
#   - LO's stall found once, its count the truth's (or one off: two live
#     captures), named: the client's pid, its command, netns LO; nothing
#     of LO2's twin connection;
#   - the veth stall found once (one row, whose lines all name the same
#     holder end), its count the truth's, the client's pid and command,
#     netns B (where its socket lives), its cgroup's name;
#   - the late namespace captured within 2 s of its first command (a
#     socket of watch listed in its /proc/net/packet; the time printed;
#     by design 0.85 s at most: a census walk each 250 ms, a process read
#     again at the next walk, the next census applying it, the capture
#     opened), its stall found, named pid:N; and, once its processes
#     ended, closed within 2 s (no descriptor of watch on it any more);
#     the mover's namespace captured within 4 s of its move (a process's
#     link is read again every 2 s, then the capture is opened off
#     watch's loop: by design 2.6 s at most; 1.1-1.7 s measured, load
#     2-5);
#   - --netns B: the veth row, not LO's; -i lo: LO's row, not the veth's;
#     -i VB: the veth row;
#     --netns PID: LO's row, named pid:PID;
#   - bypid's stats line counts both its captures (at least the packets
#     tcpdump saw in LO and B), 0 dropped;
#   - at the end, LO deleted (ip netns del) and its processes gone: the
#     veth end in the test's namespace is gone within 3 s (the namespace
#     was freed: watch held nothing of it).
# A busy namespace's capture grows: watch --netns LO2 while a client there
# makes request-answer rounds as fast as it can for 1.5 s: LO2's first
# capture, a queue (no ring in /proc/PID/maps), is a ring of 1 MiB or
# more after, and the queue it replaced is closed.
# A namespace waking loses no packet unsaid: NW (the test's, idle since
# watch --json --netns NW --metrics-file started) gets WAKE_CONNS
# connections sending WAKE_MSGS messages of 100 bytes each (TCP_NODELAY)
# to a sink as fast as they can; the ground truth is NW's own count of
# TCP segments sent (Tcp OutSegs of its /proc/net/snmp, each of them
# one packet on its loopback): the segments watch read (less the second
# copies) and the drops it said (its stats line and
# naglefix_packets_dropped_total, which must agree) must add up to it
# (WAKE_SLACK: OutSegs and the packets differ by a few either way with
# no drop at all); the drops are printed (0 is what watch should do).
# Then watch --fix --json --netns B --netns C (limited to the test's
# namespaces: other tests' programs on this host are left alone) on a
# 60-round split client in B against C: its socket set TCP_NODELAY at its
# first stall (a wire_fix line with its pid and netns B), the client's
# median round under 5 ms.
# Env: ROUNDS (default 13), T. Output in build/watch-netns/.
# Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../programs/common.sh
. "$HERE/../programs/common.sh"
export LC_ALL=C
clean_env
ROUNDS=${ROUNDS:-13}
FAST_MAX_MS=5
CLIENT_TIMEOUT=60
W=$TOP/build/watch-netns
LO=nfl$$
LO2=nfm$$
NB=nfb$$
NC=nfc$$
NW=nfw$$
WAKE_CONNS=4
WAKE_MSGS=25000
WAKE_SLACK=20
VB=nfvb$$
VC=nfvc$$
VH=nfvh$$
VX=nfvx$$
BA=192.0.2.1
CA=192.0.2.2
rm -rf "$W"
mkdir -p "$W/state"
# what --fix records for `naglefix fix --undo` goes here, not to /run/naglefix
export NAGLEFIX_STATE_DIR=$W/state
need_built make "$NAGLEFIX"

if [[ $EUID -ne 0 ]]; then
    skip "t_watch_netns" "needs root (namespaces, CAP_NET_RAW, setns)"
    finish
    exit
fi

declare -A WPID=() NFPID=()
TCPDUMP_PIDS=()
BG_PIDS=()
LATE_PID=""
MINE='^$'
on_exit() {
    local p
    for p in "${NFPID[@]}" "${WPID[@]}" "${TCPDUMP_PIDS[@]}" "${BG_PIDS[@]}" $LATE_PID; do
        kill -KILL "$p" 2>/dev/null
    done
    cleanup # common.sh's: the servers start_server started
    for p in "$LO" "$LO2" "$NB" "$NC" "$NW"; do ip netns del "$p" 2>/dev/null; done
    ip link del "$VH" 2>/dev/null
    [[ -z ${CG:-} ]] || rmdir "$CG" "${CG%/*}" 2>/dev/null
}
trap on_exit EXIT

# shellcheck source-path=SCRIPTDIR source=bg.sh
. "$HERE/bg.sh"

# ---- the namespaces ------------------------------------------------------------

made=1
for n in "$LO" "$LO2" "$NB" "$NC" "$NW"; do
    ip netns add "$n" && ip -n "$n" link set lo up || made=0
done
ip link add "$VB" netns "$NB" type veth peer name "$VC" netns "$NC" &&
    ip -n "$NB" addr add "$BA/24" dev "$VB" && ip -n "$NC" addr add "$CA/24" dev "$VC" &&
    ip -n "$NB" link set "$VB" up && ip -n "$NC" link set "$VC" up || made=0
ip link add "$VH" type veth peer name "$VX" netns "$LO" || made=0
# a cgroup v2 directory for the veth client (where cgroup2 is mounted:
# /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host)
CGROOT=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break; if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; exit } }' /proc/self/mountinfo)
CGUNIT=nfwn$$-app.service
CG=""
[[ -n $CGROOT ]] && mkdir "$CGROOT/nfwn$$.slice" "$CGROOT/nfwn$$.slice/$CGUNIT" 2>/dev/null &&
    CG=$CGROOT/nfwn$$.slice/$CGUNIT
if ((!made)); then
    fail "the test's namespaces" "ip netns / ip link failed"
    finish
    exit
fi

# ns_packet_inodes NS: the inodes of the packet sockets bound in NS (a
# name under /run/netns, or /proc/PID for a process's).
ns_packet_inodes() {
    if [[ $1 == /proc/* ]]; then
        awk 'NR > 1 && $4 != "0000" { print $9 }' "$1/net/packet" 2>/dev/null
    else
        ip netns exec "$1" awk 'NR > 1 && $4 != "0000" { print $9 }' /proc/net/packet 2>/dev/null
    fi
}

# socket_inodes PID: the inodes of PID's sockets (one process: a subshell
# per descriptor cost 40 ms each under load, and the late namespace's
# capture time below is measured in steps of this call).
socket_inodes() {
    find /proc/"$1"/fd -lname 'socket:*' -printf '%l\n' 2>/dev/null | sed 's/^socket:\[\(.*\)\]$/\1/'
}

# capturing PID NS: watch PID has a packet socket bound in NS.
capturing() {
    local mine
    mine=$(socket_inodes "$1")
    [[ -n $mine ]] && ns_packet_inodes "$2" | grep -qxF "$mine"
}

# until_capturing PID NS T0 SECS: polls capturing PID NS until it holds
# (status 0, CAPTURED_MS the milliseconds from T0, an EPOCHREALTIME, to
# the end of that poll: at most) or SECS seconds after T0 have passed
# (status 1).
until_capturing() {
    local end=$((${3//[.,]/} + $4 * 1000000)) now
    CAPTURED_MS=""
    until capturing "$1" "$2"; do
        now=${EPOCHREALTIME//[.,]/}
        ((now < end)) || return 1
        sleep 0.01
    done
    CAPTURED_MS=$(awk -v a="$3" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
}

# watch_start NAME NS... -- ARG...: `naglefix watch ARG...` in the
# background (NAME.out, NAME.err), WPID[NAME] (timeout's, which passes
# signals on), NFPID[NAME] watch's own; returns once it captures in each
# NS.
watch_start() {
    local name=$1 i ns ok
    shift
    local wait_in=()
    while [[ $1 != -- ]]; do wait_in+=("$1"); shift; done
    shift
    timeout -k 5 300 "$NAGLEFIX" watch "$@" >"$W/$name.out" 2>"$W/$name.err" &
    WPID[$name]=$!
    NFPID[$name]=0
    for ((i = 0; i < 100; i++)); do
        NFPID[$name]=$(pgrep -P "${WPID[$name]}" | head -n 1)
        ok=1
        for ns in "${wait_in[@]}"; do capturing "${NFPID[$name]:-0}" "$ns" || { ok=0; break; }; done
        ((ok)) && return 0
        sleep 0.05
    done
    echo "watch_start: $name is not capturing in ${wait_in[*]} (see $W/$name.err)" >&2
    return 1
}

watch_stop() {
    kill -INT "${WPID[$1]}" 2>/dev/null
    wait "${WPID[$1]}" 2>/dev/null
    unset "WPID[$1]"
}

# tcpdump_in NS FILE IFACE FILTER: a capture of the ground truth inside NS.
tcpdump_in() {
    ip netns exec "$1" timeout -k 5 300 tcpdump --immediate-mode -B 4096 -i "$3" -U -s 128 \
        -w "$W/$2.pcap" "$4" 2>"$W/$2.tcpdump.err" &
    TCPDUMP_PIDS+=($!)
    wait_until 5 grep -qs "listening on" "$W/$2.tcpdump.err"
}

# ---- servers, truth, watches ---------------------------------------------------

start_server lo ip netns exec "$LO" python3 "$LEGACY_DIR/legacy_server.py" 7301 "$SERVER_LIFETIME" ||
    fail "LO's server"
LO_SERVER=""
lo_ns=$(ip netns exec "$LO" readlink /proc/self/ns/net)
for p in $(pgrep -f "legacy_server.py 7301"); do
    [[ $(readlink "/proc/$p/ns/net") == "$lo_ns" ]] && LO_SERVER=$p
done
start_server lo2 ip netns exec "$LO2" python3 "$LEGACY_DIR/legacy_server.py" 7301 "$SERVER_LIFETIME" ||
    fail "LO2's server"
start_server veth ip netns exec "$NC" python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME" "$CA" ||
    fail "C's server"
port_veth=$SERVER_PORT

tcpdump_in "$LO" lo lo "tcp port 7301" || fail "tcpdump in LO"
tcpdump_in "$NB" veth "$VB" "tcp port $port_veth" || fail "tcpdump in B"

started=1
watch_start all "$LO" "$LO2" "$NB" "$NC" -- --json || started=0
watch_start only "$NB" -- --json --netns "$NB" || started=0
watch_start lo "$LO" "$LO2" "$NB" -- --json -i lo || started=0
watch_start bypid "$LO" "$NB" -- --json --netns "$LO_SERVER" --netns "$NB" || started=0
watch_start vb "$NB" -- --json -i "$VB" || started=0
((started)) || fail "the watches start" "" "$W/all.err"

# the late namespace: made now, its loopback's stall once watch captures there
late() { # inside it: HERE LEGACY_DIR W ROUNDS
    echo "$EPOCHREALTIME" >"$3/late.t0" # the namespace made: its first command
    ip link set lo up || exit 1
    echo "$(readlink /proc/self/ns/net)" >"$3/late.ns"
    while [[ ! -e $3/late.go ]]; do sleep 0.02; done
    sleep 30 2>/dev/null | python3 "$2/legacy_server.py" 7302 30 >"$3/late-server.out" 2>&1 &
    local srv=$! i
    for ((i = 0; i < 50; i++)); do grep -qs PORT "$3/late-server.out" && break; sleep 0.1; done
    python3 "$2/legacy_client.py" 127.0.0.1 7302 "$4" split >"$3/late-client.out" 2>&1 &
    echo $! >"$3/late-client.pid"
    wait $!
    # the server and the sleep holding its stdin (jobs -p: the pipeline's
    # first process), or the namespace lives on until the sleep's end
    kill "$srv" "$(jobs -p)" 2>/dev/null
    wait
}
export -f late
unshare -n bash -c 'late "$@"' late "$HERE" "$LEGACY_DIR" "$W" "$ROUNDS" &
LATE_PID=$!
# from late.t0 on (bash runs in the new namespace: before, /proc/LATE_PID
# was this one's, where watch captures too), polled until 3 s after it
late_ms=""
if wait_until 20 test -s "$W/late.t0" && read -r t0 <"$W/late.t0"; then
    until_capturing "${NFPID[all]:-0}" "/proc/$LATE_PID" "$t0" 3 && late_ms=$CAPTURED_MS
fi
late_ino=$(sed -n 's/^net:\[\([0-9]*\)\]$/\1/p' "$W/late.ns" 2>/dev/null)
touch "$W/late.go"

# the clients
run_bg lo-client ip netns exec "$LO" python3 "$HERE/bound_client.py" 127.0.0.1 7301 47301 "$ROUNDS" split
lo_pid=$BG_PID
run_bg lo2-client ip netns exec "$LO2" python3 "$HERE/bound_client.py" 127.0.0.1 7301 47301 "$ROUNDS" single 44
lo2_pid=$BG_PID
# the veth client moved into a cgroup of its own first (cgroup v2), as a
# runtime would
if [[ -n $CG ]]; then
    run_bg veth-client sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
        ip netns exec "$NB" python3 "$LEGACY_DIR/legacy_client.py" "$CA" "$port_veth" "$ROUNDS" split
else
    run_bg veth-client ip netns exec "$NB" python3 "$LEGACY_DIR/legacy_client.py" "$CA" "$port_veth" "$ROUNDS" split
fi
veth_pid=$BG_PID
MED_LO=$(wait_bg lo-client "$lo_pid")
MED_LO2=$(wait_bg lo2-client "$lo2_pid")
MED_VETH=$(wait_bg veth-client "$veth_pid")
late_client=$(cat "$W/late-client.pid" 2>/dev/null)
LATE_NS_PID=$LATE_PID
MINE="^($LO|$LO2|$NB|$NC|pid:$LATE_PID|pid:$LO_SERVER)\$" # pid:N: the top process there
wait "$LATE_PID"
late_end=$EPOCHREALTIME
LATE_PID=""
MED_LATE=$(sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' "$W/late-client.out")

# the late namespace closed once its processes ended: no descriptor on it
late_closed_ms=""
for ((i = 0; i < 300; i++)); do
    if ! ls -l "/proc/${NFPID[all]}/fd" 2>/dev/null | grep -q "net:\[$late_ino\]"; then
        late_closed_ms=$(awk -v a="$late_end" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
        break
    fi
    sleep 0.01
done
# a process that moves to a namespace of its own a second after it
# started (unshare(2) from the process itself: no new PID shows it):
# captured within 4 s of its move (a process's link is read again
# every 2 s; the capture opened in watch's thread)
python3 -c 'import ctypes, sys, time
time.sleep(1)
if ctypes.CDLL(None).unshare(0x40000000) != 0:
    sys.exit("unshare failed")
print("moved %.6f" % time.time(), flush=True)
time.sleep(10)' >"$W/mover.out" 2>&1 &
MOVER=$!
BG_PIDS+=("$MOVER")
mover_ms=""
if wait_until 10 grep -qs moved "$W/mover.out"; then
    read -r _ t0 <"$W/mover.out"
    until_capturing "${NFPID[all]:-0}" "/proc/$MOVER" "$t0" 5 && mover_ms=$CAPTURED_MS
fi
kill "$MOVER" 2>/dev/null
sleep 0.3 # the last blocks handed over, held 80 ms
for n in all only lo bypid vb; do watch_stop "$n"; done
for p in "${TCPDUMP_PIDS[@]}"; do kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
TCPDUMP_PIDS=()
# the two ground truths side by side (they judge no time; nothing else
# runs now)
truth_pids=()
for c in lo veth; do
    timeout 120 python3 "$HERE/../wire/capcheck.py" truth "$W/$c.pcap" >"$W/$c.truth" 2>"$W/$c.truth.err" &
    truth_pids+=($!)
done
for c in lo veth; do
    wait "${truth_pids[0]}" || fail "the ground truth of $c" "capcheck.py truth failed" "$W/$c.truth.err"
    truth_pids=("${truth_pids[@]:1}")
done

# ---- the checks ----------------------------------------------------------------

# rows FILE PEER: the rows of FILE's wire_stall lines whose peer is PEER
# and whose namespace is one of this test's (another run of it beside
# uses the same ports in its own), one line each: "local pid stalls
# netns prog" (stalls summed over the row's lines, the rest from its
# last line).
rows() {
    jq -rs --arg peer "$2" --arg mine "$MINE" '[.[] | select(.event == "wire_stall" and .peer == $peer
            and ((.netns // "") | test($mine)))]
        | group_by(.local + " " + (.netns // ""))[]
        | "\(.[-1].local) \(.[-1].pid // 0) \(map(.stalls) | add) \(.[-1].netns // "-") \(.[-1].prog // "")"' \
        "$1" 2>/dev/null
}

near() {
    [[ -n $1 && -n $2 ]] && (($1 - $2 <= 1 && $2 - $1 <= 1))
}

# found_once NAME FILE PEER PID NETNS WORD TRUTH: exactly one row for PEER,
# its holder PID (command with WORD) in NETNS, its stalls TRUTH or one off
# (and at least ROUNDS-3).
found_once() {
    local name=$1 file=$2 peer=$3 pid=$4 netns=$5 word=$6 want=$7 all n local rpid stalls rns prog
    selected "$name" || return 0
    all=$(rows "$file" "$peer")
    n=$(grep -c . <<<"$all")
    read -r local rpid stalls rns prog <<<"$all"
    if [[ -z $all ]]; then
        fail "$name" "no row for peer $peer" "$file"
    elif ((n != 1)); then
        fail "$name" "$n rows for peer $peer: $(tr '\n' ';' <<<"$all")"
    elif [[ $rpid != "$pid" || $prog != *"$word"* ]]; then
        fail "$name" "pid $rpid ('$prog'), not $pid"
    elif [[ $rns != "$netns" ]]; then
        fail "$name" "netns '$rns', not '$netns'"
    elif ! near "$stalls" "$want" || ((want < ROUNDS - 3)); then
        fail "$name" "$stalls stalls, the packets' truth $want"
    else
        pass "$name: pid $pid in $netns, $stalls stalls (the packets: $want)"
    fi
}

# none NAME FILE PEER: no row for PEER.
none() {
    local r
    selected "$1" || return 0
    r=$(rows "$2" "$3")
    if [[ -n $r ]]; then fail "$1" "a row: $r"; else pass "$1"; fi
}

truth_lo=$(grep -cF '"server": "127.0.0.1:7301"' "$W/lo.truth")
truth_veth=$(grep -cF "\"server\": \"$CA:$port_veth\"" "$W/veth.truth")
if ((started)); then
    found_once "a namespace's loopback stall, counted once" "$W/all.out" 127.0.0.1:7301 "$lo_pid" \
        "$LO" "bound_client.py 127.0.0.1 7301 47301" "$truth_lo"
    selected "another namespace's same four-tuple kept apart" &&
        if [[ $(rows "$W/all.out" 127.0.0.1:7301 | grep -c " $LO2 ") == 0 ]] &&
            awk -v m="${MED_LO2:-NA}" 'BEGIN { exit !(m + 0 > 0 && m + 0 < 5) }'; then
            pass "another namespace's same four-tuple kept apart (LO2's median $MED_LO2 ms)"
        else
            fail "another namespace's same four-tuple kept apart" "LO2 median ${MED_LO2:-NA}" "$W/all.out"
        fi
    found_once "a stall across a veth between two namespaces, counted once" "$W/all.out" \
        "$CA:$port_veth" "$veth_pid" "$NB" "legacy_client.py $CA $port_veth" "$truth_veth"
    if selected "the veth holder's cgroup named"; then
        cg=$(jq -r --arg p "$CA:$port_veth" --arg ns "$NB" \
            'select(.event == "wire_stall" and .peer == $p and .netns == $ns) | .cgroup // "-"' \
            "$W/all.out" 2>/dev/null | head -n 1)
        if [[ -z $CG ]]; then
            skip "the veth holder's cgroup named" "no cgroup2 mount to make a cgroup in"
        elif [[ $cg == "$CGUNIT" ]]; then
            pass "the veth holder's cgroup named: $cg (its namespace $NB)"
        else
            fail "the veth holder's cgroup named" "'$cg', not $CGUNIT" "$W/all.out"
        fi
    fi
    selected "a namespace made after watch started: captured within 2 s" &&
        if [[ -n $late_ms && $late_ms -lt 2000 ]]; then
            pass "a namespace made after watch started: captured within 2 s ($late_ms ms after its first command)"
        else
            fail "a namespace made after watch started: captured within 2 s" "${late_ms:-not} captured"
        fi
    if selected "a namespace made after watch started: its stall found"; then
        line=$(rows "$W/all.out" 127.0.0.1:7302)
        read -r _ rpid stalls rns prog <<<"$line"
        if [[ ${rpid:-} == "$late_client" && $rns == "pid:$LATE_NS_PID" && $prog == *"legacy_client.py 127.0.0.1 7302"* &&
            ${stalls:-0} -ge $((ROUNDS - 3)) ]]; then
            pass "a namespace made after watch started: its stall found (pid $rpid in $rns, $stalls stalls, median ${MED_LATE:-NA} ms)"
        else
            fail "a namespace made after watch started: its stall found" "'$line' (pid:$LATE_NS_PID's, $MINE)" "$W/all.out"
        fi
    fi
    selected "a process moving to a namespace later: captured within 4 s" &&
        if [[ -n $mover_ms && $mover_ms -lt 4000 ]]; then
            pass "a process moving to a namespace later: captured within 4 s ($mover_ms ms after it moved)"
        else
            fail "a process moving to a namespace later: captured within 4 s" "'${mover_ms:-not}'" "$W/mover.out"
        fi
    selected "a namespace gone: closed within 2 s" &&
        if [[ -n $late_ino && -n $late_closed_ms && $late_closed_ms -lt 2000 ]]; then
            pass "a namespace gone: closed within 2 s ($late_closed_ms ms)"
        else
            fail "a namespace gone: closed within 2 s" "inode '${late_ino:-}', '${late_closed_ms:-still held}'"
        fi
    found_once "--netns NAME: that namespace's stall" "$W/only.out" "$CA:$port_veth" "$veth_pid" "$NB" \
        "legacy_client.py" "$truth_veth"
    none "--netns NAME: not another namespace's" "$W/only.out" 127.0.0.1:7301
    found_once "-i lo: each namespace's loopback" "$W/lo.out" 127.0.0.1:7301 "$lo_pid" "$LO" \
        "bound_client.py" "$truth_lo"
    none "-i lo: not the veth" "$W/lo.out" "$CA:$port_veth"
    found_once "-i IFACE that only a namespace has" "$W/vb.out" "$CA:$port_veth" "$veth_pid" "$NB" \
        "legacy_client.py" "$truth_veth"
    found_once "--netns PID: that process's namespace" "$W/bypid.out" 127.0.0.1:7301 "$lo_pid" \
        "pid:$LO_SERVER" "bound_client.py" "$truth_lo"
    # bypid's two captures (LO's, B's) each saw what tcpdump saw there
    if selected "the counts cover every capture"; then
        read -r captured drops <<<"$(jq -r 'select(.event == "wire_stats") | "\(.captured) \(.drops)"' \
            "$W/bypid.out" 2>/dev/null | tail -n 1)"
        want=$(($(tcpdump -r "$W/lo.pcap" 2>/dev/null | wc -l) + $(tcpdump -r "$W/veth.pcap" 2>/dev/null | wc -l)))
        if [[ ${drops:-} == 0 && ${captured:-0} -ge $want && $want -gt 100 ]]; then
            pass "the counts cover every capture ($captured packets, tcpdump's $want in LO and B; $drops dropped)"
        else
            fail "the counts cover every capture" "captured '${captured:-}' (tcpdump's $want), drops '${drops:-}'"
        fi
    fi
fi

# ---- --fix on a holder in a namespace ----------------------------------------

if selected "--fix on a holder in a namespace"; then
    if watch_start fix "$NB" "$NC" -- --fix --json --netns "$NB" --netns "$NC"; then
        run_bg fix-client ip netns exec "$NB" python3 "$LEGACY_DIR/legacy_client.py" "$CA" "$port_veth" 60 split
        fpid=$BG_PID
        med=$(wait_bg fix-client "$fpid")
        sleep 0.3
        watch_stop fix
        line=$(jq -c --argjson p "$fpid" 'select(.event == "wire_fix" and .pid == $p)' "$W/fix.out" 2>/dev/null)
        if [[ $line == *'"socket":{"result":"set"'*'"before":0,"after":1'* && $line == *"\"netns\":\"$NB\""* ]] &&
            awk -v m="$med" 'BEGIN { exit !(m + 0 > 0 && m + 0 < 5) }'; then
            pass "--fix on a holder in a namespace: pid $fpid in $NB fixed, median $med ms"
        else
            fail "--fix on a holder in a namespace" "median '$med', wire_fix '$line'" "$W/fix.out"
        fi
    else
        fail "--fix on a holder in a namespace" "watch did not start" "$W/fix.err"
    fi
fi

# ---- a busy namespace's ring grows -----------------------------------------------

# ring_kib PID NS: the KiB of the packet rings PID has mapped whose socket
# is bound in NS, one line each.
ring_kib() {
    local ino range _
    for ino in $(ns_packet_inodes "$2"); do
        while read -r range _ _ _ _ name; do
            [[ $name == "socket:[$ino]" ]] && echo $(((16#${range#*-} - 16#${range%-*}) / 1024))
        done <"/proc/$1/maps"
    done
}
if selected "a busy namespace's ring grows"; then
    if watch_start grow "$LO2" -- --json --netns "$LO2"; then
        before=$(ring_kib "${NFPID[grow]}" "$LO2" | tr '\n' ' ')
        ip netns exec "$LO2" python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 7301))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
end = time.time() + 1.5
n = 0
while time.time() < end:
    s.sendall(b"x" * 200)
    got = b""
    while len(got) < 2:
        got += s.recv(2 - len(got))
    n += 1
print(n)' >"$W/grow.rounds" 2>&1
        sleep 0.3 # a tick closes the ring replaced
        after=$(ring_kib "${NFPID[grow]}" "$LO2" | tr '\n' ' ')
        watch_stop grow
        if [[ -z $before && $after =~ ^[0-9]+\ $ && ${after% } -ge 1024 ]]; then
            pass "a busy namespace's ring grows: a queue -> ${after% } KiB ($(cat "$W/grow.rounds") rounds in 1.5 s)"
        else
            fail "a busy namespace's ring grows" "rings '$before' -> '$after' KiB" "$W/grow.rounds"
        fi
    else
        fail "a busy namespace's ring grows" "watch did not start" "$W/grow.err"
    fi
fi

# ---- a namespace waking loses no packet unsaid -----------------------------------

# out_segs NS: NS's TCP segments sent so far (Tcp OutSegs).
out_segs() {
    ip netns exec "$1" awk '/^Tcp:/ && $2 ~ /^[0-9]/ { print $12 }' /proc/net/snmp
}
if selected "a namespace waking loses no packet unsaid"; then
    ip netns exec "$NW" python3 -c '
import socket, threading
l = socket.socket()
l.bind(("127.0.0.1", 7302))
l.listen(64)
print("ready", flush=True)
def drain(c):
    while c.recv(1 << 16):
        pass
while True:
    c, _ = l.accept()
    threading.Thread(target=drain, args=(c,), daemon=True).start()' >"$W/wake.sink" 2>&1 &
    sink=$!
    BG_PIDS+=("$sink")
    wait_until 5 grep -q ready "$W/wake.sink"
    if watch_start wake "$NW" -- --json --netns "$NW" --metrics-file "$W/wake.prom"; then
        o0=$(out_segs "$NW")
        ip netns exec "$NW" python3 -c '
import os, socket, sys
kids = []
for p in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:
        s = socket.create_connection(("127.0.0.1", 7302))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(int(sys.argv[2])):
            s.sendall(b"x" * 100)
        s.close()
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)' "$WAKE_CONNS" "$WAKE_MSGS" >"$W/wake.blast" 2>&1
        sleep 0.3 # the sink's last ACKs
        o1=$(out_segs "$NW")
        watch_stop wake
        read -r segs dups drops <<<"$(jq -r 'select(.event == "wire_stats") | "\(.segments) \(.duplicates) \(.drops)"' \
            "$W/wake.out" | tail -n 1)"
        mdrops=$(awk '$1 == "naglefix_packets_dropped_total" { print $2 }' "$W/wake.prom" 2>/dev/null)
        truth=$((o1 - o0))
        seen=$((${segs:-0} - ${dups:-0}))
        if [[ -n ${segs:-} && ${mdrops:-x} == "${drops:-y}" ]] && ((truth > 1000 && seen + drops >= truth - WAKE_SLACK)); then
            pass "a namespace waking loses no packet unsaid: $truth segments sent, $seen read, $drops dropped and said"
        else
            fail "a namespace waking loses no packet unsaid" \
                "$truth segments sent, ${segs:-?} read (${dups:-?} second copies), ${drops:-?} dropped said, ${mdrops:-?} in the metrics" \
                "$W/wake.out"
        fi
    else
        fail "a namespace waking loses no packet unsaid" "watch did not start" "$W/wake.err"
    fi
    kill "$sink" 2>/dev/null
    wait "$sink" 2>/dev/null
fi

# ---- a namespace deleted is freed ----------------------------------------------

if selected "a deleted namespace is freed (watch holds nothing of it)"; then
    watch_start end "$LO" -- --json
    kill "$LO_SERVER" # (its stdin's other writers: every job started after it)
    wait_until 5 gone "$LO_SERVER"
    ip netns del "$LO"
    gone=""
    for ((i = 0; i < 300; i++)); do
        ip link show "$VH" >/dev/null 2>&1 || { gone=$i; break; }
        sleep 0.01
    done
    watch_stop end
    if [[ -n $gone ]]; then
        pass "a deleted namespace is freed (watch holds nothing of it): its veth gone in $((gone * 10)) ms"
    else
        fail "a deleted namespace is freed (watch holds nothing of it)" "$VH still here after 3 s"
    fi
fi

finish
