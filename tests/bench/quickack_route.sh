#!/usr/bin/env bash
# quickack_route.sh: `make bench`'s part for attach's quickack rules (issue
# 34): what the quickack route metric changes for every connection on the
# route, in packets. In a network namespace of its own (removed at the
# end; no other route is touched), tests/bench/bench.c's client and peer
# over that namespace's loopback, each workload with the route as it is
# ("bare") and after `naglefix attach -m quickack --netns` (every unicast
# and local route of the namespace: local 127.0.0.0/8 and local
# 127.0.0.1), detached again before the next bare run; REPS interleaved
# repetitions. Packets per request: the namespace's own TcpOutSegs
# (/proc/net/snmp read inside it: both ends, data and pure ACKs, the
# handshake and the warm-up rounds included) over the rounds; time: the
# client's median per round trip (warm-up left out). Rows:
#   chatty legacy    15 writes of 2 bytes, Nagle on: stalls bare
#   chatty nodelay   the same with its own TCP_NODELAY: no stall either way,
#                    so the metric's cost alone
#   split legacy     "hello " + "world\r\n", Nagle on
#   single           the request in one write: nothing to fix
# Each ratio (metric / bare) is the median over the repetitions of the
# ratio within one repetition. Root only; SKIP otherwise.
# Env: REPS (default 3), ROUNDS (default 200: a stalled round is 40 ms).
set -u
export LC_ALL=C
top=$(cd "$(dirname "$0")/../.." && pwd)
bench=$top/build/tests/bench
nf=$top/build/naglefix
REPS=${REPS:-3}
ROUNDS=${ROUNDS:-200}
cpus=$(nproc)
BENCH_CPU=${BENCH_CPU:-$((cpus > 1 ? 1 : 0))}
pin=()
command -v taskset >/dev/null && pin=(taskset -c "$BENCH_CPU")

if [[ $EUID -ne 0 ]]; then
	echo "quickack route bench: SKIP: needs root (a network namespace of its own)"
	exit 0
fi
[[ -x $bench && -x $nf ]] || { echo "quickack route bench: run make bench first" >&2; exit 2; }
ns=naglefix-bench-qa.$$
tmp=$(mktemp -d)
export NAGLEFIX_STATE_DIR=$tmp/state
cleanup() {
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns" && ip -n "$ns" link set lo up || exit 1

in_ns() { nsenter --net="/run/netns/$ns" "$@"; }
out_segs() { in_ns awk '$1 == "Tcp:" && !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next }
	$1 == "Tcp:" { print $c["OutSegs"] }' /proc/net/snmp; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
median() { sort -g | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "-" }'; }

# one WORKLOAD VARIANT: "PACKETS_PER_REQUEST MEDIAN_US"
one() {
	local s0 s1 line
	s0=$(out_segs)
	line=$(in_ns "${pin[@]}" "$bench" "$1" "$2" "$ROUNDS")
	s1=$(out_segs)
	awk -v a="$s0" -v b="$s1" -v r="$ROUNDS" -v m="$(field median_us "$line")" \
		'BEGIN { printf "%.2f %s\n", (b - a) / r, m }'
}

rows=("chatty legacy" "chatty nodelay" "split legacy" "split single")
declare -A bare met
for rep in $(seq "$REPS"); do
	for row in "${rows[@]}"; do
		# shellcheck disable=SC2086 # the row is two words
		bare[$row]+="$(one $row)"$'\n'
		"$nf" attach -m quickack --netns "$ns" >"$tmp/attach.out" 2>&1 || { cat "$tmp/attach.out"; exit 1; }
		# shellcheck disable=SC2086
		met[$row]+="$(one $row)"$'\n'
		"$nf" detach --netns "$ns" >/dev/null 2>&1
	done
done

echo
echo "the quickack route metric: $(uname -r), a namespace's loopback, $ROUNDS rounds, $REPS repetitions, ${pin[*]:-unpinned}"
printf '%-16s %12s %12s %7s   %12s %12s\n' workload "pkts/req bare" "with metric" ratio "us bare" "with metric"
for row in "${rows[@]}"; do
	pb=$(awk 'NF { print $1 }' <<<"${bare[$row]}" | median)
	pm=$(awk 'NF { print $1 }' <<<"${met[$row]}" | median)
	tb=$(awk 'NF { print $2 }' <<<"${bare[$row]}" | median)
	tm=$(awk 'NF { print $2 }' <<<"${met[$row]}" | median)
	ratio=$(paste <(awk 'NF { print $1 }' <<<"${bare[$row]}") <(awk 'NF { print $1 }' <<<"${met[$row]}") |
		awk '$1 > 0 { print $2 / $1 }' | median)
	printf '%-16s %12s %12s %7.2f   %12s %12s\n' "${row/split single/single}" "$pb" "$pm" "$ratio" "$tb" "$tm"
done
