#!/usr/bin/env bash
# run.sh - naglefix attach, attach --list and detach (make test-attach):
# naglefix's sock_ops program put on cgroups this suite makes under the
# cgroup2 mount (torn down at the end), judged by real connections of
# programs started in them and by bpftool (Debian's), never by naglefix's
# own report alone. Needs root. The cgroups are the suite's only: nothing
# is attached to the root or to any cgroup it did not make, for other
# suites run beside it on this machine.
#
# Checks (T=name selects):
#   attach-unit-*              src/bpf on its own (check_bpf.c)
#   attach-bpftool-shows       bpftool lists naglefix's program, multi, on the cgroup
#   attach-static-client       a static C client started in the cgroup after
#                              attach: median and p99 under 5 ms from round 1
#   attach-python-client       the same, a Python client
#   attach-outside-stalls      the same client outside the cgroup: 40 ms
#   attach-outside-unchanged   every TCP socket of this suite's processes
#                              outside the cgroup: unchanged, new ones off
#   attach-per-destination     a rule's server fixed, another left
#   attach-accept-server       a split-answering server (Python's http.server)
#                              started in the cgroup under an accept rule
#   attach-match-table         match.table through the library's matcher and
#                              the kernel's (match_table.c)
#   attach-replace-no-gap      attaching again: one program of naglefix's,
#                              in place, and no new connection without it
#   attach-other-tool-kept     another tool's program (bpftool, from an
#                              object) there, unchanged, after attach and detach
#   attach-blocked-*           override and exclusive programs stand in the way:
#                              status 5, one line, nothing attached
#   attach-list                --list: the cgroup, its rules, the other program
#   attach-watch-fix           watch --fix --attach: the holder's rule added to
#                              its cgroup (never the root; a rule there decides)
#   attach-now                 --now sets a connection opened before; without
#                              it, it is said to be left
#   attach-program-wins        a program's own setsockopt(TCP_NODELAY, 0) wins
#   attach-pid                 --pid: a process's cgroup; the root's refused
#   attach-error-*             each failure one line, its status, nothing left
#   attach-detach-stalls       after detach, new connections stall again;
#                              bpftool shows nothing of naglefix's
#   attach-route-*             quickack rules on a namespace's routes
#                              (route.sh: its own list)
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
clean_env
B=$TOP/build
W=$B/tests/attach
NF=$B/naglefix
ROUNDS=1000 # p99 is the 10th slowest: no one hiccup of this shared machine decides it
need_built "make test-attach" "$NF" "$W/check_bpf" "$W/match_table"

if [[ $(id -u) -ne 0 ]]; then
	skip attach "needs root (bpf(2) on cgroups)"
	finish
	exit
fi
for tool in bpftool clang nsenter ip python3; do
	command -v "$tool" >/dev/null || { fail attach "no $tool: run tests/install-deps.sh"; finish; exit; }
done
ROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [[ -z $ROOT ]]; then
	skip attach "no cgroup2 mounted here"
	finish
	exit
fi

scratch_dir naglefix-attach
CG=$ROOT/naglefix-test.$$
NETNS=naglefix-attach.$$
BPFFS=$TMP/bpffs
PIDS=()
teardown() {
	local p d
	exec 8>&- # the servers' standard input: they end at its end
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait "${PIDS[@]}" 2>/dev/null
	if [[ -d $CG ]]; then
		"$NF" detach --cgroup "$CG" >/dev/null 2>&1
		bpftool cgroup detach "$CG" sock_ops pinned "$BPFFS/other" 2>/dev/null
		bpftool cgroup detach "$CG/child" sock_ops pinned "$BPFFS/other" 2>/dev/null
		for d in $(find "$CG" -depth -type d 2>/dev/null); do
			while read -r p; do echo "$p" >"$ROOT/cgroup.procs"; done <"$d/cgroup.procs" 2>/dev/null
			rmdir "$d" 2>/dev/null
		done
	fi
	ip netns del "$NETNS" 2>/dev/null
	ip netns del "naglefix-watch.$$" 2>/dev/null
	ip netns del "naglefix-route.$$" 2>/dev/null
	ip netns del "naglefix-recv.$$" 2>/dev/null
	ip netns del "naglefix-hold.$$" 2>/dev/null
	ip netns del "naglefix-kstate.$$" 2>/dev/null
	ip netns del "naglefix-rec.$$" 2>/dev/null
	ip netns del "naglefix-dup.$$" 2>/dev/null
	ip netns del "naglefix-big.$$" 2>/dev/null
	ip netns del "naglefix-gone.$$" 2>/dev/null
	ip netns del "naglefix-new.$$" 2>/dev/null
	mountpoint -q "$BPFFS" && umount "$BPFFS"
	rm -rf "$TMP"
}
trap teardown EXIT
mkdir -p "$CG"
# the servers read this until the suite ends (they exit at its end)
mkfifo "$TMP/hold" && exec 8<>"$TMP/hold"

# ---- helpers ------------------------------------------------------------

# in_cg DIR CMD...: CMD run as a process of the cgroup DIR from its start.
in_cg() {
	local dir=$1
	shift
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' in_cg "$dir" "$@" 8>&-
}

# in_cg_bg DIR CMD...: the same in the background, its pid in BG (and PIDS).
in_cg_bg() {
	local dir=$1
	shift
	# <&0: a command put in the background reads /dev/null unless told
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' in_cg "$dir" "$@" <&0 8>&- &
	BG=$!
	PIDS+=($BG)
}

# start NAME [--cg DIR] CMD...: a server in the background (in the cgroup
# DIR), its stdin the suite's fifo, its output in $TMP/NAME.out; waits
# for its "PORT n" line into PORT_NAME.
start() {
	local name=$1 i dir=""
	shift
	[[ $1 == --cg ]] && dir=$2 && shift 2
	if [[ -n $dir ]]; then
		in_cg_bg "$dir" "$@" <"$TMP/hold" >"$TMP/$name.out" 2>&1
	else
		"$@" <"$TMP/hold" >"$TMP/$name.out" 2>&1 8>&- &
		BG=$!
		PIDS+=($BG)
	fi
	printf -v "PID_$name" '%s' "$BG"
	for i in $(seq 100); do
		grep -q '^PORT ' "$TMP/$name.out" 2>/dev/null && break
		sleep 0.05
	done
	printf -v "PORT_$name" '%s' "$(sed -n 's/^PORT //p' "$TMP/$name.out")"
}

# field NAME LINE: the value of NAME=... in LINE.
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }
below() { awk -v a="${1:-999}" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# fast NAME LINE: passes if the client's line says median and p99 < 5 ms.
fast() {
	local med p99
	med=$(field median_ms "$2") p99=$(field p99_ms "$2")
	if [[ -n $med ]] && below "$med" 5 && below "$p99" 5; then
		pass "$1: median $med ms, p99 $p99 ms over $ROUNDS rounds"
	else
		fail "$1" "want median and p99 < 5 ms: ${2:-no output}"
	fi
}

# slow NAME LINE: passes if the median is 30 ms or more (the stall).
slow() {
	local med
	med=$(field median_ms "$2")
	if [[ -n $med ]] && ! below "$med" 30; then
		pass "$1: median $med ms"
	else
		fail "$1" "want a median >= 30 ms (the stall): ${2:-no output}"
	fi
}

# ours DIR: the ids of naglefix's programs bpftool lists on DIR.
ours() { bpftool cgroup show "$1" 2>/dev/null | awk '$2 == "cgroup_sock_ops" && $NF == "naglefix" { print $1 }'; }

# one_line NAME STATUS WANT_STATUS ERRFILE [WORD]: a failure said in one
# line of stderr with the documented status (and WORD in it).
one_line() {
	local n
	n=$(wc -l <"$4")
	if [[ $2 -eq $3 && $n -eq 1 ]] && grep -q -- "${5:-.}" "$4"; then
		pass "$1: status $2, $(cut -c1-150 "$4")"
	else
		fail "$1" "want status $3 and one line${5:+ with '$5'}: status $2, $n lines" "$4"
	fi
}

# ---- src/bpf on its own -------------------------------------------------

for c in asm-offsets verifier-log state-readback rules-limit probe-nodelay probe-refused; do
	selected "attach-unit-$c" || continue
	start_t=$EPOCHREALTIME
	LIMIT=60 timeout 60 "$W/check_bpf" "$c" "$ROOT" >"$TMP/unit.log" 2>&1
	judge "attach-unit-$c" $? "$start_t" "$TMP/unit.log"
done

# ---- the servers, outside every cgroup of the suite --------------------

start echo python3 "$TOP/tests/fix/echo_server.py" 127.0.0.1 600
start echo2 python3 "$TOP/tests/fix/echo_server.py" 127.0.0.1 600
cc -static -std=gnu11 -Wall -Wextra -Werror -O2 -o "$W/split_client" "$HERE/split_client.c" ||
	fail "build split_client (cc -static)"
PY=$HERE/split_client.py
STATIC=$W/split_client

# A long-lived client outside the cgroup, connected before the attach:
# its sockets and the servers' are listed before and after.
python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("PORT 0", flush=True)
sys.stdin.read()' "$PORT_echo" >"$TMP/held.out" 2>&1 <"$TMP/hold" 8>&- &
PIDS+=($!)
HELD=$!
for _ in $(seq 100); do grep -q '^PORT' "$TMP/held.out" && break; sleep 0.05; done
# sockets_of: "PID FD INODE NODELAY" of every TCP socket of this suite's
# processes outside the cgroup (tests/fix/nodelay_of.c reads them by
# pidfd_getfd), sorted.
cc -std=gnu11 -O2 -o "$W/nodelay_of" "$TOP/tests/fix/nodelay_of.c" || fail "build nodelay_of"
outside_pids() { echo "$PID_echo $PID_echo2 $HELD"; }
sockets_of() {
	local p
	for p in $(outside_pids); do
		"$W/nodelay_of" "$p" 2>/dev/null | awk -v p="$p" '{ print p, $1, $2, $3 }'
	done | sort
}
sockets_of >"$TMP/sockets.before"

# ---- attach, and programs started in the cgroup after it ----------------

"$NF" attach -m nodelay --cgroup "$CG" >"$TMP/attach.out" 2>"$TMP/attach.err"
rc=$?
if selected attach-bpftool-shows; then
	line=$(bpftool cgroup show "$CG" | awk '$2 == "cgroup_sock_ops" && $3 == "multi" && $NF == "naglefix"')
	if [[ $rc -eq 0 && -n $line ]]; then
		pass "attach-bpftool-shows: $line"
	else
		fail attach-bpftool-shows "status $rc; bpftool: $(bpftool cgroup show "$CG" | tr '\n' '|')" "$TMP/attach.err"
	fi
fi
selected attach-static-client &&
	fast attach-static-client "$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" $ROUNDS)"
selected attach-python-client &&
	fast attach-python-client "$(in_cg "$CG" python3 "$PY" 127.0.0.1 "$PORT_echo" $ROUNDS)"
selected attach-outside-stalls &&
	slow attach-outside-stalls "$("$STATIC" 127.0.0.1 "$PORT_echo" 13)"
if selected attach-outside-unchanged; then
	# the servers' ends of the cgroup's connections came and went; new
	# ones now, from the cgroup and from outside, held while listed
	in_cg_bg "$CG" python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); time.sleep(1.5)' "$PORT_echo2"
	python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); time.sleep(1.5)' "$PORT_echo2" 8>&- &
	out=$!
	sleep 0.7
	sockets_of >"$TMP/sockets.after"
	wait "$BG" "$out"
	changed=$(join -j1 <(awk '{ print $1 "/" $3, $4 }' "$TMP/sockets.before") \
		<(awk '{ print $1 "/" $3, $4 }' "$TMP/sockets.after") | awk '$2 != $3')
	new_on=$(comm -13 <(cut -d' ' -f1,3 "$TMP/sockets.before") <(cut -d' ' -f1,3 "$TMP/sockets.after") |
		while read -r p ino; do awk -v p="$p" -v i="$ino" '$1 == p && $3 == i && $4 == 1' "$TMP/sockets.after"; done)
	n_before=$(wc -l <"$TMP/sockets.before") n_new=$(($(wc -l <"$TMP/sockets.after") - n_before))
	if [[ -z $changed && -z $new_on && $n_before -ge 4 ]]; then
		pass "attach-outside-unchanged: $n_before sockets unchanged, $n_new new ones (the server's end of the cgroup's connection among them) off"
	else
		fail attach-outside-unchanged "changed: ${changed:-none}; new with TCP_NODELAY: ${new_on:-none}; $n_before listed before"
	fi
fi

# ---- quickack rules on a namespace's routes --------------------------------

# shellcheck source-path=SCRIPTDIR source=route.sh
. "$HERE/route.sh"

# ---- another tool's program on the cgroup -------------------------------

mkdir -p "$BPFFS" && mount -t bpf bpf "$BPFFS" &&
	clang -O2 -target bpf -c "$HERE/other_tool.c" -o "$W/other_tool.o" &&
	bpftool prog load "$W/other_tool.o" "$BPFFS/other" type sockops || fail "load other_tool.o with bpftool"
other_line() { bpftool cgroup show "$1" | awk '$NF == "other_tool" { print $1, $3 }'; }
other_tag() { bpftool prog show pinned "$BPFFS/other" | sed -n 's/.* tag \([0-9a-f]*\).*/\1/p'; }
OTHER_TAG=$(other_tag)

if any_selected attach-other-tool-kept attach-replace-no-gap attach-list; then
	bpftool cgroup attach "$CG" sock_ops pinned "$BPFFS/other" multi
	other_before=$(other_line "$CG")
	first=$(ours "$CG")
	printf 'connect 127.0.0.1:%s nodelay\nconnect 127.0.0.0/8 coalesce\ndefault pass\n' "$PORT_echo" >"$TMP/dest.conf"
	# a stream of new connections from the cgroup while attach runs again
	in_cg_bg "$CG" python3 -c '
import socket, sys, time
port, off, n = int(sys.argv[1]), 0, 0
end = time.time() + 3
while time.time() < end:
    s = socket.create_connection(("127.0.0.1", port))
    n += 1
    off += s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    s.close()
print("conns=%d off=%d" % (n, off))' "$PORT_echo" >"$TMP/stream.out"
	sleep 0.3
	for i in 1 2 3 4 5; do
		"$NF" attach -m nodelay --cgroup "$CG" >"$TMP/again.out" 2>&1 || fail attach-replace-no-gap "attach again: status $?" "$TMP/again.out"
	done
	"$NF" attach -c "$TMP/dest.conf" --cgroup "$CG" >"$TMP/again.out" 2>"$TMP/again.err"
	wait "$BG"
	now=$(ours "$CG")
	stream=$(cat "$TMP/stream.out")
	order=$(bpftool cgroup show "$CG" | awk 'NR > 1 { print $NF }' | tr '\n' ' ')
	if selected attach-replace-no-gap; then
		if [[ -n $first && -n $now && $now != "$first" && $(wc -w <<<"$now") -eq 1 &&
			$order == "naglefix other_tool " && $(field off "$stream") == 0 && $(field conns "$stream") -gt 20 ]]; then
			pass "attach-replace-no-gap: program $first -> $now in its place ($order), $stream during 6 attaches"
		else
			fail attach-replace-no-gap "programs $first -> ${now:-none}, order '$order', $stream" "$TMP/again.err"
		fi
	fi
	other_after=$(other_line "$CG")
	if selected attach-other-tool-kept; then
		if [[ -n $other_before && $other_after == "$other_before" && $(other_tag) == "$OTHER_TAG" ]] &&
			grep -q "beside it, left as it is: program ${other_before% *} 'other_tool' (multi)" "$TMP/again.out"; then
			pass "attach-other-tool-kept: program $other_before, tag $OTHER_TAG, after attach"
		else
			fail attach-other-tool-kept "before '$other_before', after '$other_after'" "$TMP/again.out"
		fi
	fi
	if selected attach-list; then
		"$NF" attach --list >"$TMP/list.out" 2>&1
		rc=$?
		if [[ $rc -eq 0 ]] && grep -q "^$CG " "$TMP/list.out" &&
			grep -q "program $now 'naglefix' (multi): naglefix's" "$TMP/list.out" &&
			grep -q "^ *1  connect 127.0.0.1:$PORT_echo nodelay$" "$TMP/list.out" &&
			grep -q "^ *3  default pass$" "$TMP/list.out" &&
			grep -q "program ${other_before% *} 'other_tool' (multi): another tool's" "$TMP/list.out"; then
			pass "attach-list: $(grep -c . "$TMP/list.out") lines, the cgroup with its rules and the other program"
		else
			fail attach-list "status $rc" "$TMP/list.out"
		fi
	fi
fi

# ---- per destination, and the library's rules said ----------------------

if selected attach-per-destination; then
	printf 'connect 127.0.0.1:%s nodelay\nconnect 127.0.0.0/8 coalesce\ndefault pass\n' "$PORT_echo" >"$TMP/dest.conf"
	"$NF" attach -c "$TMP/dest.conf" --cgroup "$CG" >"$TMP/dest.out" 2>"$TMP/dest.err"
	a=$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" 13)
	b=$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo2" 13)
	said=$(grep -c "dest.conf:2: coalesce needs the library" "$TMP/dest.err")
	if below "$(field median_ms "$a")" 5 && ! below "$(field median_ms "$b")" 30 && [[ $said -eq 1 ]]; then
		pass "attach-per-destination: the rule's server $(field median_ms "$a") ms, the other $(field median_ms "$b") ms; the coalesce rule said once"
	else
		fail attach-per-destination "rule's: $a; other: $b; coalesce said $said times" "$TMP/dest.err"
	fi
fi

# ---- a split-answering server in the cgroup, under an accept rule -------

if selected attach-accept-server; then
	printf 'accept 127.0.0.1:* nodelay\ndefault pass\n' >"$TMP/accept.conf"
	"$NF" detach --cgroup "$CG" >/dev/null
	start bare --cg "$CG" python3 "$TOP/tests/fix/http_server.py" 600
	bare=$(python3 "$TOP/tests/fix/http_client.py" "$PORT_bare" 13)
	"$NF" attach -c "$TMP/accept.conf" --cgroup "$CG" >"$TMP/accept.out" 2>&1
	start served --cg "$CG" python3 "$TOP/tests/fix/http_server.py" 600
	fixed=$(python3 "$TOP/tests/fix/http_client.py" "$PORT_served" 13)
	if ! below "$(field median_ms "$bare")" 30 && below "$(field median_ms "$fixed")" 5 &&
		below "$(field max_ms "$fixed")" 5; then
		pass "attach-accept-server: http.server's split answers $(field median_ms "$bare") ms bare, $(field median_ms "$fixed") ms (max $(field max_ms "$fixed")) under 'accept 127.0.0.1:* nodelay'"
	else
		fail attach-accept-server "bare: $bare; attached: $fixed" "$TMP/accept.out"
	fi
fi

# ---- one table through both matchers ------------------------------------

if selected attach-match-table; then
	ip netns add "$NETNS" && ip -n "$NETNS" link set lo up
	for a in 10.1.2.3 10.1.3.3 10.200.0.9; do ip -n "$NETNS" addr add "$a/32" dev lo; done
	for a in 2001:db8::1 2001:db8:0:1::1 2001:db8:ffff::1 2001:db9::1; do
		ip -n "$NETNS" addr add "$a/128" dev lo nodad
	done
	"$NF" detach --cgroup "$CG" >/dev/null # its rules would apply below it too
	mkdir -p "$CG/table"
	# nsenter, not ip netns exec: that one remounts /sys, and the cgroup2
	# mount under it with it
	timeout 60 nsenter --net="/run/netns/$NETNS" "$W/match_table" "$NF" "$CG/table" \
		"$HERE/match.table" >"$TMP/table.out" 2>"$TMP/table.err"
	rc=$?
	if [[ $rc -eq 0 ]]; then
		pass "attach-match-table: $(tail -n 1 "$TMP/table.out")"
	else
		{ grep -v '^ok' "$TMP/table.out"; cat "$TMP/table.err"; } >"$TMP/table.bad"
		fail attach-match-table "status $rc: $(grep -c MISMATCH "$TMP/table.out") mismatches" "$TMP/table.bad"
	fi
	rmdir "$CG/table"
fi

# ---- watch --fix --attach -----------------------------------------------------

# In a network namespace of the suite's own (watch --netns sees nothing
# else): a client in the cgroup stalls, watch fixes its socket and adds
# its rule to the cgroup's program; a new client there is fast from its
# first round. A client of the root cgroup: its socket only. A client in
# a cgroup whose rules say pass for that peer: left to them.
if selected attach-watch-fix; then
	WNS=naglefix-watch.$$
	ip netns add "$WNS" && ip -n "$WNS" link set lo up
	mkdir -p "$CG/watched" "$CG/passed"
	start wecho nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/echo_server.py" 127.0.0.1 600
	# a pass rule has nothing to attach: its program goes with a nodelay rule for another port
	printf 'connect 127.0.0.1:%s pass\nconnect 127.0.0.1:1 nodelay\n' "$PORT_wecho" >"$TMP/pass.conf"
	"$NF" attach -c "$TMP/pass.conf" --cgroup "$CG/passed" >/dev/null 2>&1
	timeout 30 "$NF" watch --netns "$WNS" --fix --attach -t 9 >"$TMP/watch.out" 2>&1 &
	wpid=$!
	sleep 2.5
	run_ns() { nsenter --net="/run/netns/$WNS" "$@"; }
	in_cg "$CG/watched" nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_wecho" 20 >"$TMP/w1.out" 2>&1
	run_ns python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_wecho" 20 >"$TMP/w2.out" 2>&1
	in_cg "$CG/passed" nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_wecho" 20 >"$TMP/w3.out" 2>&1
	new=$(in_cg "$CG/watched" nsenter --net="/run/netns/$WNS" python3 "$PY" 127.0.0.1 "$PORT_wecho" $ROUNDS)
	wait "$wpid"
	w1=$(sed -n 's/^pid //p' "$TMP/w1.out") w2=$(sed -n 's/^pid //p' "$TMP/w2.out") w3=$(sed -n 's/^pid //p' "$TMP/w3.out")
	root_cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
	if grep -q "fix: pid $w1 socket .*attach: $CG/watched ([^)]*): program [0-9]*, connect 127.0.0.1:$PORT_wecho nodelay" "$TMP/watch.out" &&
		{ [[ $root_cg != / ]] || grep -q "fix: pid $w2 socket fd [0-9]* TCP_NODELAY 0 -> 1.*attach: not attached (its cgroup is the root" "$TMP/watch.out"; } &&
		grep -q "fix: pid $w3 socket .*attach: $CG/passed ([^)]*): left, .*pass.conf:1 says pass" "$TMP/watch.out" &&
		below "$(field median_ms "$new")" 5 && below "$(field p99_ms "$new")" 5 && [[ $new == *nodelay=1 ]]; then
		pass "attach-watch-fix: the holder's rule attached to its cgroup, a new client there $(field median_ms "$new") ms (p99 $(field p99_ms "$new")) from round 1; the root's holder: its socket only; a pass rule's: left"
	else
		echo "new client: $new; pids $w1 $w2 $w3" >>"$TMP/watch.out"
		fail attach-watch-fix "see watch's lines" "$TMP/watch.out"
	fi
	"$NF" detach --cgroup "$CG/watched" >/dev/null 2>&1
	"$NF" detach --cgroup "$CG/passed" >/dev/null 2>&1
	ip netns del "$WNS"
fi

# ---- connections opened before the attach --------------------------------

if selected attach-now; then
	"$NF" detach --cgroup "$CG" >/dev/null
	mkdir -p "$CG/now"
	# fix_client.py prints each round; connected now, before any attach
	in_cg_bg "$CG/now" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_echo" 100000 >"$TMP/now.out" 2>&1
	nowpid=$BG
	sleep 1
	"$NF" attach -m nodelay --cgroup "$CG/now" >"$TMP/now1.out" 2>&1
	sleep 0.5
	r1=$(grep -c '^round' "$TMP/now.out")
	sleep 0.5
	left=$(awk -v r="$r1" '$1 == "round" && $2 >= r { n++; s += $3 } END { if (n) printf "%.1f", s / n }' "$TMP/now.out")
	"$NF" attach --now -m nodelay --cgroup "$CG/now" >"$TMP/now2.out" 2>&1
	rc=$?
	r2=$(grep -c '^round' "$TMP/now.out")
	sleep 0.5
	kill "$nowpid" 2>/dev/null
	wait "$nowpid" 2>/dev/null
	set_ms=$(awk -v r="$r2" '$1 == "round" && $2 > r + 1 { n++; s += $3 } END { if (n) printf "%.2f", s / n }' "$TMP/now.out")
	if grep -q "connections opened before now are left as they are (1 process in the cgroup; --now sets them too)" "$TMP/now1.out" &&
		! below "$left" 30 && [[ $rc -eq 0 ]] && grep -q ' set (nodelay, -m nodelay)' "$TMP/now2.out" &&
		below "$set_ms" 5; then
		pass "attach-now: left and said so ($left ms a round), then --now: $set_ms ms a round"
	else
		cat "$TMP/now1.out" "$TMP/now2.out" >"$TMP/now.log"
		fail attach-now "without --now ${left:-?} ms, status $rc, after --now ${set_ms:-?} ms" "$TMP/now.log"
	fi
	rmdir "$CG/now" 2>/dev/null
fi

# ---- what a program sets itself, later, wins -----------------------------

if selected attach-program-wins; then
	"$NF" attach -m nodelay --cgroup "$CG" >/dev/null 2>&1
	# tests/legacy's client turns TCP_NODELAY off itself after connect()
	start legacy python3 "$TOP/tests/legacy/legacy_server.py" 0 600
	line=$(in_cg "$CG" python3 "$TOP/tests/legacy/legacy_client.py" 127.0.0.1 "$PORT_legacy" 13 split)
	slow "attach-program-wins: legacy_client.py's own setsockopt(TCP_NODELAY, 0) after the kernel's" "$line"
fi

# ---- --pid ------------------------------------------------------------------

if selected attach-pid; then
	mkdir -p "$CG/bypid"
	in_cg_bg "$CG/bypid" sleep 30
	spid=$BG
	sleep 0.2
	"$NF" attach -m nodelay --pid "$spid" >"$TMP/pid.out" 2>&1
	rc=$?
	sleep 30 8>&- &
	rpid=$!
	PIDS+=($rpid)
	root_cg=$(sed -n 's/^0:://p' /proc/$rpid/cgroup)
	"$NF" attach -m nodelay --pid "$rpid" >"$TMP/pidroot.out" 2>"$TMP/pidroot.err"
	rrc=$?
	if [[ $rc -eq 0 && -n $(ours "$CG/bypid") ]] && grep -q "$CG/bypid" "$TMP/pid.out" &&
		{ [[ $root_cg != / ]] || { [[ $rrc -eq 4 ]] && grep -q "is in the root cgroup" "$TMP/pidroot.err"; }; }; then
		pass "attach-pid: --pid $spid is $CG/bypid; a process in the root refused (status $rrc)"
	else
		cat "$TMP/pidroot.err" >>"$TMP/pid.out"
		fail attach-pid "status $rc, root's status $rrc" "$TMP/pid.out"
	fi
	"$NF" detach --pid "$spid" >/dev/null 2>&1
	kill "$spid" "$rpid" 2>/dev/null
	wait "$spid" "$rpid" 2>/dev/null
	rmdir "$CG/bypid" 2>/dev/null
fi

# ---- programs whose mode stands in the way -------------------------------

# blocked NAME DIR MODE [SUB]: another tool's program on DIR in MODE; an
# attach to SUB (default DIR) says so in one line, status 5, and leaves
# nothing of naglefix's anywhere.
blocked() {
	local name=$1 dir=$2 mode=$3 sub=${4:-$2} rc
	selected "$name" || return
	"$NF" detach --cgroup "$dir" >/dev/null 2>&1
	bpftool cgroup detach "$dir" sock_ops pinned "$BPFFS/other" 2>/dev/null
	bpftool cgroup attach "$dir" sock_ops pinned "$BPFFS/other" ${mode#exclusive}
	"$NF" attach -m nodelay --cgroup "$sub" >"$TMP/blocked.out" 2>"$TMP/blocked.err"
	rc=$?
	if [[ -z $(ours "$dir") && -z $(ours "$sub") && -z $(ls -d "$ROOT"/naglefix-probe.* 2>/dev/null) ]]; then
		one_line "$name" "$rc" 5 "$TMP/blocked.err" "program [0-9]* 'other_tool' on .* in $mode mode"
	else
		fail "$name" "naglefix's program left: $(ours "$dir") $(ours "$sub")" "$TMP/blocked.err"
	fi
	bpftool cgroup detach "$dir" sock_ops pinned "$BPFFS/other" 2>/dev/null
}
mkdir -p "$CG/child"
blocked attach-blocked-override "$CG" override
blocked attach-blocked-exclusive "$CG" exclusive
blocked attach-blocked-override-above "$CG" override "$CG/child"
blocked attach-blocked-exclusive-above "$CG" exclusive "$CG/child"

# ---- each failure in one line, with its status ------------------------------

# error NAME WANT WORD CMD...: CMD's stderr one line with WORD, status WANT,
# and no program of naglefix's nor probe cgroup left behind.
error() {
	local name=$1 want=$2 word=$3 rc
	shift 3
	selected "$name" || return
	"$@" >"$TMP/err.out" 2>"$TMP/err.err"
	rc=$?
	if [[ -n $(ours "$CG") || -n $(ls -d "$ROOT"/naglefix-probe.* 2>/dev/null) ]]; then
		fail "$name" "something left: $(ours "$CG") $(ls -d "$ROOT"/naglefix-probe.* 2>/dev/null)"
	else
		one_line "$name" "$rc" "$want" "$TMP/err.err" "$word"
	fi
}
"$NF" detach --cgroup "$CG" >/dev/null 2>&1
mkdir -p "$TMP/plain"
printf 'connect 127.0.0.1:7000 nodelay\nfrobnicate\n' >"$TMP/bad.conf"
printf 'connect 127.0.0.1:7000 coalesce\ndefault pass\n' >"$TMP/none.conf"
error attach-error-outside 4 "outside the cgroup v2 hierarchy" "$NF" attach -m nodelay --cgroup "$TMP/plain"
error attach-error-not-cgroup 4 "not a cgroup" "$NF" attach -m nodelay --cgroup "$CG/cgroup.procs"
error attach-error-no-cgroup 4 "no such cgroup" "$NF" attach -m nodelay --cgroup "$CG/nosuch"
error attach-error-unit 4 "no such unit running" "$NF" attach -m nodelay --unit naglefix-nosuch-unit
error attach-error-pid 4 "no such process" "$NF" attach -m nodelay --pid 999999999
error attach-error-perm 2 "CAP_BPF and CAP_NET_ADMIN" setpriv --reuid=65534 --regid=65534 --clear-groups \
	--inh-caps=-all "$NF" attach -m nodelay --cgroup "$CG"
error attach-error-config 125 "bad.conf:2" "$NF" attach -c "$TMP/bad.conf" --cgroup "$CG"
error attach-error-no-nodelay 125 "nothing to attach" "$NF" attach -c "$TMP/none.conf" --cgroup "$CG"
error attach-error-mode 125 "other actions need the" "$NF" attach -m coalesce --cgroup "$CG"
error attach-error-two-targets 125 "at most" "$NF" attach --cgroup "$CG" --pid 1
error attach-error-no-cgroup2 4 "no cgroup v2 hierarchy is mounted" \
	unshare -m sh -c "umount -l '$ROOT' && exec '$NF' attach -m nodelay"
error attach-error-loopback 3 "ip link set lo up" unshare -n "$NF" attach -m nodelay --cgroup "$CG"
error detach-error-no-cgroup 4 "no such cgroup" "$NF" detach --cgroup "$CG/nosuch"

# ---- detach -------------------------------------------------------------------

if any_selected attach-detach-stalls attach-other-tool-kept; then
	bpftool cgroup attach "$CG" sock_ops pinned "$BPFFS/other" multi 2>/dev/null
	"$NF" attach -m nodelay --cgroup "$CG" >/dev/null 2>&1
	id=$(ours "$CG")
	before=$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" 13)
	other_before=$(other_line "$CG")
	"$NF" detach --cgroup "$CG" >"$TMP/detach.out" 2>&1
	rc=$?
	after=$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" 13)
	left=$(bpftool prog show id "$id" 2>/dev/null)
	if selected attach-detach-stalls; then
		if [[ $rc -eq 0 && -n $id && -z $(ours "$CG") && -z $left ]] &&
			below "$(field median_ms "$before")" 5 && ! below "$(field median_ms "$after")" 30; then
			pass "attach-detach-stalls: $(field median_ms "$before") ms attached, $(field median_ms "$after") ms after detach; bpftool: program $id gone"
		else
			fail attach-detach-stalls "status $rc, program ${id:-none}, left: ${left:-nothing}; before: $before; after: $after" "$TMP/detach.out"
		fi
	fi
	if selected attach-other-tool-kept; then
		if [[ -n $other_before && $(other_line "$CG") == "$other_before" && $(other_tag) == "$OTHER_TAG" ]]; then
			pass "attach-other-tool-kept: program $other_before, tag $OTHER_TAG, after detach"
		else
			fail attach-other-tool-kept "after detach: '$(other_line "$CG")', before '$other_before'" "$TMP/detach.out"
		fi
	fi
	bpftool cgroup detach "$CG" sock_ops pinned "$BPFFS/other" 2>/dev/null
fi

finish
