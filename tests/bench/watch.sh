#!/usr/bin/env bash
# watch.sh: `make bench`'s part for `naglefix watch` (issue 18: "watch keeps
# up with redis-benchmark or memaslap at full speed on loopback: 0 drops,
# its CPU stated"). In a network namespace of its own (its lo carries the
# load and nothing else), memcached (one thread) and memaslap
# (libmemcached's load client, Debian's memcaslap: MC_THREADS threads,
# MC_CONC connections, SECS seconds, as fast as they go) run while
# `naglefix watch --json` watches every interface. Prints the load's rate,
# the packets watch saw and the kernel dropped (the target: 0), watch's CPU
# time (utime + stime from /proc/PID/stat just before it is stopped) beside
# the load's (memaslap's and memcached's, the same way), and watch's peak
# RSS (VmHWM). REPS runs (default 3), one line each. Exit status 0 iff every
# run had 0 drops.
# Env: SECS (default 10), MC_THREADS (2), MC_CONC (32), REPS (3),
# WATCH_ARGS (more of watch's options: "--metrics 9477" measures the
# endpoint's cost, its descriptors polled every 64 frames; a scrape a
# second is made then too).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
nf=$top/build/naglefix
SECS=${SECS:-10}
MC_THREADS=${MC_THREADS:-2}
MC_CONC=${MC_CONC:-32}
REPS=${REPS:-3}
slap=$(command -v memaslap || command -v memcaslap)
if [[ -z $slap ]] || ! command -v memcached >/dev/null; then
	echo "watch bench: SKIP: memaslap/memcaslap or memcached missing (tests/install-deps.sh installs them)"
	exit 0
fi
if [[ $EUID -ne 0 ]]; then
	echo "watch bench: SKIP: needs root (CAP_NET_RAW, a network namespace)"
	exit 0
fi
[[ -x $nf ]] || { echo "watch bench: $nf missing: run make" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one_run OUT: inside the namespace; writes "key value" lines to OUT.
one_run() {
	local out=$1 mc wp sp hz ticks port=11311
	hz=$(getconf CLK_TCK)
	ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
	ip link set lo up || return 1
	memcached -l 127.0.0.1 -p "$port" -U 0 -u root -t 1 &
	mc=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		sleep 0.05
	done
	# shellcheck disable=SC2086 # WATCH_ARGS is words
	"$nf" watch --json ${WATCH_ARGS:-} >"$out.watch" 2>"$out.err" &
	wp=$!
	if [[ ${WATCH_ARGS:-} == *--metrics* ]]; then
		(while kill -0 "$wp" 2>/dev/null; do
			curl -s --max-time 2 -o /dev/null "http://127.0.0.1:${WATCH_ARGS##*--metrics }/metrics"
			sleep 1
		done) &
	fi
	sleep 0.5 # nothing else runs here: no packet is missed meanwhile
	"$slap" -s "127.0.0.1:$port" -T "$MC_THREADS" -c "$MC_CONC" -t "${SECS}s" >"$out.slap" 2>&1 &
	sp=$!
	# memaslap's ticks are read while it still runs, at its last second
	sleep "$SECS"
	while kill -0 "$sp" 2>/dev/null; do
		ticks=$(ticks "$sp" 2>/dev/null) || break
		echo "slap_ticks $ticks" >"$out.slapticks"
		sleep 0.05
	done
	wait "$sp"
	{
		echo "hz $hz"
		echo "watch_ticks $(ticks "$wp")"
		echo "watch_hwm_kb $(awk '/^VmHWM/ { print $2 }' "/proc/$wp/status")"
		echo "mc_ticks $(ticks "$mc")"
		cat "$out.slapticks"
		sed -n 's/^Run time: \([0-9.]*\)s Ops: \([0-9]*\) TPS: \([0-9]*\).*/slap_secs \1\nslap_ops \2\nslap_tps \3/p' "$out.slap"
	} >"$out"
	kill -INT "$wp"
	wait "$wp"
	kill "$mc"
	wait "$mc" 2>/dev/null
	jq -r 'select(.event == "wire_stats") | "captured \(.captured)\ndrops \(.drops)\nseconds \(.seconds)"' \
		"$out.watch" >>"$out"
}
export -f one_run
export nf slap SECS MC_THREADS MC_CONC WATCH_ARGS

echo "watch bench: memcached (1 thread) + memaslap -T $MC_THREADS -c $MC_CONC for $SECS s on a namespace's lo, watch on every interface${WATCH_ARGS:+ ($WATCH_ARGS)}"
printf '%-4s %10s %12s %10s %6s %10s %10s %8s %9s\n' run ops/s packets pkts/s drops watch_cpu load_cpu ratio peak_rss
bad=0
for ((r = 1; r <= REPS; r++)); do
	out=$tmp/run$r
	if ! timeout -k 5 $((SECS + 60)) unshare -n bash -c 'one_run "$1"' one_run "$out" || [[ ! -s $out ]]; then
		echo "run $r failed (see $out.err)"
		bad=1
		continue
	fi
	declare -A v=()
	while read -r k val; do v[$k]=$val; done <"$out"
	awk -v r="$r" -v hz="${v[hz]}" -v wt="${v[watch_ticks]}" -v mt="${v[mc_ticks]}" \
		-v st="${v[slap_ticks]:-0}" -v tps="${v[slap_tps]:-0}" -v cap="${v[captured]:-0}" \
		-v secs="${v[seconds]:-1}" -v drops="${v[drops]:-NA}" -v hwm="${v[watch_hwm_kb]:-0}" 'BEGIN {
		w = wt / hz; l = (mt + st) / hz
		printf "%-4s %10d %12d %10d %6s %9.2fs %9.2fs %7.1f%% %7.1fMB\n", r, tps, cap, (cap / secs),
			drops, w, l, (l > 0 ? 100 * w / l : 0), (hwm / 1024) }'
	[[ ${v[drops]:-x} == 0 ]] || bad=1
	unset v
done
if ((bad)); then
	echo "watch bench: target missed: a run dropped packets or failed"
else
	echo "watch bench: target met: 0 drops in every run"
fi
exit "$bad"
