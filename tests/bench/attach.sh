#!/usr/bin/env bash
# attach.sh: `make bench`'s part for `naglefix attach` (issue 29): what
# the kernel's program costs and how soon it acts, beside the library's
# nodelay and `fix --follow`. Root only (it makes a cgroup under the
# cgroup2 mount, removed at the end); SKIP otherwise.
#
# 1. The chatty workload (tests/bench/bench.c: 15 writes of 2 bytes, a
#    2-byte reply, over loopback, pinned to one CPU as run.sh does): the
#    legacy client started in a cgroup with naglefix's program ("connect
#    * nodelay": the client's connection set in its handshake, the peer's
#    left, as with its own TCP_NODELAY) against the client setting
#    TCP_NODELAY itself, bare; the library's -m nodelay beside; and the
#    one-write client (nothing to fix) in the cgroup against bare: the
#    program is on no call's path, so the ratios are 1 within noise. Each
#    ratio is the median over REPS interleaved pairs.
# 2. Connections: ROUNDS_CONN connect, accept and close over loopback
#    (python), in the cgroup against bare: what the program adds to a
#    connection's establishment, where it runs at both ends.
# 3. How soon: `naglefix attach` from its start to its return (the probe,
#    the load, the attach), its CPU (user + system); after it returns the
#    next connection has TCP_NODELAY when connect() returns (checked on
#    20). Beside it `fix --follow`: how long a new connection waits for
#    its rescan (tests/fix/fix_client.py --newconn: its own TCP_NODELAY
#    read every millisecond), and its CPU while it follows a process of
#    1,000 connections for 10 s; attach leaves no process behind.
# Env: REPS (default 5), ROUNDS (20000), ROUNDS_CONN (2000).
set -u
export LC_ALL=C
top=$(cd "$(dirname "$0")/../.." && pwd)
bench=$top/build/tests/bench
nf=$top/build/naglefix
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-20000}
ROUNDS_CONN=${ROUNDS_CONN:-2000}
cpus=$(nproc)
BENCH_CPU=${BENCH_CPU:-$((cpus > 1 ? 1 : 0))}
pin=()
command -v taskset >/dev/null && pin=(taskset -c "$BENCH_CPU")

if [[ $EUID -ne 0 ]]; then
	echo "attach bench: SKIP: needs root (bpf(2), a cgroup of its own)"
	exit 0
fi
root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[[ -n $root ]] || { echo "attach bench: SKIP: no cgroup2 mounted"; exit 0; }
[[ -x $bench && -x $nf ]] || { echo "attach bench: run make first" >&2; exit 2; }
tmp=$(mktemp -d)
cg=$root/naglefix-bench.$$
mkdir "$cg" || exit 1
cleanup() {
	exec 8>&-
	[[ -n ${spid:-} ]] && kill "$spid" 2>/dev/null
	wait 2>/dev/null
	"$nf" detach --cgroup "$cg" >/dev/null 2>&1
	while read -r p; do echo "$p" >"$root/cgroup.procs"; done <"$cg/cgroup.procs" 2>/dev/null
	rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkfifo "$tmp/hold" && exec 8<>"$tmp/hold" # the echo server's stdin

# in_cg CMD...: CMD as a process of the cgroup from its start.
in_cg() { sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' in_cg "$cg" "$@"; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
median() { sort -g | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "-" }'; }

echo
echo "naglefix attach: the kernel's program, $(uname -r), cgroup2 at $root, ${pin[*]:-unpinned}"
printf 'connect * nodelay\ndefault pass\n' >"$tmp/connect.conf"
"$nf" attach -c "$tmp/connect.conf" --cgroup "$cg" >"$tmp/attach.out" 2>&1 ||
	{ cat "$tmp/attach.out"; exit 1; }

# ---- 1. the chatty client: attached against its own TCP_NODELAY ---------------

declare -A out
labels=(own-nodelay attached library-nodelay one-write one-write-attached)
run_label() {
	case $1 in
	own-nodelay) "${pin[@]}" "$bench" chatty nodelay "$ROUNDS" ;;
	attached) in_cg "${pin[@]}" "$bench" chatty legacy "$ROUNDS" ;;
	library-nodelay) "${pin[@]}" "$nf" -m nodelay -- "$bench" chatty legacy "$ROUNDS" ;;
	one-write) "${pin[@]}" "$bench" chatty single "$ROUNDS" ;;
	one-write-attached) in_cg "${pin[@]}" "$bench" chatty single "$ROUNDS" ;;
	esac
}
for ((rep = 0; rep < REPS; rep++)); do
	for l in "${labels[@]}"; do
		out[$l]+="$(timeout 120 bash -c "$(declare -f in_cg run_label); $(declare -p pin bench nf ROUNDS cg); run_label $l")"$'\n'
	done
done
values() { while IFS= read -r line; do [[ -n $line ]] && field "$2" "$line"; done <<<"${out[$1]}"; }
ratio() { paste <(values "$1" "$3") <(values "$2" "$3") | awk '$2 > 0 { print $1 / $2 }' | median; }
printf '\nchatty workload (15 writes of 2 bytes, a 2-byte reply), per round trip, median of %d runs of %d rounds\n' "$REPS" "$ROUNDS"
printf '| %-20s | %10s | %10s | %8s |\n' client "median us" "p99 us" "CPU us"
printf '|%s|%s|%s|%s|\n' ---------------------- ------------ ------------ ----------
for l in "${labels[@]}"; do
	printf '| %-20s | %10s | %10s | %8s |\n' "$l" "$(values "$l" median_us | median)" \
		"$(values "$l" p99_us | median)" "$(values "$l" cpu_us | median)"
done
printf 'attached / own TCP_NODELAY: time %s, CPU %s (the same within noise: nothing on the call path)\n' \
	"$(ratio attached own-nodelay median_us)" "$(ratio attached own-nodelay cpu_us)"
printf 'library -m nodelay / own TCP_NODELAY: time %s, CPU %s\n' \
	"$(ratio library-nodelay own-nodelay median_us)" "$(ratio library-nodelay own-nodelay cpu_us)"
printf 'one-write client, attached / bare: time %s, CPU %s\n' \
	"$(ratio one-write-attached one-write median_us)" "$(ratio one-write-attached one-write cpu_us)"

# ---- 2. connections: the program runs once each, in its handshake --------------

{ python3 "$top/tests/fix/echo_server.py" 127.0.0.1 600 <"$tmp/hold" >"$tmp/echo.out" 2>&1 8>&- & }
spid=$!
for _ in $(seq 100); do grep -q '^PORT' "$tmp/echo.out" && break; sleep 0.05; done
port=$(sed -n 's/^PORT //p' "$tmp/echo.out")
# connect to its own listener, accept, close both: the establishment
# alone (the program runs at both ends: the listener is the cgroup's too)
conns='
import socket, sys, time
n = int(sys.argv[1])
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(64)
t0 = time.perf_counter(); set_ = 0
for _ in range(n):
    c = socket.create_connection(l.getsockname())
    a, _ = l.accept()
    set_ += c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    c.close(); a.close()
print("conn_us=%.2f set=%d" % ((time.perf_counter() - t0) / n * 1e6, set_))'
c_bare=() c_att=() c_ratio=()
for ((rep = 0; rep < REPS; rep++)); do
	b=$("${pin[@]}" python3 -c "$conns" "$ROUNDS_CONN")
	a=$(in_cg "${pin[@]}" python3 -c "$conns" "$ROUNDS_CONN")
	c_bare+=("$(field conn_us "$b")") c_att+=("$(field conn_us "$a")")
	c_ratio+=("$(awk -v a="$(field conn_us "$a")" -v b="$(field conn_us "$b")" 'BEGIN { print a / b }')")
	set_att=$(field set "$a") set_bare=$(field set "$b")
done
printf '\nconnect, accept, close over loopback, %d a run (python), median of %d: bare %s us, attached %s us (ratio %s, each pair %s); TCP_NODELAY at connect()'"'"'s return: %s of %d attached, %s bare\n' \
	"$ROUNDS_CONN" "$REPS" "$(printf '%s\n' "${c_bare[@]}" | median)" "$(printf '%s\n' "${c_att[@]}" | median)" \
	"$(printf '%s\n' "${c_ratio[@]}" | median)" "$(printf '%.2f ' "${c_ratio[@]}")" "$set_att" "$ROUNDS_CONN" "$set_bare"

{ python3 "$top/tests/fix/echo_server.py" 127.0.0.1 600 <"$tmp/hold" >"$tmp/echo.out" 2>&1 8>&- & }
spid=$!
for _ in $(seq 100); do grep -q '^PORT' "$tmp/echo.out" && break; sleep 0.05; done
port=$(sed -n 's/^PORT //p' "$tmp/echo.out")

# ---- 3. how soon, and what it costs: attach against fix --follow -----------------

"$nf" detach --cgroup "$cg" >/dev/null 2>&1
# REPS fresh attaches (each detached after), their wall time and CPU
# (user + system, from the rusage of each child, in one process)
timed='
import resource, subprocess, sys, time
nf, cg, reps, walls, cpus = sys.argv[1], sys.argv[2], int(sys.argv[3]), [], []
for _ in range(reps):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([nf, "attach", "-m", "nodelay", "--cgroup", cg], stdout=subprocess.DEVNULL, check=True)
    walls.append((time.perf_counter() - t0) * 1e3)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpus.append((r.ru_utime + r.ru_stime - r0.ru_utime - r0.ru_stime) * 1e3)
    subprocess.run([nf, "detach", "--cgroup", cg], stdout=subprocess.DEVNULL, check=True)
walls.sort(); cpus.sort()
print("wall_ms=%.2f cpu_ms=%.2f" % (walls[len(walls) // 2], cpus[len(cpus) // 2]))'
t=$(python3 -c "$timed" "$nf" "$cg" "$REPS")
"$nf" attach -m nodelay --cgroup "$cg" >/dev/null 2>&1
next=$(in_cg python3 -c "$conns" 20)
printf '\nnaglefix attach, start to return (median of %d fresh attaches, each with its probe): %s ms, CPU %s ms (user + system); the next connections: %s of 20 with TCP_NODELAY when connect() returned; no process stays\n' \
	"$REPS" "$(field wall_ms "$t")" "$(field cpu_ms "$t")" "$(field set "$next")"

# fix --follow on a client that opens a new connection per request
touch "$tmp/nofollow"
rm -f "$tmp/go"
python3 "$top/tests/fix/fix_client.py" 127.0.0.1 "$port" 20 --newconn "$tmp/go" >"$tmp/follow.out" 2>&1 &
cpid=$!
for _ in $(seq 100); do grep -q '^pid' "$tmp/follow.out" && break; sleep 0.05; done
NAGLEFIX_STATE_DIR=$tmp/state timeout 60 "$nf" fix -m nodelay --follow "$cpid" >"$tmp/follow.fix" 2>&1 &
fpid=$!
sleep 0.3
touch "$tmp/go"
wait "$cpid"
kill -INT "$fpid" 2>/dev/null
wait "$fpid" 2>/dev/null
fixed=$(awk '$1 == "conn" { print $4 }' "$tmp/follow.out")
printf 'fix --follow (every 100 ms), 20 new connections, each opened as the one before was fixed (just after a rescan): each fixed %s ms after connect() (median), %s at most; their rounds before it stall\n' \
	"$(median <<<"$fixed")" "$(sort -g <<<"$fixed" | tail -n 1)"
python3 "$top/tests/fix/many_conns.py" 127.0.0.1 "$port" 1000 40 >"$tmp/many.out" 2>&1 &
mpid=$!
for _ in $(seq 200); do grep -q '^ready' "$tmp/many.out" && break; sleep 0.05; done
NAGLEFIX_STATE_DIR=$tmp/state "$nf" fix -m nodelay --follow "$mpid" >/dev/null 2>&1 &
fpid=$!
sleep 1
hz=$(getconf CLK_TCK)
first=$(awk '{ print $14 + $15 }' "/proc/$fpid/stat")
sleep 10
ticks=$(awk -v f="$first" '{ print $14 + $15 - f }' "/proc/$fpid/stat")
kill -TERM "$fpid" "$mpid" 2>/dev/null
wait "$fpid" "$mpid" 2>/dev/null
printf 'fix --follow on a process of 1,000 connections: %s%% of one core over 10 s (its rescans), for as long as it runs; attach: none once it has returned\n' \
	"$(awk -v t="$ticks" -v hz="$hz" 'BEGIN { printf "%.1f", 100 * t / hz / 10 }')"
