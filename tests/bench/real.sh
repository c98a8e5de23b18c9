#!/usr/bin/env bash
# real.sh: `make bench-real`. What a production client pays under each
# action: real clients against real servers on loopback, the client bare
# and under `naglefix -m ACTION` for pass, nodelay, coalesce, audit, auto
# and quickack, the server always bare.
#   pgbench   PostgreSQL's own client, select-only (-S), one connection
#             (-c 1) for PG_SECONDS a run: transactions per second, the
#             connection time excluded
#   memaslap  libmemcached's load client (Debian: memcaslap), one thread,
#             one connection (-T 1 -c 1), MC_OPS gets and sets (9:1) of
#             100-byte values a run: operations per second
# Client and server are pinned to one CPU (BENCH_CPU, default 1; 0 on a
# one-CPU machine): on this machine only pinned figures are stable. Each
# row is the median of REPS runs, the actions interleaved (each
# repetition starts one action later), and its ratio the median over the
# repetitions of its run over the bare client's run of that repetition; build/bench-real/runs.txt keeps every
# run's figure. quickack changes only the client's end here (the server
# is bare). The servers' data and logs are under build/bench-real (made
# anew each run); the servers listen on a free loopback port and are
# stopped on exit. Needs tests/install-deps.sh's postgresql, memcached and
# libmemcached-tools; a benchmark whose programs are missing is skipped.
#
# PostgreSQL refuses to run as root: as root, initdb and the server run as
# the `postgres` user the Debian package creates (runuser), in a directory
# given to that user; that user must be able to reach build/ (every
# directory above it searchable by others).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$top/tests/lib.sh"
clean_env
nf=$top/build/naglefix
dir=$top/build/bench-real
REPS=${REPS:-7}
PG_SECONDS=${PG_SECONDS:-1}
MC_OPS=${MC_OPS:-20000}
actions=(bare pass nodelay coalesce audit auto quickack)
need_built make "$nf" "$top/build/libnaglefix.so"

cpu=${BENCH_CPU:-1}
[ "$(nproc --all)" -gt 1 ] || cpu=${BENCH_CPU:-0}
taskset -c "$cpu" true 2>/dev/null || { echo "bench-real: cannot pin to CPU $cpu (BENCH_CPU)" >&2; exit 2; }
pin=(taskset -c "$cpu")

# ---- the servers ----------------------------------------------------------

pg_pidfile="" mc_pid=""
stop_servers() {
	if [ -n "$mc_pid" ]; then
		kill "$mc_pid" 2>/dev/null && wait "$mc_pid" 2>/dev/null
		mc_pid=""
	fi
	if [ -n "$pg_pidfile" ] && [ -s "$pg_pidfile" ]; then
		# the postmaster's pid is the file's first line; SIGINT: fast shutdown
		local pid
		pid=$(head -n 1 "$pg_pidfile")
		kill -INT "$pid" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	pg_pidfile=""
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

free_port() { # a loopback port no one listens on now
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# as_pg CMD...: CMD as the data directory's owner (postgres when we are root)
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin=""
for b in /usr/lib/postgresql/*/bin; do [ -x "$b/postgres" ] && pg_bin=$b; done # the newest
pg_port=""
start_postgres() {
	local data=$dir/pg/data
	mkdir -p "$dir/pg"
	if [ "$(id -u)" -eq 0 ]; then
		getent passwd postgres >/dev/null || { echo "no postgres user to run the server as"; return 1; }
		chown postgres: "$dir/pg"
		runuser -u postgres -- test -w "$dir/pg" ||
			{ echo "the postgres user cannot reach $dir (a directory above it is not searchable)"; return 1; }
	fi
	as_pg "$pg_bin/initdb" -D "$data" -A trust -U postgres -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
		{ echo "initdb failed (build/bench-real/initdb.log)"; return 1; }
	pg_port=$(free_port) || return 1
	# TCP on loopback only, no Unix socket; nothing waits for the disk
	# (the select-only runs write nothing, but the set-up does)
	as_pg tee -a "$data/postgresql.conf" >/dev/null <<-EOF
		listen_addresses = '127.0.0.1'
		port = $pg_port
		unix_socket_directories = ''
		fsync = off
		synchronous_commit = off
		full_page_writes = off
	EOF
	pg_pidfile=$data/postmaster.pid # from here on, stop_servers stops it
	as_pg "${pin[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$dir/pg/postgres.log" -w -t 30 start \
		>"$dir/pg-ctl.log" 2>&1 || { echo "the server did not start (build/bench-real/pg/postgres.log)"; return 1; }
	pgbench -h 127.0.0.1 -p "$pg_port" -U postgres -i -s 1 -q postgres >"$dir/pgbench-init.log" 2>&1 ||
		{ echo "pgbench -i failed (build/bench-real/pgbench-init.log)"; return 1; }
}

mc_port=""
start_memcached() {
	local user=()
	if [ "$(id -u)" -eq 0 ]; then # memcached refuses root without -u
		user=(-u nobody)
		getent passwd memcache >/dev/null && user=(-u memcache)
	fi
	mc_port=$(free_port) || return 1
	"${pin[@]}" memcached "${user[@]}" -l 127.0.0.1 -p "$mc_port" -U 0 -t 1 -m 64 \
		>"$dir/memcached.log" 2>&1 &
	mc_pid=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$mc_port") 2>/dev/null && return 0
		kill -0 "$mc_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "memcached did not start (build/bench-real/memcached.log)"
	return 1
}

# ---- the clients ----------------------------------------------------------

# client ACTION CMD...: CMD pinned, bare or under the library with ACTION
# as its default; the library's messages (audit's records) go to a file
client() {
	local action=$1
	shift
	if [ "$action" = bare ]; then
		"${pin[@]}" "$@"
	else
		"${pin[@]}" "$nf" -m "$action" -l "$dir/naglefix.log" -- "$@"
	fi 2>>"$dir/clients.log"
}

# run BENCH ACTION -> its throughput, nothing if the run failed
run() {
	case $1 in
	pgbench)
		client "$2" pgbench -h 127.0.0.1 -p "$pg_port" -U postgres -n -S -c 1 -T "$PG_SECONDS" postgres |
			sed -n 's/^tps = \([0-9.]*\) .*/\1/p' ;;
	memaslap)
		client "$2" "$memaslap" -s "127.0.0.1:$mc_port" -T 1 -c 1 -x "$MC_OPS" -w 1k -X 100 |
			sed -n 's/.* TPS: \([0-9.]*\) .*/\1/p' ;;
	esac
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR) printf "%.0f\n", a[int((NR+1)/2)]}'; }
# the runs' max - min in percent of their median, from 5 runs on without
# the highest and the lowest (one run another program slowed is no news)
spread() {
	sort -g | awk '{a[NR]=$1} END {
		lo = 1; hi = NR; if (NR >= 5) { lo = 2; hi = NR - 1 }
		if (NR) printf "%.0f", 100 * (a[hi] - a[lo]) / a[int((NR+1)/2)] }'
}

# ---- main -----------------------------------------------------------------

rm -rf "$dir"
mkdir -p "$dir"
memaslap=$(command -v memaslap || command -v memcaslap)
benches=() skipped=()
if [ -z "$pg_bin" ] || ! command -v pgbench >/dev/null; then
	skipped+=("pgbench: no PostgreSQL server or pgbench (tests/install-deps.sh installs them)")
elif start_postgres >"$dir/postgres-start.log"; then
	benches+=(pgbench)
else
	skipped+=("pgbench: $(cat "$dir/postgres-start.log")")
fi
if [ -z "$memaslap" ] || ! command -v memcached >/dev/null; then
	skipped+=("memaslap: no memcached or memaslap (tests/install-deps.sh installs them)")
elif start_memcached >"$dir/memcached-start.log"; then
	benches+=(memaslap)
else
	skipped+=("memaslap: $(cat "$dir/memcached-start.log")")
fi
for s in "${skipped[@]}"; do echo "bench-real: skipped $s" >&2; done
[ ${#benches[@]} -gt 0 ] || exit 2

declare -A res
busy=""
for b in "${benches[@]}"; do for a in "${actions[@]}"; do res[$b,$a]=""; done; done
for ((rep = 0; rep < REPS; rep++)); do
	# each repetition starts one action later: no action always runs first
	for ((i = 0; i < ${#actions[@]}; i++)); do
		a=${actions[(rep + i) % ${#actions[@]}]}
		for b in "${benches[@]}"; do
			res[$b,$a]+="$(run "$b" "$a")"$'\n'
		done
	done
done
stop_servers
for b in "${benches[@]}"; do for a in "${actions[@]}"; do
	echo "$b $a $(tr '\n' ' ' <<<"${res[$b,$a]}")" # every run's figure, for a look at the noise
done; done >"$dir/runs.txt"

col() { grep . <<<"${res[$1,$2]}" | median; } # BENCH ACTION -> median over the reps
# BENCH ACTION -> the median over the repetitions of the action's run over
# bare's run of the same repetition (made within seconds of each other:
# this machine drifts more than that over a whole run); - if none
pratio() {
	paste <(printf '%s' "${res[$1,$2]}") <(printf '%s' "${res[$1,bare]}") |
		awk -F'\t' '$1 != "" && $2 > 0 { print $1 / $2 }' | sort -g |
		awk '{a[NR]=$1} END { if (NR) printf "%.3f", a[int((NR+1)/2)]; else print "-" }'
}

echo "naglefix bench-real, $(date -u +%Y-%m-%d), $(uname -sr), $(nproc --all) cores, loopback"
echo
head="| action |" rule="|---|"
for b in "${benches[@]}"; do
	case $b in
	pgbench) head+=" pgbench -S -c 1, tps | ratio to bare |" ;;
	memaslap) head+=" memaslap -T 1 -c 1, ops/s | ratio to bare |" ;;
	esac
	rule+="---|---|"
done
echo "$head"
echo "$rule"
for a in "${actions[@]}"; do
	line="| $a |"
	for b in "${benches[@]}"; do
		m=$(col "$b" "$a")
		line+=" ${m:-failed} | $(pratio "$b" "$a") |"
	done
	echo "$line"
done
echo
how="Median of $REPS runs per action, the actions interleaved (each repetition starting one later); client and server pinned to CPU $cpu"
how+=" (taskset), the server bare, the client bare or under \`naglefix -m ACTION\`;"
how+=" ratio: the median over the repetitions of the action's run over bare's run in the same repetition."
for b in "${benches[@]}"; do
	case $b in
	pgbench) how+=" pgbench: PostgreSQL $("$pg_bin/postgres" -V | awk '{print $3}'), select-only, scale 1, $PG_SECONDS s a run" ;;
	memaslap) how+=" memaslap: memcached $(memcached -V | awk '{print $2}'), 9:1 get:set, 100-byte values, $MC_OPS operations a run" ;;
	esac
	sp=$(grep . <<<"${res[$b,bare]}" | spread)
	how+=" (bare's runs spread ${sp:-?}% of their median$( ((REPS < 5)) || echo ", the highest and lowest left out"))."
	[ "${sp:-0}" -le 15 ] || busy+=" $b"
done
echo "$how"
[ -z "$busy" ] || echo "bench-real: bare's runs of$busy spread more than 15%: something else" \
	"was using CPU $cpu; compare the ratios with care, or run again" >&2
for b in "${benches[@]}"; do
	for a in "${actions[@]}"; do
		n=$(grep -c . <<<"${res[$b,$a]}")
		[ "$n" -eq "$REPS" ] || echo "bench-real: $b under $a: $((REPS - n)) of $REPS runs failed (build/bench-real/clients.log)" >&2
	done
done
[ ${#skipped[@]} -eq 0 ]
