#!/usr/bin/env bash
# watch_netns.sh: `make bench`'s part for `naglefix watch` across network
# namespaces (issue 28, item 5: memory and CPU per watched namespace; at
# most 128 MB resident with 100 idle namespaces). Runs in a world of its
# own (unshare --net --pid --fork --mount --mount-proc, a tmpfs on
# /run/netns), so that no other namespace of this host is counted: its
# own network namespace is watch's "host". Prints:
#   alone      watch --json with no other namespace: its resident memory
#              (VmRSS; of it RssFile, the rings mapped) and its CPU time
#              (/proc/PID/schedstat) over IDLE seconds
#   N idle     the same with N namespaces (ip netns add, lo up, nothing
#              sent), made before it starts; the time it took to capture
#              in all of them; per namespace: (RSS - alone's) / N, CPU / N;
#              the machine's hrtimer softirqs a second, alone and with
#              them (an idle namespace's capture is a queue: no timer; a
#              ring's retire timer fires every 50 ms)
#   processes  watch's CPU with PROCS (2000) sleeping processes more: its
#              walk of /proc every 250 ms (a process's namespace link read
#              when it is new, and every 2 s)
#   discovery  REPS namespaces made one at a time while it runs, half
#              named (ip netns add), half not (unshare -n sleep): ms from
#              the making to watch's capture there (a socket of its in the
#              namespace's /proc/net/packet); median and worst
#   wake       WAKES times, namespaces idle since watch started go to
#              full speed at once, memcached and memaslap (-T 2 -c 32) for
#              WAKE_S s: on one's loopback (even rounds), or across a veth
#              made between two (odd rounds: both wake, each segment seen
#              by both); the packets the kernel dropped meanwhile (watch's
#              drops, from the wire_stats line watch --json prints within
#              a second of a drop: 0 wanted) and the captures before and
#              after (a namespace's first is a queue, no ring)
#   busy       memcached and memaslap (as watch.sh) in one of the N
#              namespaces for SECS s, then across a veth between two of
#              them (each segment seen by both captures), watch on the
#              host side: watch's CPU against the load's, each time; the
#              packets, drops and second copies dropped; the rings'
#              size after
# Env: N (default 100), IDLE (10), PROCS (2000), REPS (10), SECS (10),
# WAKES (6), WAKE_S (2). Exit status 0 iff the N idle namespaces' resident
# memory is at most 128 MB.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
nf=$top/build/naglefix
N=${N:-100}
IDLE=${IDLE:-10}
PROCS=${PROCS:-2000}
REPS=${REPS:-10}
SECS=${SECS:-10}
WAKES=${WAKES:-6}
WAKE_S=${WAKE_S:-2}
if [[ $EUID -ne 0 ]]; then
	echo "watch netns bench: SKIP: needs root (namespaces, CAP_NET_RAW, setns)"
	exit 0
fi
[[ -x $nf ]] || { echo "watch netns bench: $nf missing: run make" >&2; exit 2; }
slap=$(command -v memaslap || command -v memcaslap)

# Everything below runs inside the world of its own.
inside() {
	set -u
	local tmp wp t0 i
	tmp=$(mktemp -d)
	mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns || return 1
	ip link set lo up

	# cpu_ns PID: the CPU time PID ran, ns
	cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }
	# rss PID: "VmRSS RssFile" in kB
	rss() { awk '/^VmRSS/ { r = $2 } /^RssFile/ { f = $2 } END { print r, f }' "/proc/$1/status"; }
	# start: watch --json in the background, wp its pid; once it captures
	# at home (a packet socket bound: nothing else here makes one)
	start() {
		"$nf" watch --json >"$tmp/watch.out" 2>"$tmp/watch.err" &
		wp=$!
		for ((i = 0; i < 200; i++)); do
			awk 'NR > 1 && $4 != "0000" { f = 1 } END { exit !f }' /proc/self/net/packet && return 0
			sleep 0.01
		done
		return 1
	}
	# hrtimers: the machine's hrtimer softirqs so far (a ring's retire
	# timer is one; the whole machine's: noisy)
	hrtimers() { awk '/HRTIMER:/ { for (i = 2; i <= NF; i++) s += $i; print s }' /proc/softirqs; }
	# idle_line LABEL COUNT: RSS and CPU of watch over IDLE s, and the
	# hrtimer softirqs a second meanwhile
	idle_line() {
		local c0 c1 h0 h1 r
		c0=$(cpu_ns "$wp")
		h0=$(hrtimers)
		sleep "$IDLE"
		c1=$(cpu_ns "$wp")
		h1=$(hrtimers)
		read -r -a r <<<"$(rss "$wp")"
		echo "$1 ${r[0]} ${r[1]} $(((c1 - c0) / 1000)) $(((h1 - h0) / IDLE))"
	}

	# alone
	start || { echo "watch did not start: $(cat "$tmp/watch.err")"; return 1; }
	read -r _ rss0 file0 cpu0 hr0 <<<"$(idle_line alone 0)"
	printf '%-10s %10s %10s %14s  %s\n' "" "rss_MB" "rings_MB" "cpu_ms/${IDLE}s" "per namespace"
	awk -v r="$rss0" -v f="$file0" -v c="$cpu0" 'BEGIN { printf "%-10s %10.1f %10.1f %14.2f  -\n", "alone", r / 1024, f / 1024, c / 1000 }'
	kill -INT "$wp"
	wait "$wp"

	# N idle namespaces, made first
	for ((i = 0; i < N; i++)); do
		ip netns add "b$i" && ip -n "b$i" link set lo up || { echo "ip netns add b$i failed"; return 1; }
	done
	t0=$EPOCHREALTIME
	start || { echo "watch did not start"; return 1; }
	for ((i = 0; i < 500; i++)); do
		ip netns exec "b$((N - 1))" awk 'NR > 1 && $4 != "0000" { f = 1 } END { exit !f }' /proc/net/packet &&
			break
		sleep 0.01
	done
	opened_ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	read -r _ rssn filen cpun hrn <<<"$(idle_line idle "$N")"
	awk -v r="$rssn" -v f="$filen" -v c="$cpun" -v r0="$rss0" -v c0="$cpu0" -v n="$N" -v s="$IDLE" 'BEGIN {
		printf "%-10s %10.1f %10.1f %14.2f  %.1f kB resident, %.3f ms CPU per %d s\n", n " idle", r / 1024, f / 1024,
			c / 1000, (r - r0) / n, (c - c0) / 1000 / n, s }'
	echo "$N namespaces captured $opened_ms ms after watch started"
	echo "kernel: $hrn hrtimer softirqs a second with them, $hr0 alone (the machine's; an idle namespace's queue has no timer, a ring's fires every 50 ms)"
	echo "rss_kb $rssn" >"$tmp/verdict"

	# the walk of /proc with PROCS processes more (sleeping in this world)
	local sl=() c0 c1
	for ((i = 0; i < PROCS; i++)); do sleep 600 & sl+=($!); done
	sleep 1
	c0=$(cpu_ns "$wp")
	sleep "$IDLE"
	c1=$(cpu_ns "$wp")
	kill "${sl[@]}"
	wait "${sl[@]}" 2>/dev/null
	awk -v c="$(((c1 - c0) / 1000))" -v c0="$cpun" -v p="$PROCS" -v s="$IDLE" 'BEGIN {
		printf "processes: with %d more, watch %.2f ms CPU a second (%.2f without): %.2f us a process a second\n",
			p, c / 1000 / s, c0 / 1000 / s, (c - c0) / s / p }'

	# discovery
	local lat=() pid home
	home=$(readlink /proc/self/ns/net)
	for ((i = 0; i < REPS; i++)); do
		t0=$EPOCHREALTIME
		if ((i % 2)); then
			unshare -n sleep 30 &
			pid=$!
		else
			ip netns add "d$i"
			ip netns exec "d$i" sleep 30 &
			pid=$!
		fi
		# a packet socket bound there: watch's (nothing else makes one there)
		for ((k = 0; k < 1000; k++)); do
			[[ $(readlink "/proc/$pid/ns/net") != "$home" ]] &&
				awk 'NR > 1 && $4 != "0000" { f = 1 } END { exit !f }' "/proc/$pid/net/packet" && break
			sleep 0.005
		done
		lat+=("$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')")
		kill "$pid"
		wait "$pid" 2>/dev/null
		((i % 2)) || ip netns del "d$i"
		sleep 0.1
	done
	printf '%s\n' "${lat[@]}" | sort -n | awk -v reps="$REPS" '{ v[NR] = $1 } END {
		printf "discovery: %d namespaces made while watch ran, captured after %d ms median, %d ms at worst (scan every 250 ms)\n",
			reps, v[int((NR + 1) / 2)], v[NR] }'

	# busy_run LABEL SERVER_NS CLIENT_NS ADDR: memcached in SERVER_NS on ADDR,
	# memaslap from CLIENT_NS for SECS s, watch (wp) looking on; one line
	busy_run() {
		local mc sp c0 c1 hz st=0 mt cap drops dups d0
		hz=$(getconf CLK_TCK)
		d0=$(drops_now)
		ip netns exec "$2" memcached -l "$4" -p 11311 -U 0 -u root -t 1 &
		mc=$!
		sleep 0.5
		c0=$(cpu_ns "$wp")
		ip netns exec "$3" "$slap" -s "$4:11311" -T 2 -c 32 -t "${SECS}s" >"$tmp/slap.out" 2>&1 &
		sp=$!
		while kill -0 "$sp" 2>/dev/null; do
			st=$(awk '{ print $14 + $15 }' "/proc/$sp/stat" 2>/dev/null || echo "$st")
			sleep 0.05
		done
		wait "$sp"
		c1=$(cpu_ns "$wp")
		mt=$(awk '{ print $14 + $15 }' "/proc/$mc/stat")
		kill "$mc"
		wait "$mc" 2>/dev/null
		sleep 1.3 # watch says a drop within a second
		awk -v label="$1" -v w="$(((c1 - c0) / 1000000))" -v l="$(((mt + st) * 1000 / hz))" \
			-v tps="$(sed -n 's/.*TPS: \([0-9]*\).*/\1/p' "$tmp/slap.out")" -v secs="$SECS" -v d="$(($(drops_now) - d0))" 'BEGIN {
			printf "%s: memaslap %d ops/s for %d s; watch %.2f s CPU, the load %.2f s (%.1f%%); %d packets dropped\n",
				label, tps, secs, w / 1000, l / 1000, (l > 0 ? 100 * w / l : 0), d }'
	}

	# ring_kib NS: the KiB of each packet ring watch (wp) has mapped whose
	# socket is bound in NS ("" for a queue: nothing mapped)
	ring_kib() {
		local range _ name ino kib=""
		for ino in $(ip netns exec "$1" awk 'NR > 1 && $4 != "0000" { print $9 }' /proc/net/packet); do
			while read -r range _ _ _ _ name; do
				[[ $name == "socket:[$ino]" ]] && kib+="$(((16#${range#*-} - 16#${range%-*}) / 1024)) "
			done <"/proc/$wp/maps"
		done
		echo "${kib% }"
	}
	# drops_now: the kernel's drops watch said so far (--json: a
	# wire_stats line within a second of a drop)
	drops_now() {
		jq -r 'select(.event == "wire_stats") | .drops' "$tmp/watch.out" 2>/dev/null | tail -n 1 | grep . || echo 0
	}

	# wake: idle namespaces at full speed at once
	if [[ -n $slap ]] && command -v memcached >/dev/null; then
		local k srv cli addr mc d0 d1 before tps total=0 next=$((N - 1))
		for ((k = 0; k < WAKES && next >= 5; k++)); do
			srv=b$next cli=b$next addr=127.0.0.1
			if ((k % 2)); then
				cli=b$((next - 1))
				ip link add "wv$k" netns "$cli" type veth peer name "wp$k" netns "$srv" &&
					ip -n "$cli" addr add 198.51.100.1/24 dev "wv$k" &&
					ip -n "$srv" addr add 198.51.100.2/24 dev "wp$k" &&
					ip -n "$cli" link set "wv$k" up && ip -n "$srv" link set "wp$k" up || return 1
				addr=198.51.100.2
				next=$((next - 1))
			fi
			next=$((next - 1))
			# caps NS...: each one's capture ("queue": no ring mapped)
			caps() { local n; for n in "$@"; do echo "$(ring_kib "$n" | grep . || echo queue)"; done | paste -sd' '; }
			before=$(caps $(printf '%s\n' "$cli" "$srv" | sort -u))
			ip netns exec "$srv" memcached -l "$addr" -p 11311 -U 0 -u root -t 1 &
			mc=$!
			sleep 0.5
			d0=$(drops_now)
			ip netns exec "$cli" "$slap" -s "$addr:11311" -T 2 -c 32 -t "${WAKE_S}s" >"$tmp/wake.out" 2>&1
			sleep 1.3 # watch says a drop within a second
			d1=$(drops_now)
			tps=$(sed -n 's/.*TPS: \([0-9]*\).*/\1/p' "$tmp/wake.out" | tail -n 1)
			kill "$mc"
			wait "$mc" 2>/dev/null
			total=$((total + d1 - d0))
			printf 'wake %d: %s, memaslap %s ops/s for %s s: %d packets dropped; captures %s -> %s KiB\n' \
				"$k" "$( ((k % 2)) && echo "$cli and $srv idle, a veth between" || echo "$srv idle, its loopback")" \
				"${tps:-?}" "$WAKE_S" $((d1 - d0)) "$before" "$(caps $(printf '%s\n' "$cli" "$srv" | sort -u))"
		done
		echo "wake: $total packets dropped in $k wakes from idle to full speed (0 wanted)"
	else
		echo "wake: SKIP: memaslap/memcaslap or memcached missing"
	fi

	# busy
	if [[ -n $slap ]] && command -v memcached >/dev/null; then
		busy_run "busy, one namespace's loopback" b0 b0 127.0.0.1
		ip link add bv0 netns b1 type veth peer name bv1 netns b2
		ip -n b1 addr add 192.0.2.1/24 dev bv0 && ip -n b2 addr add 192.0.2.2/24 dev bv1 &&
			ip -n b1 link set bv0 up && ip -n b2 link set bv1 up
		busy_run "busy, a veth between two (each segment seen twice)" b2 b1 192.0.2.2
		local range name _ ino kib=""
		for n in b0 b1; do
			for ino in $(ip netns exec "$n" awk 'NR > 1 && $4 != "0000" { print $9 }' /proc/net/packet); do
				while read -r range _ _ _ _ name; do
					[[ $name == "socket:[$ino]" ]] && kib+="$n $(((16#${range#*-} - 16#${range%-*}) / 1024)) KiB, "
				done <"/proc/$wp/maps"
			done
		done
		kill -INT "$wp"
		wait "$wp"
		read -r cap drops dups <<<"$(jq -r 'select(.event == "wire_stats") | "\(.captured) \(.drops) \(.duplicates)"' \
			"$tmp/watch.out" | tail -n 1)"
		echo "busy: $cap packets captured in all, $drops dropped (the wakes' included), $dups second copies dropped by the detector"
		echo "busy: the rings after: ${kib%, } (a queue before: no ring)"
	else
		kill -INT "$wp"
		wait "$wp"
		echo "busy: SKIP: memaslap/memcaslap or memcached missing"
	fi
	cat "$tmp/verdict" >"$VERDICT"
	rm -rf "$tmp"
}
export -f inside
export nf N IDLE REPS SECS slap PROCS WAKES WAKE_S
VERDICT=$(mktemp)
export VERDICT
trap 'rm -f "$VERDICT"' EXIT
echo "watch netns bench: watch with $N idle network namespaces, in a world of its own"
timeout -k 5 600 unshare --net --pid --fork --mount --mount-proc bash -c inside
read -r _ rss <"$VERDICT" 2>/dev/null
if [[ -n ${rss:-} && $rss -le $((128 * 1024)) ]]; then
	echo "watch netns bench: target met: $((rss / 1024)) MB resident with $N idle namespaces (at most 128)"
else
	echo "watch netns bench: target missed: '${rss:-?}' kB resident with $N idle namespaces (at most 128 MB)"
	exit 1
fi
