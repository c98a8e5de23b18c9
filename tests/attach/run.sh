#!/usr/bin/env bash
# run.sh - naglefix attach, attach --list and detach (make test-attach):
# naglefix's sock_ops and setsockopt programs put on cgroups this suite makes under the
# cgroup2 mount (torn down at the end), judged by real connections of
# programs started in them and by bpftool (Debian's), never by naglefix's
# own report alone. Needs root. The cgroups are the suite's only: nothing
# is attached to the root or to any cgroup it did not make, for other
# suites run beside it on this machine.
#
# Checks (T=name selects):
#   attach-unit-*              src/bpf on its own (check_bpf.c)
#   attach-bpftool-shows       with no policy (NAGLEFIX_CONF=none: nodelay for every
#                              connection), bpftool lists naglefix's two programs, multi,
#                              on the cgroup
#   attach-static-client       a static C client started in the cgroup after
#                              attach: median under 5 ms, p99 under 30, from round 1
#   attach-python-client       the same, a Python client
#   attach-outside-stalls      the same client outside the cgroup: 40 ms
#   attach-outside-unchanged   every TCP socket of this suite's processes
#                              outside the cgroup: unchanged, new ones off
#   attach-off-static, attach-off-python, attach-off-go
#                              clients that turn TCP_NODELAY off right after
#                              connecting (C static, Python, Go CGO_ENABLED=0):
#                              median under 5 ms, p99 under 30, from round 1
#   attach-off-outside-stalls  the same three outside the cgroup: 40 ms
#   attach-off-per-destination a rule's server fixed against their own
#                              setsockopt, another left to it (stalls)
#   attach-options-same        a program's own options and errors in the
#                              cgroup and outside: the same but for the rule
#   attach-no-hook             a kernel without the setsockopt hook (a shim's
#                              EINVAL): said, sock_ops alone
#   attach-undo                the setsockopt program's attach failing: the
#                              sock_ops program's undone, the earlier kept
#   attach-marks-kept          a connection made before a new attach: its
#                              own setsockopt(0) after it still held off
#   attach-per-destination     a rule's server fixed, another left
#   attach-accept-server       a split-answering server (Python's http.server)
#                              started in the cgroup under an accept rule
#   attach-match-table         match.table through the library's matcher and
#                              both kernel programs (match_table.c)
#   attach-replace-no-gap      attaching again: one program of naglefix's,
#                              in place, and no new connection without it
#   attach-other-tool-kept     another tool's sock_ops and setsockopt programs
#                              (bpftool, from objects) there, unchanged, after
#                              attach and detach; naglefix's rule holds beside
#   attach-blocked-*           override and exclusive programs (sock_ops or
#                              setsockopt) stand in the way: status 5, one
#                              line, nothing attached
#   attach-list                --list: the cgroup, its rules, the other program
#   attach-watch-fix           watch --fix --attach: the holder's rule added to
#                              its cgroup (never the root; a rule there decides)
#   attach-watch-fix-marked    the holder's socket watch --fix --attach fixed:
#                              marked, so its own setsockopt(TCP_NODELAY, 0)
#                              after reads 1 and its rounds stay fast
#   attach-now                 --now sets a connection opened before; without
#                              it, it is said to be left
#   attach-now-marked          --now marks the connection it sets: the
#                              program's own setsockopt(TCP_NODELAY, 0) after
#                              reads 1, its split rounds stay fast; one on
#                              already marked too, a listener not
#   attach-now-mark-fails      --now's marks refused (a shim's EOPNOTSUPP):
#                              said once, both sockets set, status 1
#   attach-now-undo-kept       fix --undo of a socket --now marked: kept on
#                              (said, status 1, the record kept); after
#                              detach undone
#   attach-now-undo-partial    fix --undo of a process with a marked socket
#                              and an unmarked one: the latter undone, the
#                              record left listing only the former
#   attach-now-peerless-unmarked  a socket --now set before it connected: not
#                              marked, so a pass rule's peer leaves it to
#                              its own setsockopt
#   attach-legacy-client       tests/programs/legacy_client.py, which turns TCP_NODELAY
#                              off after connect: fast
#   attach-pid                 --pid: a process's cgroup; the root's refused
#   attach-host                --host, in a host of the suite's own (a cgroup
#                              namespace and a network namespace): both programs
#                              on its root cgroup and quickack on its routes;
#                              detach --host takes both back
#   attach-host-no-target-routes  attach -m quickack with no target: 125, the
#                              host's routes unchanged
#   attach-host-netns-refused  --host beside --netns: 125 (attach, detach)
#   attach-error-*             each failure one line, its status, nothing left
#   attach-detach-stalls       after detach, new connections stall again;
#                              bpftool shows nothing of naglefix's (programs,
#                              maps)
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
for tool in bpftool clang nsenter ip python3 go; do
	command -v "$tool" >/dev/null || { fail attach "no $tool: run tests/install-deps.sh"; finish; exit; }
done
ROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [[ -z $ROOT ]]; then
	skip attach "no cgroup2 mounted here"
	finish
	exit
fi

scratch_dir naglefix-attach
# the undo records of attach --now's and watch --fix's fixes and attach's
# route records (route.sh): the suite's own, never /run/naglefix
export NAGLEFIX_STATE_DIR=$TMP/state
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
		bpftool cgroup detach "$CG" setsockopt pinned "$BPFFS/other_opt" 2>/dev/null
		bpftool cgroup detach "$CG/child" setsockopt pinned "$BPFFS/other_opt" 2>/dev/null
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

# capturing NETNS: true if a packet socket in the named network namespace
# is bound to a protocol: watch's capture there is open (nothing else of
# the suite captures).
capturing() {
	nsenter --net="/run/netns/$1" awk 'NR > 1 && $4 != "0000" { f = 1 } END { exit !f }' /proc/net/packet
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

# fast NAME LINE: passes if the client's line says median < 5 ms and p99
# < 30 ms: fewer than 1% of the rounds as long as a stall (a loaded
# machine's hiccups reach 4-6 ms at p99 over 1000 rounds; a socket
# Nagle holds makes every round 40 ms).
fast() {
	local med p99
	med=$(field median_ms "$2") p99=$(field p99_ms "$2")
	if [[ -n $med ]] && below "$med" 5 && below "$p99" 30; then
		pass "$1: median $med ms, p99 $p99 ms over $ROUNDS rounds"
	else
		fail "$1" "want median < 5 ms and p99 < 30 ms: ${2:-no output}"
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

# ours DIR: the ids of naglefix's sock_ops programs bpftool lists on DIR;
# ours_opt DIR: its setsockopt programs'; ours_any DIR: both.
ours() { bpftool cgroup show "$1" 2>/dev/null | awk '$2 == "cgroup_sock_ops" && $NF == "naglefix" { print $1 }'; }
ours_opt() { bpftool cgroup show "$1" 2>/dev/null | awk '$2 == "cgroup_setsockopt" && $NF == "naglefix" { print $1 }'; }
ours_any() { bpftool cgroup show "$1" 2>/dev/null | awk '$NF == "naglefix" { print $1 }'; }

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

for c in asm-offsets verifier-log state-readback rules-limit probe-nodelay probe-refused \
	sockopt-load sockopt-offsets sockopt-hook; do
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
# the Go client, built offline (its caches under build/), CGO_ENABLED=0:
# a static binary no preloaded library can enter
GO=$W/split_client_go
# (in the background, seconds of CPU with an empty cache: go_built waits
# for it before the first Go run)
CGO_ENABLED=0 GO111MODULE=off GOPROXY=off GOFLAGS='' GOCACHE="$W/go-cache" GOPATH="$W/go-path" \
	go build -o "$GO" "$HERE/split_client.go" 2>"$TMP/go.err" 8>&- &
GO_BUILD=$!
go_built() {
	[[ -n $GO_BUILD ]] || return 0
	wait "$GO_BUILD" || fail "build split_client.go (go build)" "status $?" "$TMP/go.err"
	GO_BUILD=""
}
cc -std=gnu11 -Wall -Wextra -Werror -O2 -o "$W/sockopt_diff" "$HERE/sockopt_diff.c" ||
	fail "build sockopt_diff"
cc -std=gnu11 -Wall -Wextra -Werror -O2 -shared -fPIC -o "$W/fail_sockopt.so" "$HERE/fail_sockopt.c" -ldl ||
	fail "build fail_sockopt.so"

# A long-lived client outside the cgroup, connected before the attach:
# its sockets and the servers' are listed before and after.
python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("PORT 0", flush=True)
sys.stdin.read()' "$PORT_echo" >"$TMP/held.out" 2>&1 <"$TMP/hold" 8>&- &
PIDS+=($!)
HELD=$!
wait_until 5 grep -q '^PORT' "$TMP/held.out"
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

# no -c, no -m, no file (NAGLEFIX_CONF=none): nodelay for every connection
NAGLEFIX_CONF=none "$NF" attach --cgroup "$CG" >"$TMP/attach.out" 2>"$TMP/attach.err"
rc=$?
if selected attach-bpftool-shows; then
	line=$(bpftool cgroup show "$CG" | awk '$2 == "cgroup_sock_ops" && $3 == "multi" && $NF == "naglefix"')
	line2=$(bpftool cgroup show "$CG" | awk '$2 == "cgroup_setsockopt" && $3 == "multi" && $NF == "naglefix"')
	if [[ $rc -eq 0 && -n $line && -n $line2 ]] && grep -q "no policy file, 0 nodelay rules of 0, default nodelay" "$TMP/attach.out"; then
		pass "attach-bpftool-shows: $line | $line2"
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
	# (each holds its connection until $TMP/held.go is there)
	hold='import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)'
	rm -f "$TMP/held.go"
	in_cg_bg "$CG" python3 -c "$hold" "$PORT_echo2" "$TMP/held.go" >"$TMP/held1.out"
	python3 -c "$hold" "$PORT_echo2" "$TMP/held.go" >"$TMP/held2.out" 8>&- &
	out=$!
	# both connected, and echo2 has accepted both (its ends listed below)
	held_both() { grep -qs connected "$TMP/held1.out" && grep -qs connected "$TMP/held2.out" &&
		(($("$W/nodelay_of" "$PID_echo2" 2>/dev/null | awk '$4 == 0' | wc -l) >= 2)); }
	wait_until 10 held_both
	sockets_of >"$TMP/sockets.after"
	touch "$TMP/held.go"
	wait "$BG" "$out"
	changed=$(join -j1 <(awk '{ print $1 "/" $3, $4 }' "$TMP/sockets.before") \
		<(awk '{ print $1 "/" $3, $4 }' "$TMP/sockets.after") | awk '$2 != $3')
	new_on=$(comm -13 <(cut -d' ' -f1,3 "$TMP/sockets.before" | sort) <(cut -d' ' -f1,3 "$TMP/sockets.after" | sort) |
		while read -r p ino; do awk -v p="$p" -v i="$ino" '$1 == p && $3 == i && $4 == 1' "$TMP/sockets.after"; done)
	n_before=$(wc -l <"$TMP/sockets.before") n_new=$(($(wc -l <"$TMP/sockets.after") - n_before))
	if [[ -z $changed && -z $new_on && $n_before -ge 4 ]]; then
		pass "attach-outside-unchanged: $n_before sockets unchanged, $n_new new ones (the server's end of the cgroup's connection among them) off"
	else
		fail attach-outside-unchanged "changed: ${changed:-none}; new with TCP_NODELAY: ${new_on:-none}; $n_before listed before"
	fi
fi

# ---- programs that turn TCP_NODELAY off themselves after connecting -----

# off NAME LINE: fast (fast above), and the program read TCP_NODELAY 1
# back after its own setsockopt(TCP_NODELAY, 0).
off() {
	if [[ $2 == *nodelay=1 ]]; then
		fast "$1" "$2"
	else
		fail "$1" "want nodelay=1 after the program's own setsockopt(0): ${2:-no output}"
	fi
}
selected attach-off-static &&
	off attach-off-static "$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" $ROUNDS off)"
selected attach-off-python &&
	off attach-off-python "$(in_cg "$CG" python3 "$PY" 127.0.0.1 "$PORT_echo" $ROUNDS off)"
go_built
selected attach-off-go &&
	off attach-off-go "$(in_cg "$CG" "$GO" 127.0.0.1 "$PORT_echo" $ROUNDS)"
if selected attach-off-outside-stalls; then
	a=$("$STATIC" 127.0.0.1 "$PORT_echo" 13 off)
	b=$(python3 "$PY" 127.0.0.1 "$PORT_echo" 13 off)
	c=$("$GO" 127.0.0.1 "$PORT_echo" 13)
	if ! below "$(field median_ms "$a")" 30 && ! below "$(field median_ms "$b")" 30 &&
		! below "$(field median_ms "$c")" 30; then
		pass "attach-off-outside-stalls: static $(field median_ms "$a") ms, Python $(field median_ms "$b") ms, Go $(field median_ms "$c") ms"
	else
		fail attach-off-outside-stalls "want medians >= 30 ms: static: $a; Python: $b; Go: $c"
	fi
fi
if selected attach-off-per-destination; then
	printf 'connect 127.0.0.1:%s nodelay\ndefault pass\n' "$PORT_echo" >"$TMP/off.conf"
	"$NF" attach -c "$TMP/off.conf" --cgroup "$CG" >"$TMP/off.out" 2>&1
	rc=$?
	res=""
	ok=$rc
	for prog in "$STATIC" "python3 $PY" "$GO"; do
		# shellcheck disable=SC2086 # the program and its interpreter
		set -- $prog
		x=(off)
		[[ $1 == "$GO" ]] && x=() # the Go client turns it off always
		a=$(in_cg "$CG" "$@" 127.0.0.1 "$PORT_echo" 13 "${x[@]}")
		b=$(in_cg "$CG" "$@" 127.0.0.1 "$PORT_echo2" 13 "${x[@]}")
		below "$(field median_ms "$a")" 5 && ! below "$(field median_ms "$b")" 30 || ok=1
		res+="${1##*/}: $(field median_ms "$a") / $(field median_ms "$b") ms; "
	done
	if [[ $ok -eq 0 ]]; then
		pass "attach-off-per-destination: the rule's server / another (the program's own choice): $res"
	else
		fail attach-off-per-destination "status $rc; $res" "$TMP/off.out"
	fi
	"$NF" attach -m nodelay --cgroup "$CG" >/dev/null 2>&1
fi

# ---- a program's own options and errors, in the cgroup and outside -------

if selected attach-options-same; then
	in_cg "$CG" "$W/sockopt_diff" >"$TMP/diff.in" 2>&1
	"$W/sockopt_diff" >"$TMP/diff.out" 2>&1
	differ=$(diff <(sort "$TMP/diff.in") <(sort "$TMP/diff.out") | sed -n 's/^[<>] \([^ ]*\) .*/\1/p' | sort -u)
	rules=$(awk '$1 ~ /rule-/ { print $1 }' "$TMP/diff.out" | sort -u)
	n=$(wc -l <"$TMP/diff.out")
	if [[ $n -ge 80 && $(wc -l <"$TMP/diff.in") -eq $n && -n $rules && $differ == "$rules" ]] &&
		! grep -q 'rule-.*value=0$' "$TMP/diff.in"; then
		pass "attach-options-same: $n calls (TCP connected, accepted, unconnected, listening, IPv4 and IPv6, UDP, Unix): the same in the cgroup but the $(wc -w <<<"$rules") the rule changes (value 1)"
	else
		diff "$TMP/diff.in" "$TMP/diff.out" >"$TMP/diff.diff"
		fail attach-options-same "differ: ${differ//$'\n'/ }; rule lines: ${rules//$'\n'/ }" "$TMP/diff.diff"
	fi
fi

# ---- a kernel without the setsockopt hook; the second attach failing -------

if selected attach-no-hook; then
	"$NF" detach --cgroup "$CG" >/dev/null # its programs would run below it too
	mkdir -p "$CG/nohook"
	NF_FAIL_SOCKOPT=load LD_PRELOAD="$W/fail_sockopt.so" "$NF" attach -m nodelay --cgroup "$CG/nohook" \
		>"$TMP/nohook.out" 2>"$TMP/nohook.err"
	rc=$?
	line=$(in_cg "$CG/nohook" "$STATIC" 127.0.0.1 "$PORT_echo" 13 off)
	plain=$(in_cg "$CG/nohook" "$STATIC" 127.0.0.1 "$PORT_echo" 13)
	if [[ $rc -eq 0 && -n $(ours "$CG/nohook") && -z $(ours_opt "$CG/nohook") ]] &&
		below "$(field median_ms "$plain")" 5 && ! below "$(field median_ms "$line")" 30; then
		one_line "attach-no-hook: sock_ops alone (a client $(field median_ms "$plain") ms; one that turns it off $(field median_ms "$line") ms)" \
			0 0 "$TMP/nohook.err" "has no cgroup setsockopt hook (Linux 5.3 and later have it)"
	else
		fail attach-no-hook "status $rc, sock_ops '$(ours "$CG/nohook")', setsockopt '$(ours_opt "$CG/nohook")'; $plain; $line" "$TMP/nohook.err"
	fi
	"$NF" detach --cgroup "$CG/nohook" >/dev/null 2>&1
	rmdir "$CG/nohook"
	"$NF" attach -m nodelay --cgroup "$CG" >/dev/null 2>&1
fi
if selected attach-undo; then
	mkdir -p "$CG/undo" "$CG/undo2"
	"$NF" attach -m nodelay --cgroup "$CG/undo" >/dev/null 2>&1
	before=$(ours_any "$CG/undo" | tr '\n' ' ')
	NF_FAIL_SOCKOPT=attach LD_PRELOAD="$W/fail_sockopt.so" "$NF" attach -m nodelay --cgroup "$CG/undo" \
		>"$TMP/undo.out" 2>"$TMP/undo.err"
	rc=$?
	after=$(ours_any "$CG/undo" | tr '\n' ' ')
	NF_FAIL_SOCKOPT=attach LD_PRELOAD="$W/fail_sockopt.so" "$NF" attach -m nodelay --cgroup "$CG/undo2" \
		>>"$TMP/undo.out" 2>>"$TMP/undo.err"
	rc2=$?
	if [[ $rc -ne 0 && $rc2 -ne 0 && $(wc -w <<<"$before") -eq 2 && $after == "$before" &&
		-z $(ours_any "$CG/undo2") && $(wc -l <"$TMP/undo.err") -eq 2 &&
		$(grep -c "setsockopt program (its sock_ops program undone: nothing changed)" "$TMP/undo.err") -eq 2 ]]; then
		pass "attach-undo: the setsockopt attach refused: naglefix's earlier pair ($before) kept in place, and on a bare cgroup nothing left (status $rc, $rc2)"
	else
		fail attach-undo "before '$before', after '$after', bare: '$(ours_any "$CG/undo2")'; status $rc, $rc2" "$TMP/undo.err"
	fi
	"$NF" detach --cgroup "$CG/undo" >/dev/null 2>&1
	rmdir "$CG/undo" "$CG/undo2"
fi

if selected attach-marks-kept; then
	"$NF" attach -m nodelay --cgroup "$CG" >/dev/null 2>&1
	old=$(ours_any "$CG" | tr '\n' ' ')
	mkfifo "$TMP/go"
	in_cg_bg "$CG" python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)
open(sys.argv[2]).read()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
print("after", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)' "$PORT_echo" "$TMP/go" >"$TMP/marks.out" 2>&1
	wait_until 5 grep -q '^connected' "$TMP/marks.out"
	"$NF" attach -m nodelay --cgroup "$CG" >"$TMP/marks.attach" 2>&1
	new=$(ours_any "$CG" | tr '\n' ' ')
	echo go >"$TMP/go"
	wait "$BG"
	if grep -q '^connected 1$' "$TMP/marks.out" && grep -q '^after 1$' "$TMP/marks.out" &&
		[[ $(wc -w <<<"$new") -eq 2 && $new != "$old" ]]; then
		pass "attach-marks-kept: programs $old-> $new; a connection made before: its setsockopt(TCP_NODELAY, 0) after reads 1"
	else
		cat "$TMP/marks.attach" >>"$TMP/marks.out"
		fail attach-marks-kept "programs '$old' -> '$new'" "$TMP/marks.out"
	fi
fi

# ---- quickack rules on a namespace's routes --------------------------------

# shellcheck source-path=SCRIPTDIR source=route.sh
. "$HERE/route.sh"

# ---- another tool's program on the cgroup -------------------------------

mkdir -p "$BPFFS" && mount -t bpf bpf "$BPFFS" &&
	clang -O2 -target bpf -c "$HERE/other_tool.c" -o "$W/other_tool.o" &&
	bpftool prog load "$W/other_tool.o" "$BPFFS/other" type sockops || fail "load other_tool.o with bpftool"
clang -O2 -target bpf -c "$HERE/other_sockopt.c" -o "$W/other_sockopt.o" &&
	bpftool prog load "$W/other_sockopt.o" "$BPFFS/other_opt" || fail "load other_sockopt.o with bpftool"
other_line() { bpftool cgroup show "$1" | awk '$NF == "other_tool" || $NF == "other_sockopt" { print $1, $2, $3 }' | tr '\n' ' '; }
other_tag() { bpftool prog show pinned "$BPFFS/other" | sed -n 's/.* tag \([0-9a-f]*\).*/\1/p'; }
OTHER_TAG=$(other_tag)

if any_selected attach-other-tool-kept attach-replace-no-gap attach-list; then
	bpftool cgroup attach "$CG" sock_ops pinned "$BPFFS/other" multi
	bpftool cgroup attach "$CG" setsockopt pinned "$BPFFS/other_opt" multi
	other_before=$(other_line "$CG")
	first=$(ours "$CG")
	printf 'connect 127.0.0.1:%s nodelay\nconnect 127.0.0.0/8 coalesce\ndefault pass\n' "$PORT_echo" >"$TMP/dest.conf"
	# a stream of new connections from the cgroup while attach runs again
	# (until $TMP/stream.stop is there; its first connection said)
	rm -f "$TMP/stream.stop"
	in_cg_bg "$CG" python3 -c '
import os, socket, sys
port, off, n = int(sys.argv[1]), 0, 0
while not os.path.exists(sys.argv[2]):
    s = socket.create_connection(("127.0.0.1", port))
    n += 1
    off += s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    s.close()
    if n == 1:
        print("streaming", flush=True)
print("conns=%d off=%d" % (n, off))' "$PORT_echo" "$TMP/stream.stop" >"$TMP/stream.out"
	wait_until 10 grep -q '^streaming' "$TMP/stream.out"
	for i in 1 2 3 4 5; do
		"$NF" attach -m nodelay --cgroup "$CG" >"$TMP/again.out" 2>&1 || fail attach-replace-no-gap "attach again: status $?" "$TMP/again.out"
	done
	"$NF" attach -c "$TMP/dest.conf" --cgroup "$CG" >"$TMP/again.out" 2>"$TMP/again.err"
	touch "$TMP/stream.stop"
	wait "$BG"
	now=$(ours "$CG")
	stream=$(sed -n '/^conns=/p' "$TMP/stream.out")
	order=$(bpftool cgroup show "$CG" | awk 'NR > 1 && $2 == "cgroup_sock_ops" { print $NF }' | tr '\n' ' ')
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
		if [[ $(wc -w <<<"$other_before") -eq 6 && $other_after == "$other_before" && $(other_tag) == "$OTHER_TAG" ]] &&
			grep -q "beside it, left as it is: sock_ops program [0-9]* 'other_tool' (multi)" "$TMP/again.out" &&
			grep -q "beside it, left as it is: setsockopt program [0-9]* 'other_sockopt' (multi)" "$TMP/again.out"; then
			pass "attach-other-tool-kept: programs $other_before, tag $OTHER_TAG, after attach"
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
			grep -q "program [0-9]* 'other_tool' (multi): another tool's" "$TMP/list.out" &&
			grep -q "setsockopt program $(ours_opt "$CG") 'naglefix' (multi): naglefix's" "$TMP/list.out" &&
			grep -q "setsockopt program [0-9]* 'other_sockopt' (multi): another tool's" "$TMP/list.out"; then
			pass "attach-list: $(grep -c . "$TMP/list.out") lines, the cgroup with its rules, both programs of naglefix's and the other tool's two"
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
	# every answer under 30 ms (none as long as a stall; a loaded
	# machine's hiccup reached 8 ms in 12 rounds), the median under 5
	if ! below "$(field median_ms "$bare")" 30 && below "$(field median_ms "$fixed")" 5 &&
		below "$(field max_ms "$fixed")" 30; then
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
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1 # its rules would apply below it too
	mkdir -p "$CG/watched" "$CG/passed"
	start wecho nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/echo_server.py" 127.0.0.1 600
	# a pass rule has nothing to attach: its program goes with a nodelay rule for another port
	printf 'connect 127.0.0.1:%s pass\nconnect 127.0.0.1:1 nodelay\n' "$PORT_wecho" >"$TMP/pass.conf"
	"$NF" attach -c "$TMP/pass.conf" --cgroup "$CG/passed" >/dev/null 2>&1
	timeout 30 "$NF" watch --netns "$WNS" --fix --attach -t 25 >"$TMP/watch.out" 2>&1 &
	wpid=$!
	wait_until 10 capturing "$WNS"
	run_ns() { nsenter --net="/run/netns/$WNS" "$@"; }
	in_cg "$CG/watched" nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_wecho" 20 >"$TMP/w1.out" 2>&1
	run_ns python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_wecho" 20 >"$TMP/w2.out" 2>&1
	in_cg "$CG/passed" nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_wecho" 20 >"$TMP/w3.out" 2>&1
	new=$(in_cg "$CG/watched" nsenter --net="/run/netns/$WNS" python3 "$PY" 127.0.0.1 "$PORT_wecho" $ROUNDS)
	w1=$(sed -n 's/^pid //p' "$TMP/w1.out") w2=$(sed -n 's/^pid //p' "$TMP/w2.out") w3=$(sed -n 's/^pid //p' "$TMP/w3.out")
	wait_until 9 grep -q "fix: pid $w3 " "$TMP/watch.out" # the last client's line, then watch may end
	kill -INT "$wpid" # (timeout passes it on)
	wait "$wpid"
	root_cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
	if grep -q "fix: pid $w1 socket .*attach: $CG/watched ([^)]*): program [0-9]*, connect 127.0.0.1:$PORT_wecho nodelay" "$TMP/watch.out" &&
		{ [[ $root_cg != / ]] || grep -q "fix: pid $w2 socket fd [0-9]* TCP_NODELAY 0 -> 1.*attach: not attached (its cgroup is the root" "$TMP/watch.out"; } &&
		grep -q "fix: pid $w3 socket .*attach: $CG/passed ([^)]*): left, .*pass.conf:1 says pass" "$TMP/watch.out" &&
		below "$(field median_ms "$new")" 5 && below "$(field p99_ms "$new")" 30 && [[ $new == *nodelay=1 ]]; then
		pass "attach-watch-fix: the holder's rule attached to its cgroup, a new client there $(field median_ms "$new") ms (p99 $(field p99_ms "$new")) from round 1; the root's holder: its socket only; a pass rule's: left"
	else
		echo "new client: $new; pids $w1 $w2 $w3" >>"$TMP/watch.out"
		fail attach-watch-fix "see watch's lines" "$TMP/watch.out"
	fi
	"$NF" detach --cgroup "$CG/watched" >/dev/null 2>&1
	"$NF" detach --cgroup "$CG/passed" >/dev/null 2>&1
	ip netns del "$WNS"
fi

# The holder's connection itself, established before the rule: marked
# when watch fixed it, so its program turning TCP_NODELAY off after is
# held off as on a connection the sock_ops program set.
if selected attach-watch-fix-marked; then
	WNS=naglefix-watch.$$
	ip netns add "$WNS" && ip -n "$WNS" link set lo up
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1 # its rules would apply below it too
	mkdir -p "$CG/wmark"
	start wmecho nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/echo_server.py" 127.0.0.1 600
	timeout 30 "$NF" watch --netns "$WNS" --fix --attach -t 25 >"$TMP/wmark.watch" 2>&1 &
	wpid=$!
	wait_until 10 capturing "$WNS"
	in_cg_bg "$CG/wmark" nsenter --net="/run/netns/$WNS" python3 "$TOP/tests/fix/fix_client.py" \
		127.0.0.1 "$PORT_wmecho" 100000 --off-when "$TMP/wmark.off" >"$TMP/wmark.out" 2>&1
	cpid=$BG
	wait_until 5 grep -q '^pid ' "$TMP/wmark.out"
	wp=$(sed -n 's/^pid //p' "$TMP/wmark.out")
	wait_until 10 grep -q "fix: pid $wp " "$TMP/wmark.watch"
	touch "$TMP/wmark.off"
	wait_until 10 grep -q '^nodelay_read' "$TMP/wmark.out"
	off=$(sed -n 's/^nodelay_off //p' "$TMP/wmark.out")
	wmark_rounds() { grep -q "^round $1 " "$TMP/wmark.out"; }
	wait_until 10 wmark_rounds $((${off:-0} + 30))
	kill "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	kill -INT "$wpid"
	wait "$wpid"
	med=$(awk -v r="${off:-0}" '$1 == "round" && $2 >= r && $2 < r + 30 { print $3 }' "$TMP/wmark.out" |
		sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
	read_back=$(sed -n 's/^nodelay_read //p' "$TMP/wmark.out")
	if grep -q "fix: pid $wp socket fd [0-9]* TCP_NODELAY 0 -> 1; undo: naglefix detach --cgroup $CG/wmark, then naglefix fix --undo $wp; attach: $CG/wmark ([^)]*): program [0-9]*, .*; socket marked$" "$TMP/wmark.watch" &&
		[[ $read_back == 1 ]] && below "$med" 5; then
		pass "attach-watch-fix-marked: the holder's socket fixed and marked; its own setsockopt(TCP_NODELAY, 0) after reads 1, its rounds $med ms (median of 30)"
	else
		{ cat "$TMP/wmark.watch"; grep -v '^round' "$TMP/wmark.out"; } >"$TMP/wmark.log"
		fail attach-watch-fix-marked "read back '${read_back:-?}', median ${med:-?} ms after its own setsockopt(0)" "$TMP/wmark.log"
	fi
	"$NF" detach --cgroup "$CG/wmark" >/dev/null 2>&1
	rmdir "$CG/wmark" 2>/dev/null
	ip netns del "$WNS"
fi

# ---- connections opened before the attach --------------------------------

if selected attach-now; then
	"$NF" detach --cgroup "$CG" >/dev/null
	mkdir -p "$CG/now"
	# fix_client.py prints each round; connected now, before any attach
	in_cg_bg "$CG/now" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_echo" 100000 >"$TMP/now.out" 2>&1
	nowpid=$BG
	wait_until 10 grep -q '^round' "$TMP/now.out" # connected, its rounds going
	# now_rounds N: the client has printed N rounds or more
	now_rounds() { (($(grep -c '^round' "$TMP/now.out") >= $1)); }
	"$NF" attach -m nodelay --cgroup "$CG/now" >"$TMP/now1.out" 2>&1
	wait_until 10 now_rounds $(($(grep -c '^round' "$TMP/now.out") + 2))
	r1=$(grep -c '^round' "$TMP/now.out")
	wait_until 10 now_rounds $((r1 + 10)) # the rounds after it measured
	left=$(awk -v r="$r1" '$1 == "round" && $2 >= r { n++; s += $3 } END { if (n) printf "%.1f", s / n }' "$TMP/now.out")
	"$NF" attach --now -m nodelay --cgroup "$CG/now" >"$TMP/now2.out" 2>&1
	rc=$?
	r2=$(grep -c '^round' "$TMP/now.out")
	wait_until 10 now_rounds $((r2 + 2 + 50))
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

# A connection opened before the attach, set by --now, then turned off
# by its own program: the setsockopt program keeps it on only if --now
# marked it (the sock_ops program never saw it established).
if selected attach-now-marked; then
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1
	mkdir -p "$CG/nowmark"
	# a listener of the cgroup: set, never marked (the sock_ops program
	# marks what it accepts, at establishment)
	start nowlisten --cg "$CG/nowmark" python3 -c '
import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
print("PORT", l.getsockname()[1], flush=True); sys.stdin.read()'
	# --own-nodelay: a second connection its program set TCP_NODELAY 1 on itself
	in_cg_bg "$CG/nowmark" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_echo" 100000 \
		--own-nodelay --off-when "$TMP/nowmark.off" >"$TMP/nowmark.out" 2>&1
	markpid=$BG
	wait_until 10 grep -q '^round' "$TMP/nowmark.out"
	own=$(sed -n 's/^own_nodelay_port //p' "$TMP/nowmark.out")
	# mark_rounds N: the client has printed round N
	mark_rounds() { grep -q "^round $1 " "$TMP/nowmark.out"; }
	"$NF" attach --now -m nodelay --cgroup "$CG/nowmark" >"$TMP/nowmark.attach" 2>&1
	rc=$?
	touch "$TMP/nowmark.off"
	wait_until 10 grep -q '^own_nodelay_read' "$TMP/nowmark.out"
	off=$(sed -n 's/^nodelay_off //p' "$TMP/nowmark.out")
	wait_until 10 mark_rounds $((${off:-0} + 30))
	kill "$markpid" "$PID_nowlisten" 2>/dev/null
	wait "$markpid" "$PID_nowlisten" 2>/dev/null
	# the median of the 30 rounds from the one the program turned it off at
	med=$(awk -v r="${off:-0}" '$1 == "round" && $2 >= r && $2 < r + 30 { print $3 }' "$TMP/nowmark.out" |
		sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
	read_back=$(sed -n 's/^nodelay_read //p' "$TMP/nowmark.out")
	own_back=$(sed -n 's/^own_nodelay_read //p' "$TMP/nowmark.out")
	if [[ $rc -eq 0 && $read_back == 1 && $own_back == 1 ]] && below "$med" 5 &&
		grep -q ' 0 -> 1 .* set (nodelay, -m nodelay), marked$' "$TMP/nowmark.attach" &&
		grep -q "127.0.0.1:$own .* 1 -> 1 .* already on (nodelay, -m nodelay), marked$" "$TMP/nowmark.attach" &&
		grep -q " listen .*127.0.0.1:$PORT_nowlisten .* set (nodelay, -m nodelay)$" "$TMP/nowmark.attach"; then
		pass "attach-now-marked: set and marked by --now; the program's own setsockopt(TCP_NODELAY, 0) after reads 1, its rounds $med ms (median of 30); its connection on already: marked, reads 1 after its own setsockopt(0) too; its listener set, not marked"
	else
		{ cat "$TMP/nowmark.attach"; grep -v '^round' "$TMP/nowmark.out"; } >"$TMP/nowmark.log"
		fail attach-now-marked "status $rc, read back '${read_back:-?}' (the one on already: '${own_back:-?}'), median ${med:-?} ms after its own setsockopt(0)" "$TMP/nowmark.log"
	fi
	"$NF" detach --cgroup "$CG/nowmark" >/dev/null 2>&1
	rmdir "$CG/nowmark" 2>/dev/null
fi
if selected attach-now-mark-fails; then
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1
	mkdir -p "$CG/markfail"
	mkfifo "$TMP/markfail.go"
	in_cg_bg "$CG/markfail" python3 -c '
import socket, sys
a = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
b = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
open(sys.argv[2]).read()
print("nodelay", *(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in (a, b)), flush=True)' \
		"$PORT_echo" "$TMP/markfail.go" >"$TMP/markfail.out" 2>&1
	wait_until 5 grep -q '^connected' "$TMP/markfail.out"
	NF_FAIL_SOCKOPT=mark LD_PRELOAD="$W/fail_sockopt.so" "$NF" attach --now -m nodelay \
		--cgroup "$CG/markfail" >"$TMP/markfail.attach" 2>"$TMP/markfail.err"
	rc=$?
	echo go >"$TMP/markfail.go"
	wait "$BG"
	said=$(grep -c "marking it for attach's setsockopt program: Operation not supported: it stays set" "$TMP/markfail.err")
	rows=$(grep -c ' 0 -> 1 .* set (nodelay, -m nodelay), not marked (Operation not supported)' "$TMP/markfail.attach")
	if [[ $rc -eq 1 && $said -eq 1 && $rows -eq 2 ]] && grep -q '^nodelay 1 1$' "$TMP/markfail.out"; then
		pass "attach-now-mark-fails: status 1, said once for 2 sockets, both set and read 1"
	else
		cat "$TMP/markfail.attach" "$TMP/markfail.err" "$TMP/markfail.out" >"$TMP/markfail.log"
		fail attach-now-mark-fails "status $rc, said $said times, $rows rows not marked" "$TMP/markfail.log"
	fi
	"$NF" detach --cgroup "$CG/markfail" >/dev/null 2>&1
	rmdir "$CG/markfail" 2>/dev/null
fi
# fix --undo of a socket --now marked: the setsockopt program turns undo's
# own setsockopt(0) into 1, so it is said kept, the record kept; after
# detach the same undo turns it off.
if selected attach-now-undo-kept; then
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1
	mkdir -p "$CG/nowundo"
	in_cg_bg "$CG/nowundo" python3 "$TOP/tests/fix/fix_client.py" 127.0.0.1 "$PORT_echo" 100000 >"$TMP/nowundo.out" 2>&1
	undopid=$BG
	wait_until 10 grep -q '^round' "$TMP/nowundo.out"
	"$NF" attach --now -m nodelay --cgroup "$CG/nowundo" >"$TMP/nowundo.attach" 2>&1
	"$NF" fix --undo "$undopid" >"$TMP/nowundo.u1" 2>&1
	rc1=$?
	[[ -e $NAGLEFIX_STATE_DIR/fix-$undopid ]] && kept=yes || kept=no
	"$NF" fix --dry-run -m nodelay "$undopid" >"$TMP/nowundo.d1" 2>&1
	"$NF" detach --cgroup "$CG/nowundo" >/dev/null 2>&1
	"$NF" fix --undo "$undopid" >"$TMP/nowundo.u2" 2>&1
	rc2=$?
	[[ -e $NAGLEFIX_STATE_DIR/fix-$undopid ]] && left=yes || left=no
	"$NF" fix --dry-run -m nodelay "$undopid" >"$TMP/nowundo.d2" 2>&1
	kill "$undopid" 2>/dev/null
	wait "$undopid" 2>/dev/null
	if grep -q ' 0 -> 1 .* set (nodelay, -m nodelay), marked$' "$TMP/nowundo.attach" &&
		[[ $rc1 -eq 1 && $kept == yes && $rc2 -eq 0 && $left == no ]] &&
		! grep -q ' undone' "$TMP/nowundo.u1" &&
		grep -q " 1 -> 1 .* skipped: kept on by naglefix's setsockopt program on its cgroup (the socket is marked): detach first" "$TMP/nowundo.u1" &&
		grep -q ' 1 -> 1 .* already on' "$TMP/nowundo.d1" &&
		grep -q ' 1 -> 0 .* undone' "$TMP/nowundo.u2" && grep -q ' 0 -> 1 .* would set' "$TMP/nowundo.d2"; then
		pass "attach-now-undo-kept: fix --undo of a socket --now marked: said kept on, status 1, the record kept, reads 1; after detach the same undo: undone, reads 0, the record gone"
	else
		cat "$TMP/nowundo.attach" "$TMP/nowundo.u1" "$TMP/nowundo.d1" "$TMP/nowundo.u2" "$TMP/nowundo.d2" >"$TMP/nowundo.log"
		fail attach-now-undo-kept "undo status $rc1 (record kept: $kept), after detach $rc2 (record left: $left)" "$TMP/nowundo.log"
	fi
	rmdir "$CG/nowundo" 2>/dev/null
fi
# fd_row FILE FD REGEX: fix's table in FILE has a row of descriptor FD
# (its third column) that matches REGEX.
fd_row() {
	awk -v fd="$2" -v re="$3" '$3 == fd && $0 ~ re { found = 1 } END { exit !found }' "$1"
}

# fix --undo of a process with a connection --now marked and a socket
# with no peer it set unmarked: the second undone, the record left
# listing only the first, which the undo after detach turns off alone.
if selected attach-now-undo-partial; then
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1
	mkdir -p "$CG/nowpart"
	mkfifo "$TMP/nowpart.go"
	in_cg_bg "$CG/nowpart" python3 -c '
import socket, sys
a = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
b = socket.socket()
print("ready", a.fileno(), b.fileno(), flush=True)
open(sys.argv[2]).read()
print("nodelay", *(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in (a, b)), flush=True)' \
		"$PORT_echo" "$TMP/nowpart.go" >"$TMP/nowpart.out" 2>&1
	partpid=$BG
	wait_until 5 grep -q '^ready' "$TMP/nowpart.out"
	read -r _ fda fdb <"$TMP/nowpart.out"
	"$NF" attach --now -m nodelay --cgroup "$CG/nowpart" >"$TMP/nowpart.attach" 2>&1
	"$NF" fix --undo "$partpid" >"$TMP/nowpart.u1" 2>&1
	rc1=$?
	recorded=$(awk '{ print $3 }' "$NAGLEFIX_STATE_DIR/fix-$partpid" 2>/dev/null | sort -u | paste -sd,)
	"$NF" detach --cgroup "$CG/nowpart" >/dev/null 2>&1
	"$NF" fix --undo "$partpid" >"$TMP/nowpart.u2" 2>&1
	rc2=$?
	echo go >"$TMP/nowpart.go"
	wait "$partpid"
	if [[ $rc1 -eq 1 && $recorded == "$fda" && $rc2 -eq 0 ]] &&
		fd_row "$TMP/nowpart.u1" "$fdb" ' 1 -> 0 +undone' &&
		fd_row "$TMP/nowpart.u1" "$fda" ' 1 -> 1 +skipped: kept on' &&
		fd_row "$TMP/nowpart.u2" "$fda" ' 1 -> 0 +undone' &&
		! fd_row "$TMP/nowpart.u2" "$fdb" '' && grep -q '^nodelay 0 0$' "$TMP/nowpart.out"; then
		pass "attach-now-undo-partial: the unmarked socket undone, the record left with the marked one alone (fd $fda), which the undo after detach turns off alone"
	else
		cat "$TMP/nowpart.attach" "$TMP/nowpart.u1" "$TMP/nowpart.u2" "$TMP/nowpart.out" >"$TMP/nowpart.log"
		fail attach-now-undo-partial "undo status $rc1, record lists fds '$recorded' (want $fda), after detach $rc2" "$TMP/nowpart.log"
	fi
	rmdir "$CG/nowpart" 2>/dev/null
fi
# A socket not connected yet when --now sets it (the rule of no peer, the
# default's) is not marked: the peer it connects to later is a pass
# rule's, and the program's own setsockopt(0) there wins.
if selected attach-now-peerless-unmarked; then
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1
	mkdir -p "$CG/nowpeerless"
	printf 'default nodelay\nconnect 127.0.0.1:%s pass\n' "$PORT_echo" >"$TMP/peerless.conf"
	mkfifo "$TMP/peerless.go"
	in_cg_bg "$CG/nowpeerless" python3 -c '
import socket, sys
s = socket.socket()
print("made", flush=True)
open(sys.argv[2]).read()
s.connect(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
print("nodelay", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)' \
		"$PORT_echo" "$TMP/peerless.go" >"$TMP/peerless.out" 2>&1
	wait_until 5 grep -q '^made' "$TMP/peerless.out"
	"$NF" attach --now -c "$TMP/peerless.conf" --cgroup "$CG/nowpeerless" >"$TMP/peerless.attach" 2>&1
	rc=$?
	echo go >"$TMP/peerless.go"
	wait "$BG"
	if [[ $rc -eq 0 ]] && grep -q ' 0 -> 1 .* set (nodelay, .*default)$' "$TMP/peerless.attach" &&
		grep -q '^nodelay 0$' "$TMP/peerless.out"; then
		pass "attach-now-peerless-unmarked: a socket not yet connected set by --now, not marked; connected to a pass rule's peer, its own setsockopt(0) reads 0"
	else
		cat "$TMP/peerless.attach" "$TMP/peerless.out" >"$TMP/peerless.log"
		fail attach-now-peerless-unmarked "status $rc; see the line and what the program read" "$TMP/peerless.log"
	fi
	"$NF" detach --cgroup "$CG/nowpeerless" >/dev/null 2>&1
	rmdir "$CG/nowpeerless" 2>/dev/null
fi

# ---- what a program sets itself, later, wins -----------------------------

if selected attach-legacy-client; then
	"$NF" attach -m nodelay --cgroup "$CG" >/dev/null 2>&1
	# tests/programs/legacy_client.py turns TCP_NODELAY off itself after connect()
	start legacy python3 "$TOP/tests/programs/legacy_server.py" 0 600
	line=$(in_cg "$CG" python3 "$TOP/tests/programs/legacy_client.py" 127.0.0.1 "$PORT_legacy" 13 split)
	med=$(field median_ms "$line")
	if [[ -n $med ]] && below "$med" 5; then
		pass "attach-legacy-client: legacy_client.py's own setsockopt(TCP_NODELAY, 0) after connect held off: median $med ms"
	else
		fail attach-legacy-client "want a median < 5 ms: ${line:-no output}"
	fi
fi

# ---- --pid ------------------------------------------------------------------

if selected attach-pid; then
	mkdir -p "$CG/bypid"
	in_cg_bg "$CG/bypid" sleep 30
	spid=$BG
	wait_until 5 grep -qx "$spid" "$CG/bypid/cgroup.procs"
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
	if [[ -z $(ours_any "$dir") && -z $(ours_any "$sub") && -z $(ls -d "$ROOT"/naglefix-probe.* 2>/dev/null) ]]; then
		one_line "$name" "$rc" 5 "$TMP/blocked.err" "program [0-9]* 'other_tool' on .* in $mode mode"
	else
		fail "$name" "naglefix's program left: $(ours "$dir") $(ours "$sub")" "$TMP/blocked.err"
	fi
	bpftool cgroup detach "$dir" sock_ops pinned "$BPFFS/other" 2>/dev/null
}
mkdir -p "$CG/child"
if selected attach-blocked-setsockopt; then
	"$NF" detach --cgroup "$CG" >/dev/null 2>&1
	bpftool cgroup detach "$CG" setsockopt pinned "$BPFFS/other_opt" 2>/dev/null
	bpftool cgroup attach "$CG" setsockopt pinned "$BPFFS/other_opt"
	"$NF" attach -m nodelay --cgroup "$CG" >"$TMP/blocked.out" 2>"$TMP/blocked.err"
	rc=$?
	if [[ -z $(ours_any "$CG") ]]; then
		one_line attach-blocked-setsockopt "$rc" 5 "$TMP/blocked.err" "setsockopt program [0-9]* 'other_sockopt' on .* in exclusive mode"
	else
		fail attach-blocked-setsockopt "naglefix's program left: $(ours_any "$CG")" "$TMP/blocked.err"
	fi
	bpftool cgroup detach "$CG" setsockopt pinned "$BPFFS/other_opt" 2>/dev/null
fi
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
	if [[ -n $(ours_any "$CG") || -n $(ls -d "$ROOT"/naglefix-probe.* 2>/dev/null) ]]; then
		fail "$name" "something left: $(ours_any "$CG") $(ls -d "$ROOT"/naglefix-probe.* 2>/dev/null)"
	else
		one_line "$name" "$rc" "$want" "$TMP/err.err" "$word"
	fi
}
"$NF" detach --cgroup "$CG" >/dev/null 2>&1
mkdir -p "$TMP/plain"
printf 'connect 127.0.0.1:7000 nodelay\nfrobnicate\n' >"$TMP/bad.conf"
printf 'connect 127.0.0.1:7000 coalesce\ndefault pass\n' >"$TMP/none.conf"
error attach-error-outside 4 "cgroup $TMP/plain: not a cgroup of the cgroup2 hierarchy ($ROOT): give a path inside it" \
	"$NF" attach -m nodelay --cgroup "$TMP/plain"
error attach-error-not-cgroup 4 "not a cgroup" "$NF" attach -m nodelay --cgroup "$CG/cgroup.procs"
error attach-error-no-target 125 "which cgroup?.*--host.*; try 'naglefix attach --help'" "$NF" attach -m nodelay
error detach-error-no-target 125 "which cgroup?.*--host.*; try 'naglefix detach --help'" "$NF" detach
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
	unshare -m sh -c "umount -l '$ROOT' && exec '$NF' attach -m nodelay --host"
error attach-error-loopback 3 "ip link set lo up" unshare -n "$NF" attach -m nodelay --cgroup "$CG"
error detach-error-no-cgroup 4 "no such cgroup" "$NF" detach --cgroup "$CG/nosuch"
# attach's and detach's --help and usage errors (tests/usage.sh)
part t_usage.sh bash "$HERE/t_usage.sh"

# ---- --host: the root cgroup and the host's routes, only when named ---------

# in_host DIR CMD...: CMD run at the top of a host of the suite's own: the
# cgroup DIR as the root of a cgroup namespace (cgroup2 mounted again
# there, so "the root cgroup" is DIR), and a network namespace of its own
# with its loopback up (so "the host's routes" are that namespace's).
# Refuses (99) unless the mount's root is DIR, and DIR is not the real root.
in_host() {
	local dir=$1
	shift
	[[ $(stat -c %i "$dir") != "$(stat -c %i "$ROOT")" ]] || return 99
	sh -c 'echo $$ >"$0/cgroup.procs" && exec unshare -C -m -n "$@"' "$dir" \
		sh -c 'mount --make-rprivate / && umount -l "$0" && mount -t cgroup2 none "$0" && ip link set lo up &&
			[ "$(stat -c %i "$0")" = "$1" ] || { echo "in_host: not the suite'"'"'s own host" >&2; exit 99; }
			shift
			exec "$@"' "$ROOT" "$(stat -c %i "$dir")" "$@"
}
# pair.py: TCP_NODELAY of a connection's two ends over loopback.
cat >"$TMP/pair.py" <<'EOF'
import socket as s
l = s.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = s.create_connection(l.getsockname()); a, _ = l.accept()
print(c.getsockopt(s.IPPROTO_TCP, s.TCP_NODELAY), a.getsockopt(s.IPPROTO_TCP, s.TCP_NODELAY))
EOF
if any_selected attach-host attach-host-no-target-routes attach-host-netns-refused; then
	mkdir -p "$CG/host"
	printf 'connect 127.0.0.1 quickack\ndefault nodelay\n' >"$TMP/host.conf"
	real_root=$(ours_any "$ROOT" | tr '\n' ' ')
	# shellcheck disable=SC2016 # expanded by the host's own shell
	NF=$NF T=$TMP R=$ROOT NAGLEFIX_STATE_DIR=$TMP/hstate in_host "$CG/host" bash -c '
		ip route show table all >"$T/host.before"
		"$NF" attach -m quickack >"$T/host.none.out" 2>"$T/host.none.err"; echo $? >"$T/host.none.rc"
		ip route show table all | cmp -s - "$T/host.before"; echo $? >"$T/host.none.same"
		"$NF" attach -m quickack --host --netns /proc/self/ns/net 2>"$T/host.ns.err"; echo $? >"$T/host.ns.rc"
		"$NF" detach --host --netns /proc/self/ns/net 2>>"$T/host.ns.err"; echo $? >>"$T/host.ns.rc"
		ip route show table all | cmp -s - "$T/host.before"; echo $? >>"$T/host.ns.rc"
		bpftool cgroup show "$R" | awk '\''$NF == "naglefix"'\'' | wc -l >>"$T/host.ns.rc"
		python3 "$T/pair.py" >"$T/host.pair"
		"$NF" attach -c "$T/host.conf" --host >"$T/host.out" 2>&1; echo $? >"$T/host.rc"
		bpftool cgroup show "$R" | awk '\''$NF == "naglefix" { print $2 }'\'' | sort | tr "\n" " " >"$T/host.progs"
		ip route show table all >"$T/host.during"
		python3 "$T/pair.py" >>"$T/host.pair"
		"$NF" detach --host >>"$T/host.out" 2>&1; echo $? >>"$T/host.rc"
		bpftool cgroup show "$R" | awk '\''$NF == "naglefix"'\'' | wc -l >>"$T/host.rc"
		ip route show table all | cmp -s - "$T/host.before"; echo $? >>"$T/host.rc"' 8>&-
	echo $? >"$TMP/host.in_host"
	if selected attach-host-no-target-routes; then
		if [[ $(cat "$TMP/host.none.same" 2>/dev/null) == 0 ]]; then
			one_line attach-host-no-target-routes "$(cat "$TMP/host.none.rc")" 125 "$TMP/host.none.err" "which cgroup?.*--netns"
		else
			fail attach-host-no-target-routes "in_host $(cat "$TMP/host.in_host"): the host's routes changed by attach -m quickack with no target" "$TMP/host.none.err"
		fi
	fi
	if selected attach-host-netns-refused; then
		if [[ $(tr '\n' ' ' <"$TMP/host.ns.rc" 2>/dev/null) == "125 125 0 0 " && $(wc -l <"$TMP/host.ns.err") -eq 2 ]] &&
			grep -q "attach: --host names the host's network namespace: no --netns beside it" "$TMP/host.ns.err" &&
			grep -q "detach: --netns goes alone or beside --cgroup or --unit" "$TMP/host.ns.err"; then
			pass "attach-host-netns-refused: --host beside --netns refused by attach and detach (125), nothing changed"
		else
			fail attach-host-netns-refused "status, detach's, routes the same (0), naglefix's programs: $(tr '\n' ' ' <"$TMP/host.ns.rc" 2>/dev/null)" "$TMP/host.ns.err"
		fi
	fi
	if selected attach-host; then
		rcs=$(tr '\n' ' ' <"$TMP/host.rc" 2>/dev/null)
		pair=$(tr '\n' ' ' <"$TMP/host.pair" 2>/dev/null)
		if [[ $rcs == "0 0 0 0 " && $(cat "$TMP/host.progs") == "cgroup_setsockopt cgroup_sock_ops " &&
			$pair == "0 0 0 1 " && $(ours_any "$ROOT" | tr '\n' ' ') == "$real_root" ]] &&
			grep -q "^local 127.0.0.1 dev lo .*quickack 1" "$TMP/host.during" &&
			grep -q "naglefix attach: $ROOT (/: the whole host): program [0-9]* attached" "$TMP/host.out" &&
			grep -q "network namespace host: route 'local 127.0.0.1 dev lo table local': quickack 1 set" "$TMP/host.out"; then
			pass "attach-host: --host in a host of the suite's own: both programs on its root cgroup (a loopback connection's ends 0 0 -> 0 1: the connecting end's rule is the quickack one, the accepted end's the default nodelay), quickack 1 on its namespace's route; detach --host: no program, the table as before; the real root's programs unchanged"
		else
			fail attach-host "in_host $(cat "$TMP/host.in_host"); attach, detach, programs left, table differs: $rcs; programs '$(cat "$TMP/host.progs" 2>/dev/null)'; nodelay '$pair'" "$TMP/host.out"
		fi
	fi
fi

# ---- detach -------------------------------------------------------------------

if any_selected attach-detach-stalls attach-other-tool-kept; then
	bpftool cgroup attach "$CG" sock_ops pinned "$BPFFS/other" multi 2>/dev/null
	bpftool cgroup attach "$CG" setsockopt pinned "$BPFFS/other_opt" multi 2>/dev/null
	"$NF" attach -m nodelay --cgroup "$CG" >/dev/null 2>&1
	ids=$(ours_any "$CG" | tr '\n' ' ')
	maps=$(for i in $ids; do bpftool prog show id "$i" | sed -n 's/.*map_ids \([0-9,]*\).*/\1/p'; done | tr ',' '\n' | sort -u | tr '\n' ' ')
	before=$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" 13)
	beside=$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" 13 off)
	other_before=$(other_line "$CG")
	"$NF" detach --cgroup "$CG" >"$TMP/detach.out" 2>&1
	rc=$?
	after=$(in_cg "$CG" "$STATIC" 127.0.0.1 "$PORT_echo" 13)
	left=$(for i in $ids; do bpftool prog show id "$i" 2>/dev/null; done; for m in $maps; do bpftool map show id "$m" 2>/dev/null; done)
	if selected attach-detach-stalls; then
		if [[ $rc -eq 0 && $(wc -w <<<"$ids") -eq 2 && $(wc -w <<<"$maps") -eq 2 && -z $(ours_any "$CG") && -z $left ]] &&
			below "$(field median_ms "$before")" 5 && ! below "$(field median_ms "$after")" 30; then
			pass "attach-detach-stalls: $(field median_ms "$before") ms attached, $(field median_ms "$after") ms after detach; bpftool: programs $ids and maps $maps gone"
		else
			fail attach-detach-stalls "status $rc, programs ${ids:-none}, maps ${maps:-none}, left: ${left:-nothing}; before: $before; after: $after" "$TMP/detach.out"
		fi
	fi
	if selected attach-other-tool-kept; then
		if [[ $(wc -w <<<"$other_before") -eq 6 && $(other_line "$CG") == "$other_before" && $(other_tag) == "$OTHER_TAG" ]] &&
			[[ $beside == *nodelay=1 ]] && below "$(field median_ms "$beside")" 5; then
			pass "attach-other-tool-kept: programs $other_before, tag $OTHER_TAG, after detach; beside them naglefix's rule held a client's own setsockopt(0) off: $(field median_ms "$beside") ms"
		else
			fail attach-other-tool-kept "after detach: '$(other_line "$CG")', before '$other_before'; beside them: $beside" "$TMP/detach.out"
		fi
	fi
	bpftool cgroup detach "$CG" sock_ops pinned "$BPFFS/other" 2>/dev/null
	bpftool cgroup detach "$CG" setsockopt pinned "$BPFFS/other_opt" 2>/dev/null
fi

finish
