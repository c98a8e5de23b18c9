#!/usr/bin/env bash
# run.sh: `make bench`. For the chatty workload (15 writes of 2 bytes, a
# 2-byte reply) and the split workload ("hello " + "world\r\n"), one table:
# the program as legacy, with its own TCP_NODELAY, its own TCP_CORK, one
# write per message, and the legacy program under naglefix -m nodelay,
# -m coalesce, -m auto and -m quickack (that one with the peer under it
# too), and the one-write program under -m pass and -m auto. Each fast
# row is the median of REPS interleaved runs, so the ratios compare
# figures measured side by side on this (noisy) machine. "peer ACKs":
# segments without data the client received, per round trip.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bench=$top/build/tests/bench
nf=$top/build/naglefix
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-2000}
LEGACY_ROUNDS=${LEGACY_ROUNDS:-30}

# row LABEL CMD...: runs CMD REPS times into $tmp/LABEL.
declare -A rows
order=(legacy own-nodelay own-cork one-write naglefix-nodelay naglefix-coalesce naglefix-auto
	naglefix-quickack one-write-pass one-write-auto)
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
	# what auto costs a program that never stalls, against the library doing nothing
	one-write-pass) echo "$nf -m pass -- $bench $1 single $ROUNDS" ;;
	one-write-auto) echo "$nf -m auto -- $bench $1 single $ROUNDS" ;;
	esac
}

# field NAME LINE -> value of NAME= in LINE
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

measure() { # WORKLOAD
	local w=$1 rep label out
	for label in "${order[@]}"; do rows[$label]=""; done
	rows[legacy]=$(timeout 60 $(cmd_for "$w" legacy))
	for ((rep = 0; rep < REPS; rep++)); do
		for label in "${order[@]:1}"; do
			# shellcheck disable=SC2046
			out=$(timeout 60 $(cmd_for "$w" "$label")) || out="failed"
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
	awk -v c="$(col naglefix-coalesce median_us)" -v o="$(col one-write median_us)" \
		-v n="$(col own-nodelay median_us)" -v k="$(col own-cork median_us)" \
		-v s="$(col naglefix-coalesce segs)" -v a="$(col naglefix-auto median_us)" \
		-v as="$(col naglefix-auto segs)" -v q="$(col naglefix-quickack median_us)" \
		-v p1="$(col one-write-pass median_us)" -v a1="$(col one-write-auto median_us)" 'BEGIN {
		printf "coalesce / one-write time: %.3f (target <= 1.10)\n", c / o
		printf "coalesce segments per message: %.3f (target <= 1.05)\n", s
		printf "coalesce / own TCP_NODELAY: %.3f, coalesce / own TCP_CORK: %.3f (target < 1)\n", c / n, c / k
		printf "auto / one-write time: %.3f (target <= 1.5), auto / own TCP_CORK: %.3f\n", a / o, a / k
		printf "auto segments per message: %.3f (target <= 2)\n", as
		printf "quickack (both ends) / one-write time: %.3f\n", q / o
		printf "one write under auto / under pass: %.3f (the cost where nothing stalls)\n", a1 / p1
	}'
}

[ -x "$bench" ] && [ -x "$nf" ] || { echo "bench: run make first" >&2; exit 2; }
echo "naglefix bench, $(date -u +%Y-%m-%d), $(uname -sr), $(nproc) cores, loopback"
for w in chatty split; do
	measure "$w"
	report "$w"
done

printf '\nWhat audit adds per write on a socket (ratios against no library, same run)\n'
"$top/tests/audit/overhead.sh"
