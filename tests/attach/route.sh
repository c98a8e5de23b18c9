# route.sh - attach's quickack rules on a network namespace's routes,
# sourced by tests/attach/run.sh (its helpers, its teardown): everything
# happens in a network namespace this suite makes (QNS), on its loopback
# and an address of its own on it; the host's routes are never touched.
# The judges: a static split writer that nothing touches (no library, no
# cgroup program: it runs outside every attached cgroup) on ONE open
# connection to a line-echo server in QNS, its round times as they come;
# `ip route show table all` in QNS, before and after. The records are in
# run.sh's NAGLEFIX_STATE_DIR, the suite's own.
#
#   attach-route-open-connection  40 ms rounds, then attach -c (a quickack
#                                 rule for 127.0.0.1) --netns: the same
#                                 connection under 1 ms from the round after;
#                                 quickack 1 on 'local 127.0.0.1' only
#   attach-route-list             --list: the namespace, the route, "as set"
#   attach-route-detach           detach --netns: the table byte for byte as
#                                 before; the connection stalls again
#   attach-route-changed-left     a route changed by someone else after
#                                 attach: said and left as they made it,
#                                 the others put back
#   attach-route-removed-said     a route removed by someone else after
#                                 attach: said, nothing written in its place
#   attach-route-ipv6             an IPv6 prefix: its route set and put back,
#                                 the address's own (metric 0) said and left
#   attach-route-accept-refused   an accept rule: refused, with why
#   attach-route-pid              -m quickack --pid: that process's namespace
#   attach-route-watch-fix        watch --fix --attach, the holder (the split
#                                 writer) in a namespace watch does not
#                                 watch, across a veth pair: the receiving
#                                 namespace's route to it gets quickack 1,
#                                 said; the open connection under 1 ms;
#                                 detach --netns puts the table back
#   attach-route-kernel-state     what the kernel keeps of its own: an IPv4
#                                 multipath route with a nexthop's link down
#                                 set (its flags are the kernel's, not
#                                 written back) and put back byte for byte
#                                 after the link came up; an IPv6 route
#                                 learned from a router advertisement, and
#                                 one that expires: said and left, their
#                                 expiry kept (a replace makes it permanent)
#   attach-route-appended-left    two routes of one entry (ip route append),
#                                 the lookup's answer the second (the first's
#                                 link down, ignored): said and left, the
#                                 table unchanged (a replace would have
#                                 written it over the first)
#   attach-route-too-big-said     a route bigger than naglefix keeps (49
#                                 nexthops): said on stderr, status 1, the
#                                 table unchanged (it read as no route at all)
#   attach-route-record-safe      the record: a symbolic link planted where
#                                 its new file is made is not written
#                                 through; the record is 0600; two attaches
#                                 at once on one namespace both recorded,
#                                 detach puts back every route of both
#   attach-route-inode-reused     a record left by a namespace gone, at the
#                                 inode a new one reuses (the record moved
#                                 there, as the kernel would reuse it):
#                                 detach says it and drops it, and leaves
#                                 the new namespace's route, quickack 1 set
#                                 by someone else, as it is
#   attach-route-no-target        -m quickack with no target: a usage error
#                                 (125), no route changed: the host's routes
#                                 only when asked (run in a namespace made
#                                 for it, so a failure changes only that)
#   attach-route-pid-own          --pid of a process in attach's own namespace:
#                                 refused, nothing changed, its cgroup's
#                                 program neither (a policy of nodelay and
#                                 quickack rules; run in a namespace made for
#                                 it, so a failure changes only that)

QNS=naglefix-route.$$
in_qns() { nsenter --net="/run/netns/$QNS" "$@"; }
table_all() { ip -n "$QNS" route show table all; }

# rounds_from FILE FIRST [LAST]: the median of the client's round times
# FIRST..LAST (0-based), and how many of them were 30 ms or more.
rounds_from() {
	awk -v a="$2" -v b="${3:-999999999}" '$1 == "round" && $2 >= a && $2 <= b { print $3 }' "$1" | sort -n |
		awk '{ v[n++] = $1; s += $1 >= 30 } END { if (n) printf "median=%.3f stalls=%d n=%d\n", v[int((n - 1) / 2)], s, n }'
}
# has_route6 PREFIX: true if QNS has a route to the IPv6 PREFIX.
has_route6() { [[ -n $(ip -n "$QNS" -6 route show "$1") ]]; }
# rounds_done FILE: how many rounds the client has finished.
rounds_done() { grep -c '^round' "$1"; }
# wait_rounds FILE N: until the client has finished N rounds (20 s at most).
wait_rounds() { wait_until 20 rounds_reached "$1" "$2"; }
# rounds_reached FILE N: true if the client has finished N rounds.
rounds_reached() { (($(rounds_done "$1") >= $2)); }
# carrier NS DEV...: true once each DEV of NS has its carrier.
carrier() {
	local ns=$1 d
	shift
	for d in "$@"; do
		ip -n "$ns" link show dev "$d" | grep -q LOWER_UP || return 1
	done
}
# link_local NS DEV...: true once each DEV of NS has its IPv6 link-local
# address, out of its tentative state (the kernel adds the address's
# route when it leaves it).
link_local() {
	local ns=$1 d
	shift
	for d in "$@"; do
		ip -n "$ns" -6 addr show dev "$d" scope link | grep -q 'inet6 fe80' || return 1
		! ip -n "$ns" -6 addr show dev "$d" | grep -q tentative || return 1
	done
}
# table_settled NS FILE: true if NS's routes (`ip route show table all`,
# those that expire left out: their time left moves) are what FILE holds
# byte for byte; else writes them there. Under wait_until: the table once
# two snapshots in a row match.
table_settled() {
	ip -n "$1" route show table all | grep -v expires >"$2.now"
	cmp -s "$2.now" "$2" && rm -f "$2.now" && return 0
	mv "$2.now" "$2"
	return 1
}
# linkdown NS PREFIX: true if NS's route to PREFIX has a nexthop flagged
# linkdown (its device's carrier is off).
linkdown() { ip -n "$1" route show "$2" | grep -q linkdown; }
linkup() { ! linkdown "$@"; }

if any_selected attach-route-open-connection attach-route-list attach-route-detach \
	attach-route-changed-left attach-route-removed-said attach-route-ipv6 attach-route-accept-refused \
	attach-route-pid; then
	ip netns add "$QNS" && ip -n "$QNS" link set lo up
	table_all >"$TMP/route.before"
	# nsenter execs the server: its PID is the server's, in QNS (a shell
	# function here would be a subshell of the host's namespace)
	start qecho nsenter --net="/run/netns/$QNS" python3 "$TOP/tests/fix/echo_server.py" 127.0.0.1 600
	printf 'connect 127.0.0.1 quickack\ndefault pass\n' >"$TMP/qa.conf"
	in_qns "$STATIC" 127.0.0.1 "$PORT_qecho" 1000000 each >"$TMP/qrounds.out" 2>&1 8>&- &
	QCLIENT=$!
	PIDS+=("$QCLIENT")
	wait_rounds "$TMP/qrounds.out" 8
	n0=$(rounds_done "$TMP/qrounds.out")
	"$NF" attach -c "$TMP/qa.conf" --netns "$QNS" >"$TMP/qattach.out" 2>&1
	qrc=$?
	n1=$(rounds_done "$TMP/qrounds.out")
	wait_rounds "$TMP/qrounds.out" $((n1 + 200))
	table_all >"$TMP/route.attached"
	before=$(rounds_from "$TMP/qrounds.out" 1 $((n0 - 1)))
	after=$(rounds_from "$TMP/qrounds.out" $((n1 + 1)) $((n1 + 200)))
	if selected attach-route-open-connection; then
		if [[ $qrc -eq 0 && -n $before ]] && ! below "$(field median "$before")" 30 && below "$(field median "$after")" 1 &&
			[[ $(field stalls "$after") == 0 && $(field n "$after") -ge 100 ]] &&
			grep -q "^local 127.0.0.1 dev lo table local .*quickack 1" "$TMP/route.attached" &&
			[[ $(grep -c quickack "$TMP/route.attached") -eq 1 ]] &&
			grep -q "route 'local 127.0.0.1 dev lo table local': quickack 1 set" "$TMP/qattach.out"; then
			pass "attach-route-open-connection: one open connection, $(field median "$before") ms a round before attach, $(field median "$after") ms from the round after ($(field n "$after") rounds, none stalled); quickack 1 on local 127.0.0.1 alone"
		else
			{ cat "$TMP/qattach.out"; echo "table:"; cat "$TMP/route.attached"; } >"$TMP/qfail.out"
			fail attach-route-open-connection "status $qrc; before attach: $before; after: $after" "$TMP/qfail.out"
		fi
	fi
	if selected attach-route-list; then
		"$NF" attach --list >"$TMP/qlist.out" 2>&1
		rc=$?
		if [[ $rc -eq 0 ]] && grep -q "^network namespace $QNS (/run/netns/$QNS, inode [0-9]*): routes with quickack 1" "$TMP/qlist.out" &&
			grep -q "^  route 'local 127.0.0.1 dev lo table local' ($TMP/qa.conf:1): as set$" "$TMP/qlist.out"; then
			pass "attach-route-list: the namespace, its route and its rule, as set"
		else
			fail attach-route-list "status $rc" "$TMP/qlist.out"
		fi
	fi
	"$NF" detach --netns "$QNS" >"$TMP/qdetach.out" 2>&1
	qrc=$?
	n2=$(rounds_done "$TMP/qrounds.out")
	wait_rounds "$TMP/qrounds.out" $((n2 + 10))
	kill "$QCLIENT" 2>/dev/null
	again=$(rounds_from "$TMP/qrounds.out" $((n2 + 1)) $((n2 + 10)))
	if selected attach-route-detach; then
		if [[ $qrc -eq 0 ]] && table_all | cmp -s - "$TMP/route.before" &&
			grep -q "route 'local 127.0.0.1 dev lo table local': put back as it was" "$TMP/qdetach.out" &&
			[[ -n $again ]] && ! below "$(field median "$again")" 30; then
			pass "attach-route-detach: ip route show table all as before, byte for byte ($(wc -l <"$TMP/route.before") lines); the connection $(field median "$again") ms a round again"
		else
			{ cat "$TMP/qdetach.out"; table_all | diff "$TMP/route.before" -; } >"$TMP/qfail.out"
			fail attach-route-detach "status $qrc; after detach: $again" "$TMP/qfail.out"
		fi
	fi
fi

# A route someone else changes between attach and detach: said, left as
# they made it; the other routes attach set are put back.
if selected attach-route-changed-left; then
	ip -n "$QNS" addr add 10.77.0.1/24 dev lo
	table_all >"$TMP/route.before2"
	printf 'connect 10.77.0.0/24 quickack\n' >"$TMP/qa2.conf"
	"$NF" attach -c "$TMP/qa2.conf" --netns "$QNS" >"$TMP/qattach2.out" 2>&1
	rc=$?
	set=$(grep -c 'quickack 1 set (' "$TMP/qattach2.out")
	# (an address on lo: its prefix is a local route, in table local)
	ip -n "$QNS" route change local 10.77.0.0/24 dev lo table local proto kernel scope host src 10.77.0.1 quickack 1 rtt 20ms
	theirs=$(table_all | grep '^local 10.77.0.0/24 ')
	"$NF" detach --netns "$QNS" >"$TMP/qdetach2.out" 2>&1
	drc=$?
	want=$(sed "s|^local 10.77.0.0/24 dev lo .*|$theirs|" "$TMP/route.before2")
	if [[ $rc -eq 0 && $drc -eq 0 && $set -eq 2 && $theirs == *"rtt 20ms"* ]] &&
		grep -q "route 'local 10.77.0.0/24 dev lo table local': changed since naglefix set quickack 1 on it: left as it is" "$TMP/qdetach2.out" &&
		grep -q "route 'local 10.77.0.1 dev lo table local': put back as it was" "$TMP/qdetach2.out" &&
		[[ $(table_all) == "$want" ]]; then
		pass "attach-route-changed-left: 2 routes set; the one changed meanwhile said and left ('$theirs'), the other put back"
	else
		{ cat "$TMP/qattach2.out" "$TMP/qdetach2.out"; table_all | diff <(echo "$want") -; } >"$TMP/qfail.out"
		fail attach-route-changed-left "attach $rc ($set set), detach $drc" "$TMP/qfail.out"
	fi
	ip -n "$QNS" addr del 10.77.0.1/24 dev lo
fi

if selected attach-route-removed-said; then
	ip -n "$QNS" addr add 10.78.0.1/24 dev lo
	printf 'connect 10.78.0.1 quickack\n' >"$TMP/qa4.conf"
	"$NF" attach -c "$TMP/qa4.conf" --netns "$QNS" >"$TMP/qattach4.out" 2>&1
	rc=$?
	set=$(grep -c 'quickack 1 set (' "$TMP/qattach4.out")
	ip -n "$QNS" addr del 10.78.0.1/24 dev lo # its routes go with it
	"$NF" detach --netns "$QNS" >"$TMP/qdetach4.out" 2>&1
	drc=$?
	if [[ $rc -eq 0 && $drc -eq 0 && $set -ge 1 ]] &&
		grep -q "route 'local 10.78.0.1 dev lo table local': removed since naglefix set it: nothing to put back" "$TMP/qdetach4.out" &&
		! table_all | grep -q 10.78.0 && table_all | cmp -s - "$TMP/route.before"; then
		pass "attach-route-removed-said: $(grep -c 'removed since' "$TMP/qdetach4.out") route(s) removed meanwhile said, none made again"
	else
		cat "$TMP/qattach4.out" "$TMP/qdetach4.out" >"$TMP/qfail.out"
		fail attach-route-removed-said "attach $rc ($set set), detach $drc" "$TMP/qfail.out"
	fi
fi

if selected attach-route-ipv6; then
	ip -n "$QNS" addr add 2001:db8:77::1/64 dev lo nodad
	wait_until 5 has_route6 2001:db8:77::/64
	table_all >"$TMP/route.before6"
	printf 'connect [2001:db8::/32] quickack\n' >"$TMP/qa6.conf"
	"$NF" attach -c "$TMP/qa6.conf" --netns "$QNS" >"$TMP/qattach6.out" 2>&1
	rc=$?
	set6=$(table_all | grep -c '^2001:db8:77::/64 dev lo proto kernel metric 256 quickack 1')
	"$NF" detach --netns "$QNS" >"$TMP/qdetach6.out" 2>&1
	drc=$?
	if [[ $rc -eq 0 && $drc -eq 0 && $set6 -eq 1 ]] &&
		grep -q "route 'local 2001:db8:77::1 dev lo table local': an IPv6 route of metric 0" "$TMP/qattach6.out" &&
		table_all | cmp -s - "$TMP/route.before6"; then
		pass "attach-route-ipv6: 2001:db8:77::/64 set and put back byte for byte; the address's own route said and left"
	else
		cat "$TMP/qattach6.out" "$TMP/qdetach6.out" >"$TMP/qfail.out"
		table_all | diff "$TMP/route.before6" - >>"$TMP/qfail.out"
		fail attach-route-ipv6 "attach $rc ($set6 set), detach $drc" "$TMP/qfail.out"
	fi
	ip -n "$QNS" addr del 2001:db8:77::1/64 dev lo
fi

if selected attach-route-accept-refused; then
	printf 'accept 127.0.0.1:* quickack\n' >"$TMP/qa3.conf"
	"$NF" attach -c "$TMP/qa3.conf" --netns "$QNS" >"$TMP/qattach3.out" 2>"$TMP/qattach3.err"
	rc=$?
	if [[ $rc -eq 0 ]] && table_all | cmp -s - "$TMP/route.before" &&
		grep -q "qa3.conf:1: an accept rule names the program's own end, not the peer" "$TMP/qattach3.err" &&
		grep -q "quickack 1 set on 0 routes" "$TMP/qattach3.out"; then
		pass "attach-route-accept-refused: $(cut -c1-120 "$TMP/qattach3.err")"
	else
		fail attach-route-accept-refused "status $rc" "$TMP/qattach3.err"
	fi
fi

# never the host's routes: the server's namespace is checked to be QNS first
if selected attach-route-pid && [[ $(stat -L -c %i "/proc/$PID_qecho/ns/net") != "$(stat -L -c %i "/run/netns/$QNS")" ]]; then
	fail attach-route-pid "pid $PID_qecho is not in $QNS: not run"
elif selected attach-route-pid; then
	"$NF" attach -m quickack --pid "$PID_qecho" >"$TMP/qpid.out" 2>&1
	rc=$?
	attached=$(table_all | grep -c quickack)
	"$NF" detach --pid "$PID_qecho" >"$TMP/qpid2.out" 2>&1
	drc=$?
	if [[ $rc -eq 0 && $drc -eq 0 && $attached -eq 2 ]] &&
		grep -q "network namespace pid $PID_qecho's: route 'local 127.0.0.1 dev lo table local': quickack 1 set" "$TMP/qpid.out" &&
		table_all | cmp -s - "$TMP/route.before"; then
		pass "attach-route-pid: --pid $PID_qecho's namespace: $attached routes set (every unicast and local one), put back by detach --pid"
	else
		cat "$TMP/qpid2.out" >>"$TMP/qpid.out"
		fail attach-route-pid "attach $rc ($attached routes with quickack), detach $drc" "$TMP/qpid.out"
	fi
fi
# Two namespaces of the suite's own joined by a veth pair: the server
# (the receiving end) in RNS, the split writer in HNS, which watch does
# not watch: to watch its holder is on another host.
if selected attach-route-watch-fix; then
	RNS=naglefix-recv.$$ HNS=naglefix-hold.$$
	# no IPv6 on the pair: its link-local routes come some time after the
	# link is up, and would change the table between its two readings
	ip netns add "$RNS" && ip netns add "$HNS" &&
		nsenter --net="/run/netns/$RNS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		nsenter --net="/run/netns/$HNS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip -n "$RNS" link add va type veth peer name vb netns "$HNS" &&
		ip -n "$RNS" addr add 10.88.0.1/24 dev va && ip -n "$HNS" addr add 10.88.0.2/24 dev vb &&
		ip -n "$RNS" link set va up && ip -n "$HNS" link set vb up &&
		ip -n "$RNS" link set lo up && ip -n "$HNS" link set lo up
	ip -n "$RNS" route show table all >"$TMP/recv.before"
	start recv nsenter --net="/run/netns/$RNS" python3 "$TOP/tests/fix/echo_server.py" 10.88.0.1 600
	timeout 60 "$NF" watch --netns "$RNS" --fix --attach -t 30 >"$TMP/rwatch.out" 2>&1 &
	rwatch=$!
	wait_until 10 capturing "$RNS" # watch's capture open
	nsenter --net="/run/netns/$HNS" "$STATIC" 10.88.0.1 "$PORT_recv" 1000000 each >"$TMP/hrounds.out" 2>&1 8>&- &
	hclient=$!
	PIDS+=("$hclient")
	wait_until 10 grep -q "attach: route" "$TMP/rwatch.out"
	n1=$(rounds_done "$TMP/hrounds.out")
	wait_rounds "$TMP/hrounds.out" $((n1 + 200)) # 8 s at 40 ms, were it not fixed
	kill "$hclient" "$rwatch" 2>/dev/null
	wait "$rwatch" 2>/dev/null
ip -n "$RNS" route show table all >"$TMP/recv.attached"
	before=$(rounds_from "$TMP/hrounds.out" 1 $((n1 - 1)))
	after=$(rounds_from "$TMP/hrounds.out" $((n1 + 1)) $((n1 + 200)))
	"$NF" detach --netns "$RNS" >"$TMP/rdetach.out" 2>&1
	drc=$?
	if grep -q "fix: the holder is not on this host; the end that delays its ACK is pid $PID_recv .*attach: route '10.88.0.0/24 dev va table main' quickack 1 set in its network namespace (/run/netns/$RNS); undo: naglefix detach --netns /run/netns/$RNS" "$TMP/rwatch.out" &&
		[[ -n $before && $(field stalls "$before") -ge 1 ]] && below "$(field median "$after")" 1 &&
		[[ $(field stalls "$after") == 0 ]] && grep -q "^10.88.0.0/24 dev va .*quickack 1" "$TMP/recv.attached" &&
		[[ $drc -eq 0 ]] && ip -n "$RNS" route show table all | cmp -s - "$TMP/recv.before"; then
		pass "attach-route-watch-fix: the receiving namespace's route to the holder set by watch after $(field stalls "$before") stalled rounds; the open connection then $(field median "$after") ms a round ($(field n "$after") rounds, none stalled); detach: the table as before"
	else
		{ cat "$TMP/rwatch.out" "$TMP/rdetach.out"; cat "$TMP/recv.attached"; } >"$TMP/rfail.out"
		fail attach-route-watch-fix "before: $before; after: $after; detach $drc" "$TMP/rfail.out"
	fi
	ip netns del "$RNS"
	ip netns del "$HNS"
fi

if selected attach-route-kernel-state; then
	KNS=naglefix-kstate.$$
	# no DAD (va's addresses at once), no IPv6 on wa: the table then moves
	# only with what the test does
	ip netns add "$KNS" && ip -n "$KNS" link set lo up &&
		nsenter --net="/run/netns/$KNS" sysctl -qw net.ipv6.conf.default.accept_dad=0 &&
		ip -n "$KNS" link add va type veth peer name vb && ip -n "$KNS" link add wa type veth peer name wb &&
		nsenter --net="/run/netns/$KNS" sysctl -qw net.ipv6.conf.wa.disable_ipv6=1 net.ipv6.conf.wb.disable_ipv6=1 &&
		for d in va vb wa wb; do ip -n "$KNS" link set "$d" up; done &&
		ip -n "$KNS" addr add 10.50.0.1/24 dev va && ip -n "$KNS" addr add 10.51.0.1/24 dev wa &&
		ip -n "$KNS" route add 10.60.0.0/24 nexthop via 10.50.0.2 dev va nexthop via 10.51.0.2 dev wa &&
		ip -n "$KNS" -6 route add 2001:db8:98::/64 via fe80::1 dev va proto ra expires 600 &&
		ip -n "$KNS" -6 route add 2001:db8:97::/64 via fe80::1 dev va expires 600
	# the kernel's own routes of va and vb come as their carrier and
	# link-local addresses do: the table before once it holds still
	rm -f "$TMP/kstate.before" "$TMP/kwait.out"
	{ wait_until 10 carrier "$KNS" va vb wa wb && wait_until 10 link_local "$KNS" va vb; } ||
		echo "no carrier or link-local address in 10 s" >>"$TMP/kwait.out"
	wait_until 10 table_settled "$KNS" "$TMP/kstate.before" || echo "the table kept moving for 10 s" >>"$TMP/kwait.out"
	ip -n "$KNS" link set wb down # wa's carrier: its nexthop "linkdown"
	wait_until 10 linkdown "$KNS" 10.60.0.0/24 || echo "no linkdown in 10 s" >>"$TMP/kwait.out"
	printf 'connect 10.60.0.0/24 quickack
connect [2001:db8:98::/64] quickack
connect [2001:db8:97::/64] quickack
' >"$TMP/qk.conf"
	"$NF" attach -c "$TMP/qk.conf" --netns "$KNS" >"$TMP/kattach.out" 2>&1
	rc=$?
	ip -n "$KNS" route show table all >"$TMP/kstate.attached"
	ip -n "$KNS" link set wb up
	wait_until 10 linkup "$KNS" 10.60.0.0/24 || echo "linkdown still there after 10 s" >>"$TMP/kwait.out"
	"$NF" detach --netns "$KNS" >"$TMP/kdetach.out" 2>&1
	drc=$?
	if [[ $rc -eq 0 && $drc -eq 0 ]] && grep -q "^10.60.0.0/24 .*quickack 1" "$TMP/kstate.attached" &&
		grep -q "linkdown" "$TMP/kstate.attached" &&
		grep -q "route '2001:db8:98::/64 via fe80::1 dev va table main metric 1024': learned from a router advertisement: .*left as it is" "$TMP/kattach.out" &&
		grep -q "route '2001:db8:97::/64 via fe80::1 dev va table main metric 1024': an IPv6 route that expires: .*left as it is" "$TMP/kattach.out" &&
		[[ $(grep -c "^2001:db8:9[78]::/64 via fe80::1 dev va .*expires" "$TMP/kstate.attached") -eq 2 ]] &&
		grep -q "route '10.60.0.0/24 table main': put back as it was" "$TMP/kdetach.out" &&
		ip -n "$KNS" route show table all | grep -v expires | cmp -s - "$TMP/kstate.before"; then
		pass "attach-route-kernel-state: a multipath route with a link down set and put back byte for byte; a router's route and an expiring one said and left, their expiry kept"
	else
		{ cat "$TMP/kwait.out" "$TMP/kattach.out" "$TMP/kdetach.out" "$TMP/kstate.attached"; ip -n "$KNS" route show table all | diff "$TMP/kstate.before" -; } >"$TMP/kfail.out" 2>/dev/null
		fail attach-route-kernel-state "attach $rc, detach $drc" "$TMP/kfail.out"
	fi
	ip netns del "$KNS"
fi

if selected attach-route-appended-left; then
	DNS=naglefix-dup.$$
	ip netns add "$DNS" && ip -n "$DNS" link set lo up &&
		ip -n "$DNS" link add va type veth peer name vb && ip -n "$DNS" link add wa type veth peer name wb &&
		for d in va vb wa; do ip -n "$DNS" link set "$d" up; done && # wb down: wa "linkdown"
		nsenter --net="/run/netns/$DNS" sysctl -qw net.ipv4.conf.all.ignore_routes_with_linkdown=1 &&
		ip -n "$DNS" addr add 10.50.0.1/24 dev va && ip -n "$DNS" addr add 10.51.0.1/24 dev wa &&
		ip -n "$DNS" route add 10.62.0.0/24 via 10.51.0.2 dev wa && ip -n "$DNS" route append 10.62.0.0/24 via 10.50.0.2 dev va
	ip -n "$DNS" route show table all >"$TMP/dup.before"
	printf 'connect 10.62.0.5 quickack\n' >"$TMP/qd.conf"
	"$NF" attach -c "$TMP/qd.conf" --netns "$DNS" >"$TMP/dup.out" 2>&1
	rc=$?
	if [[ $rc -eq 0 ]] && ip -n "$DNS" route show table all | cmp -s - "$TMP/dup.before" &&
		grep -q "route '10.62.0.0/24 via 10.50.0.2 dev va table main': one of several routes of one entry (ip route append), not the first" "$TMP/dup.out"; then
		pass "attach-route-appended-left: the second of two appended routes said and left, the table unchanged"
	else
		{ cat "$TMP/dup.out"; ip -n "$DNS" route show table all | diff "$TMP/dup.before" -; } >"$TMP/dupfail.out"
		fail attach-route-appended-left "attach $rc" "$TMP/dupfail.out"
	fi
	"$NF" detach --netns "$DNS" >/dev/null 2>&1
	ip netns del "$DNS"
fi

if selected attach-route-too-big-said; then
	BIG=naglefix-big.$$
	nh=()
	for i in $(seq 2 50); do nh+=(nexthop via "10.50.0.$i" dev va); done
	ip netns add "$BIG" && ip -n "$BIG" link set lo up && ip -n "$BIG" link add va type veth peer name vb &&
		ip -n "$BIG" link set va up && ip -n "$BIG" link set vb up && ip -n "$BIG" addr add 10.50.0.1/16 dev va &&
		ip -n "$BIG" route add 10.70.0.0/24 "${nh[@]}"
	ip -n "$BIG" route show table all >"$TMP/big.before"
	printf 'connect 10.70.0.5 quickack\n' >"$TMP/qbig.conf"
	"$NF" attach -c "$TMP/qbig.conf" --netns "$BIG" >"$TMP/big.out" 2>"$TMP/big.err"
	rc=$?
	if [[ $rc -eq 1 ]] && ip -n "$BIG" route show table all | cmp -s - "$TMP/big.before" &&
		grep -q "the route to the address of $TMP/qbig.conf:1 not read: a route with more attributes than naglefix keeps of one; left as it is" "$TMP/big.err"; then
		pass "attach-route-too-big-said: status 1, $(head -1 "$TMP/big.err" | cut -c1-120)"
	else
		cat "$TMP/big.out" "$TMP/big.err" >"$TMP/bigfail.out"
		fail attach-route-too-big-said "attach $rc" "$TMP/bigfail.out"
	fi
	"$NF" detach --netns "$BIG" >/dev/null 2>&1
	ip netns del "$BIG"
fi

if selected attach-route-record-safe; then
	SNS=naglefix-rec.$$
	ip netns add "$SNS" && ip -n "$SNS" link set lo up && ip -n "$SNS" addr add 10.79.0.1/24 dev lo
	ip -n "$SNS" route show table all >"$TMP/rec.before"
	ino=$(stat -L -c %i "/run/netns/$SNS")
	mkdir -p "$NAGLEFIX_STATE_DIR" && echo theirs >"$TMP/victim" && ln -sf "$TMP/victim" "$NAGLEFIX_STATE_DIR/route-$ino.new"
	printf 'connect 127.0.0.1 quickack\n' >"$TMP/qr1.conf"
	printf 'connect 10.79.0.0/24 quickack\n' >"$TMP/qr2.conf"
	"$NF" attach -c "$TMP/qr1.conf" --netns "$SNS" >"$TMP/rec1.out" 2>&1 &
	a1=$!
	"$NF" attach -c "$TMP/qr2.conf" --netns "$SNS" >"$TMP/rec2.out" 2>&1
	rc2=$?
	wait "$a1"
	rc1=$?
	set=$(ip -n "$SNS" route show table all | grep -c 'quickack 1')
	recorded=$(grep -c '^route ' "$NAGLEFIX_STATE_DIR/route-$ino")
	mode=$(stat -c '%a %F' "$NAGLEFIX_STATE_DIR/route-$ino")
	"$NF" detach --netns "$SNS" >"$TMP/rec3.out" 2>&1
	drc=$?
	if [[ $rc1 -eq 0 && $rc2 -eq 0 && $drc -eq 0 && $(cat "$TMP/victim") == theirs && $mode == "600 regular file" ]] &&
		[[ ! -e $NAGLEFIX_STATE_DIR/route-$ino.new && $set -ge 3 && $recorded -eq $set ]] &&
		ip -n "$SNS" route show table all | cmp -s - "$TMP/rec.before"; then
		pass "attach-route-record-safe: the planted link not followed; record $mode; two attaches at once: $recorded routes recorded, all put back"
	else
		cat "$TMP/rec1.out" "$TMP/rec2.out" "$TMP/rec3.out" >"$TMP/recfail.out"
		fail attach-route-record-safe "attach $rc1 $rc2, detach $drc; victim '$(cat "$TMP/victim")'; record '$mode'; $set set, $recorded recorded" "$TMP/recfail.out"
	fi
	ip netns del "$SNS"
fi

if selected attach-route-inode-reused; then
	ANS=naglefix-gone.$$ BNS=naglefix-new.$$
	ip netns add "$ANS" && ip -n "$ANS" link set lo up && ip netns add "$BNS" && ip -n "$BNS" link set lo up
	ia=$(stat -L -c %i "/run/netns/$ANS") ib=$(stat -L -c %i "/run/netns/$BNS")
	printf 'connect 127.0.0.1 quickack\n' >"$TMP/qg.conf"
	"$NF" attach -c "$TMP/qg.conf" --netns "$ANS" >"$TMP/gone1.out" 2>&1
	rc=$?
	ip netns del "$ANS" # gone, its record left behind
	mv "$NAGLEFIX_STATE_DIR/route-$ia" "$NAGLEFIX_STATE_DIR/route-$ib"
	# someone else's quickack 1 on the new namespace's route: the same route A's record names
	ip -n "$BNS" route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
	theirs=$(ip -n "$BNS" route show table all)
	"$NF" detach --netns "$BNS" >"$TMP/gone2.out" 2>&1
	drc=$?
	if [[ $rc -eq 0 && $drc -eq 0 && $theirs == *"quickack 1"* && $(ip -n "$BNS" route show table all) == "$theirs" ]] &&
		grep -q "the record of its inode $ib is of a namespace gone since ($ANS, .*dropped, none of this one's touched" "$TMP/gone2.out" &&
		[[ ! -e $NAGLEFIX_STATE_DIR/route-$ib ]]; then
		pass "attach-route-inode-reused: $(cut -c1-140 "$TMP/gone2.out")"
	else
		{ cat "$TMP/gone1.out" "$TMP/gone2.out"; ip -n "$BNS" route show table all; } >"$TMP/gonefail.out"
		fail attach-route-inode-reused "attach $rc, detach $drc" "$TMP/gonefail.out"
	fi
	ip netns del "$BNS"
	rm -f "$NAGLEFIX_STATE_DIR/route-$ib"
fi

if selected attach-route-no-target; then
	unshare -n sh -c 'ip link set lo up; ip route show table all >"$2/none.before"
		"$1" attach -m quickack 2>"$2/none.err"; echo $? >"$2/none.rc"
		ip route show table all | cmp -s - "$2/none.before"; echo $? >"$2/none.same"' none "$NF" "$TMP" 8>&-
	if [[ $(cat "$TMP/none.same") == 0 ]]; then
		one_line attach-route-no-target "$(cat "$TMP/none.rc")" 125 "$TMP/none.err" "or --netns NAME|PATH for quickack rules alone"
	else
		fail attach-route-no-target "its namespace's routes changed" "$TMP/none.err"
	fi
fi

if selected attach-route-pid-own; then
	# a policy of both: the refusal comes before the cgroup program too
	OWNCG=$CG/own.$$
	mkdir -p "$OWNCG"
	printf 'connect 10.0.0.0/8 nodelay\nconnect 127.0.0.1 quickack\n' >"$TMP/both.conf"
	unshare -n sh -c 'ip link set lo up; ip route show table all >"$2/own.before"; sleep 30 & p=$!
		echo $p >"$3/cgroup.procs"
		"$1" attach -c "$2/both.conf" --pid $p 2>"$2/own.err"; echo $? >"$2/own.rc"; kill $p
		ip route show table all | cmp -s - "$2/own.before"; echo $? >"$2/own.same"' own "$NF" "$TMP" "$OWNCG" 8>&-
	prog=$(ours "$OWNCG")
	if [[ $(cat "$TMP/own.same") == 0 && -z $prog ]]; then
		one_line attach-route-pid-own "$(cat "$TMP/own.rc")" 4 "$TMP/own.err" "is in the host's network namespace"
	else
		fail attach-route-pid-own "its namespace's routes changed, or the cgroup program attached (${prog:-none})" "$TMP/own.err"
	fi
	[[ -n $prog ]] && "$NF" detach --cgroup "$OWNCG" >/dev/null 2>&1
	rmdir "$OWNCG" 2>/dev/null
fi
