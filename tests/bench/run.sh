#!/usr/bin/env bash
# run.sh: `make bench`. For the chatty workload (15 writes of 2 bytes, a
# 2-byte reply) and the split workload ("hello " + "world\r\n"), one table:
# the program as legacy, with its own TCP_NODELAY, its own TCP_CORK, one
# write per message; the legacy program under naglefix -m nodelay,
# -m coalesce, -m auto and -m quickack (that one with the peer under it
# too); and the one-write program (a program with nothing to fix) under
# every action. Then what a call on a descriptor that is not a socket
# costs (1-byte writes to /dev/null, the library's write against libc's in
# one process). Each row is the median of REPS interleaved runs, so the
# ratios compare figures measured side by side on this (noisy) machine.
# Client and peer run pinned to one CPU (BENCH_CPU, default 1: the last
# CPU if there is only one), where loopback round trips are stable to
# about 1%; unpinned they jump between ~12 and ~50 us. "peer ACKs":
# segments without data the client received, per round trip.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bench=$top/build/tests/bench
devnull=$top/build/tests/devnull
nf=$top/build/naglefix
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-20000}
LEGACY_ROUNDS=${LEGACY_ROUNDS:-30}
cpus=$(nproc)
BENCH_CPU=${BENCH_CPU:-$((cpus > 1 ? 1 : 0))}
pin=()
command -v taskset >/dev/null && pin=(taskset -c "$BENCH_CPU")

# row LABEL CMD...: runs CMD REPS times into $tmp/LABEL.
declare -A rows
order=(legacy own-nodelay own-cork one-write naglefix-nodelay naglefix-coalesce naglefix-auto
	naglefix-quickack one-write-pass one-write-nodelay one-write-coalesce one-write-audit
	one-write-auto)
cmd_for() { # WORKLOAD LABEL -> the command line
	case $2 in
	legacy) echo "$bench $1 legacy $LEGACY_ROUNDS" ;;
	own-nodelay) echo "$bench $1 nodelay $ROUNDS" ;;
	own-cork) echo "$bench $1 cork $ROUNDS" ;;
	one-write) echo "$bench $1 single $ROUNDS" ;;
	naglefix-nodelay) echo "$nf -m nodelay -- $bench $1 legacy $ROUNDS" ;;
	naglefix-coalesce) echo "$nf -m coalesce -- $bench $1 legacy $ROUNDS" ;;
	naglefix-auto) echo "$nf -m auto -- $bench $1 legacy $ROUNDS" ;;
	# quickack fixes the receiving end: the peer runs under it too
	naglefix-quickack) echo "env NF_BENCH_PEER_SHIM=1 $nf -m quickack -- $bench $1 legacy $ROUNDS" ;;
	# what each action costs a program that never stalls
	one-write-*) echo "$nf -m ${2#one-write-} -- $bench $1 single $ROUNDS" ;;
	esac
}

# field NAME LINE -> value of NAME= in LINE
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

measure() { # WORKLOAD
	local w=$1 rep label out
	for label in "${order[@]}"; do rows[$label]=""; done
	rows[legacy]=$(timeout 60 "${pin[@]}" $(cmd_for "$w" legacy))
	for ((rep = 0; rep < REPS; rep++)); do
		for label in "${order[@]:1}"; do
			# shellcheck disable=SC2046
			out=$(timeout 60 "${pin[@]}" $(cmd_for "$w" "$label")) || out="failed"
			rows[$label]+="$out"$'\n'
		done
	done
}

col() { # LABEL FIELD -> median over the reps
	local line
	while IFS= read -r line; do [ -n "$line" ] && field "$2" "$line"; done <<<"${rows[$1]}" | median
}

report() { # WORKLOAD PIECES
	local w=$1 label
	printf '\n%s workload, per round trip (median of %d runs of %d rounds; legacy: %d rounds)\n' \
		"$w" "$REPS" "$ROUNDS" "$LEGACY_ROUNDS"
	printf '| %-18s | %12s | %12s | %9s | %9s | %10s |\n' client "median us" "p99 us" "segments" \
		"peer ACKs" "CPU us"
	printf '|%s|%s|%s|%s|%s|%s|\n' "--------------------" "--------------" "--------------" \
		"-----------" "-----------" "------------"
	for label in "${order[@]}"; do
		printf '| %-18s | %12s | %12s | %9s | %9s | %10s |\n' "$label" "$(col "$label" median_us)" \
			"$(col "$label" p99_us)" "$(col "$label" segs)" "$(col "$label" acks)" \
			"$(col "$label" cpu_us)"
	done
	awk -v w="$w" -v c="$(col naglefix-coalesce median_us)" -v o="$(col one-write median_us)" \
		-v n="$(col own-nodelay median_us)" -v k="$(col own-cork median_us)" \
		-v s="$(col naglefix-coalesce segs)" -v a="$(col naglefix-auto median_us)" \
		-v as="$(col naglefix-auto segs)" -v q="$(col naglefix-quickack median_us)" \
		-v cc="$(col naglefix-coalesce cpu_us)" -v oc="$(col one-write cpu_us)" \
		-v p1="$(col one-write-pass median_us)" -v n1="$(col one-write-nodelay median_us)" \
		-v c1="$(col one-write-coalesce median_us)" -v d1="$(col one-write-audit median_us)" \
		-v a1="$(col one-write-auto median_us)" -v c1c="$(col one-write-coalesce cpu_us)" '
	function line(what, r, target) {
		printf "%-44s %6.3f  (target <= %s)%s\n", what, r, target, r <= target + 0 ? "" : "  MISSED"
	}
	BEGIN {
		line("coalesce / one-write time", c / o, w == "chatty" ? "1.05" : "1.03")
		line("coalesce / one-write CPU per round trip", cc / oc, "1.05")
		line("coalesce segments per message", s, "1.05")
		printf "coalesce / own TCP_NODELAY: %.3f, coalesce / own TCP_CORK: %.3f\n", c / n, c / k
		line("auto / one-write time", a / o, "1.5")
		line("auto segments per message", as, "2")
		printf "quickack (both ends) / one-write time: %.3f\n", q / o
		if (w == "split") {
			printf "one-write program under each action / bare:\n"
			line("  pass", p1 / o, "1.03")
			line("  nodelay", n1 / o, "1.03")
			line("  coalesce", c1 / o, "1.03")
			line("  coalesce, CPU per round trip", c1c / oc, "1.05")
			line("  audit", d1 / o, "1.05")
			printf "  auto: %.3f (no target)\n", a1 / o
		}
	}'
}

# A call on a descriptor that is not a socket: the library's write
# against libc's own, in one process, under each action.
devnull_report() {
	local a out
	printf '\n1-byte write to /dev/null, library / libc in the same process (median of 41 pairs)\n'
	for a in pass nodelay coalesce audit auto quickack; do
		out=$("${pin[@]}" "$nf" -m "$a" -- "$devnull" 2000000) || out=""
		awk -v a="$a" -v r="$(field ratio "$out")" -v ns="$(field libc_ns "$out")" 'BEGIN {
			printf "%-10s %6.3f  (target <= 1.02)%s   libc: %s ns a call\n", a, r,
				r <= 1.02 ? "" : "  MISSED", ns }'
	done
}

[ -x "$bench" ] && [ -x "$devnull" ] && [ -x "$nf" ] || { echo "bench: run make first" >&2; exit 2; }
echo "naglefix bench, $(date -u +%Y-%m-%d), $(uname -sr), $cpus cores, loopback, ${pin[*]:-unpinned}"
for w in chatty split; do
	measure "$w"
	report "$w"
done
devnull_report

printf '\nWhat audit adds per write on a socket (ratios against no library, same run)\n'
"$top/tests/audit/overhead.sh"
