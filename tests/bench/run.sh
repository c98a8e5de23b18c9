#!/usr/bin/env bash
# run.sh: `make bench`. For the chatty workload (15 writes of 2 bytes, a
# 2-byte reply) and the split workload ("hello " + "world\r\n"), one table:
# the program as legacy, with its own TCP_NODELAY, its own TCP_CORK, one
# write per message; the legacy program under naglefix -m nodelay,
# -m coalesce, -m auto and -m quickack (that one with the peer under it
# too); and the one-write program (a program with nothing to fix) under
# every action. Then what a call on a descriptor that is not a socket
# costs (1-byte writes to /dev/null and reads from /dev/zero, the
# library's call against libc's in one process). Each row is the median
# of REPS interleaved runs; each ratio the median over the reps of the
# ratio of the two rows' runs of that rep, made within a second of each
# other on this (noisy, drifting) machine.
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

values() { # LABEL FIELD -> its value in each rep, in run order ("-" where a run failed)
	local line v
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		v=$(field "$2" "$line")
		echo "${v:--}"
	done <<<"${rows[$1]}"
}

col() { values "$1" "$2" | grep -v '^-$' | median; } # LABEL FIELD -> median over the reps

# ratio LABEL_A LABEL_B FIELD -> the median over the reps of A/B, each rep's
# two runs made one after the other: this machine's drift (several per cent
# within a minute) cancels in a pair, not in a ratio of two medians.
ratio() {
	paste <(values "$1" "$3") <(values "$2" "$3") |
		awk '$1 != "-" && $2 != "-" && $2 > 0 { print $1 / $2 }' | median
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
	awk -v w="$w" -v c="$(ratio naglefix-coalesce one-write median_us)" \
		-v cc="$(ratio naglefix-coalesce one-write cpu_us)" -v s="$(col naglefix-coalesce segs)" \
		-v n="$(ratio naglefix-coalesce own-nodelay median_us)" \
		-v k="$(ratio naglefix-coalesce own-cork median_us)" \
		-v a="$(ratio naglefix-auto one-write median_us)" -v as="$(col naglefix-auto segs)" \
		-v q="$(ratio naglefix-quickack one-write median_us)" \
		-v p1="$(ratio one-write-pass one-write median_us)" \
		-v n1="$(ratio one-write-nodelay one-write median_us)" \
		-v c1="$(ratio one-write-coalesce one-write median_us)" \
		-v d1="$(ratio one-write-audit one-write median_us)" \
		-v a1="$(ratio one-write-auto one-write median_us)" \
		-v c1c="$(ratio one-write-coalesce one-write cpu_us)" '
	function line(what, r, target) {
		printf "%-44s %6.3f  (target <= %s)%s\n", what, r, target, r <= target + 0 ? "" : "  MISSED"
	}
	BEGIN {
		line("coalesce / one-write time", c, w == "chatty" ? "1.05" : "1.03")
		line("coalesce / one-write CPU per round trip", cc, "1.05")
		line("coalesce segments per message", s, "1.05")
		printf "coalesce / own TCP_NODELAY: %.3f, coalesce / own TCP_CORK: %.3f\n", n, k
		line("auto / one-write time", a, "1.5")
		line("auto segments per message", as, "2")
		printf "quickack (both ends) / one-write time: %.3f\n", q
		if (w == "split") {
			printf "one-write program under each action / bare:\n"
			line("  pass", p1, "1.03")
			line("  nodelay", n1, "1.03")
			line("  coalesce", c1, "1.03")
			line("  coalesce, CPU per round trip", c1c, "1.05")
			line("  audit", d1, "1.05")
			printf "  auto: %.3f (no target)\n", a1
		}
	}'
}

# A call on a descriptor that is not a socket: the library's write (to
# /dev/null) and read (from /dev/zero) against libc's own, in one process,
# under each action.
devnull_report() {
	local a op out what
	for op in write read; do
		case $op in
		write) what="write to /dev/null" ;;
		read) what="read from /dev/zero" ;;
		esac
		printf '\n1-byte %s, library / libc in the same process (median of 41 pairs)\n' "$what"
		for a in pass nodelay coalesce audit auto quickack; do
			out=$("${pin[@]}" "$nf" -m "$a" -- "$devnull" 2000000 "$op") || out=""
			awk -v a="$a" -v r="$(field ratio "$out")" -v ns="$(field libc_ns "$out")" 'BEGIN {
				printf "%-10s %6.3f  (target <= 1.02)%s   libc: %s ns a call\n", a, r,
					r <= 1.02 ? "" : "  MISSED", ns }'
		done
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
