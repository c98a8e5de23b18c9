#!/usr/bin/env bash
# scan.sh - `make bench`'s part for `naglefix scan`: a capture of at least
# 5 million packets and 100,000 connections, written here by the model of
# two TCP ends (build/tests/wire/model; 20,000 connections live at once,
# a 2 ms round trip, 16 rounds of request and reply each, 250 ms apart;
# 98% one-write request/response, 1% client-side and 1% server-side
# split writes that stall), then read in the same run, REPS times each,
# interleaved (cat, scan, tshark in each rep), from the page cache:
#   naglefix scan FILE                  (its stats line: peak live connections)
#   tshark -r FILE -q -z conv,tcp       (Wireshark's conversation table)
#   cat FILE > /dev/null                (the read itself)
# Each ratio is the median over the reps of the ratio of that rep's two
# runs (this machine drifts; a pair made a few seconds apart cancels it).
# Beside them, each of scan's halves alone (build/tests/detect_alone):
# the reading (read, decoded and prepared into a ring, no detector) and
# the detector (the segments prepared beforehand, nothing read).
# Targets: scan at least 30x faster than tshark, within 3x of cat, and
# its peak RSS (getrusage of the finished child, /usr/bin/time's %M)
# under 300 bytes per live connection; scan's peak RSS on a one-connection
# capture is printed beside it (what does not grow with connections).
# REPS (default 3: tshark takes minutes a run), BENCH_DIR (default
# $TMPDIR or /tmp: the capture is about 600 MB).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
model=$top/build/tests/wire/model
nf=$top/build/naglefix
alone=$top/build/tests/detect_alone
REPS=${REPS:-3}
export LC_ALL=C
[ -x "$model" ] && [ -x "$nf" ] && [ -x "$alone" ] || { echo "bench scan: run make first" >&2; exit 2; }
for tool in tshark /usr/bin/time; do
	command -v "$tool" >/dev/null || { echo "bench scan: $tool is missing (tests/install-deps.sh)" >&2; exit 2; }
done
dir=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/nf-bench-scan.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
cap=$dir/big.pcap

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }

# timed LABEL CMD...: runs CMD (stdout to /dev/null, stderr to
# $dir/LABEL.err) under /usr/bin/time; appends "wall_s rss_kb cpu_s" to
# $dir/LABEL.runs, wall from EPOCHREALTIME, cpu user + system of the
# finished child. Returns CMD's status.
timed() {
	local label=$1 t0 t1 rc
	shift
	t0=$EPOCHREALTIME
	/usr/bin/time -f '%M %U %S' -o "$dir/$label.rss" "$@" >/dev/null 2>"$dir/$label.err"
	rc=$?
	t1=$EPOCHREALTIME
	tail -n 1 "$dir/$label.rss" | awk -v a="$t0" -v b="$t1" \
		'{ printf "%.4f %s %.2f\n", b - a, $1, $2 + $3 }' >>"$dir/$label.runs"
	return $rc
}

echo
echo "naglefix scan against tshark and cat ($(date -u +%Y-%m-%d), $(nproc) cores)"
t0=$EPOCHREALTIME
if ! timeout 600 "$model" -o "$cap" --conns 100000 --concurrent 20000 --rounds 16 --gap 250 \
	--mix onewrite:98,split:1,split-server:1 --rtt 2 --seed 7 --truth summary >"$dir/truth"; then
	echo "bench scan: the model failed" >&2
	exit 1
fi
gen=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
read -r pkts conns stalling stalls peak_model < <(sed -n \
	's/^summary conns=\([0-9]*\) packets=\([0-9]*\) stalling_conns=\([0-9]*\) stalls=\([0-9]*\) peak_live=\([0-9]*\).*/\2 \1 \3 \4 \5/p' \
	"$dir/truth")
bytes=$(stat -c %s "$cap")
printf 'capture: %s packets, %s connections (%s live at once in the model, %s stalling), %s MB, written in %s s\n' \
	"$pkts" "$conns" "$peak_model" "$stalling" "$((bytes / 1000000))" "$gen"
cat "$cap" >/dev/null # into the page cache before the first rep

failed=0
for ((rep = 0; rep < REPS; rep++)); do
	timed cat sh -c 'exec cat "$1" >/dev/null' sh "$cap" || failed=1
	timed scan "$nf" scan "$cap" || failed=1
	timed tshark timeout 900 tshark -r "$cap" -q -z conv,tcp || failed=1
done
((failed == 0)) || echo "bench scan: a run failed (see below)"

# The one-connection capture: scan's memory that no connection adds.
"$model" -o "$dir/one.pcap" --rounds 16 >/dev/null
timed scan1 "$nf" scan "$dir/one.pcap"

col() { awk -v f="$2" '{print $f}' "$dir/$1.runs" | median; }
ratio() { # A B [COL]: median over reps of A's / B's figure COL (1 wall, 3 cpu)
	local c=${3:-1}
	paste -d ' ' "$dir/$1.runs" "$dir/$2.runs" | awk -v c="$c" '$(c + 3) > 0 { print $c / $(c + 3) }' | median
}
peak_live=$(sed -n 's/.*(at most \([0-9]*\) at once).*/\1/p' "$dir/scan.err" | tail -n 1)
# each half of scan alone: the reading (read, decoded, prepared into a
# ring, as scan's reading half does) and the detector (the segments
# prepared beforehand, nothing read), the detector's the median of 3 reps
"$alone" "$cap" 3 >"$dir/alone.out"
alone_s=$(sed -n 's/^detect_alone: .*, \([0-9.]*\) s, .*/\1/p' "$dir/alone.out" | median)
read_s=$(sed -n 's/^read alone: .*, \([0-9.]*\) s, .*/\1/p' "$dir/alone.out")
# rows and their stalls, against the model's count of stalls
read -r rows found < <("$nf" scan --json "$cap" 2>/dev/null |
	sed -n 's/.*"event":"wire_stall".*"stalls":\([0-9]*\).*/\1/p' |
	awk '{ n++; s += $1 } END { print n + 0, s + 0 }')

printf '| %-36s | %10s | %10s | %12s |\n' "reading the capture (median of $REPS)" "wall s" "cpu s" "peak RSS MB"
printf '|%s|%s|%s|%s|\n' "--------------------------------------" "------------" "------------" "--------------"
for l in cat scan tshark; do
	printf '| %-36s | %10.3f | %10.2f | %12.1f |\n' "$l" "$(col "$l" 1)" "$(col "$l" 3)" \
		"$(awk -v k="$(col "$l" 2)" 'BEGIN { print k / 1024 }')"
done
awk -v st="$(ratio tshark scan)" -v sc="$(ratio scan cat)" -v scc="$(ratio scan cat 3)" -v rss="$(col scan 2)" \
	-v rss1="$(col scan1 2)" -v live="${peak_live:-0}" -v pkts="$pkts" -v ws="$(col scan 1)" \
	-v rows="$rows" -v stalling="$stalling" -v alone="${alone_s:-0}" -v rd="${read_s:-0}" \
	-v cat="$(col cat 1)" -v found="$found" -v stalls="$stalls" '
BEGIN {
	printf "scan: %.2f M packets/s; %d rows, %d stalls found (the model: %d stalls on %d connections)\n",
		pkts / ws / 1e6, rows, found, stalls, stalling
	printf "%-44s %7.1fx  (target >= 30)%s\n", "tshark / scan time", st, (st >= 30 ? "" : "  MISSED")
	printf "%-44s %7.2fx  (target <= 3)%s\n", "scan / cat time", sc, (sc <= 3 ? "" : "  MISSED")
	# scan reads, decodes and detects in turn on one thread, as cat
	# reads on one
	printf "%-44s %7.2fx  (each one thread)\n", "scan / cat CPU time", scc
	printf "%-44s %7.3f s (%.1f ns a segment; %.2fx cat)\n", "the reading alone, no detector",
		rd, rd * 1e9 / pkts, rd / cat
	printf "%-44s %7.3f s (%.1f ns a segment; %.2fx cat)\n", "the detector alone, nothing read",
		alone, alone * 1e9 / pkts, alone / cat
	# scan does both halves in turn: about their sum
	printf "%-44s %7.2fx  (one thread: both halves in turn)\n", "scan / its two halves alone", ws / (alone + rd)
	if (live > 0) {
		b = rss * 1024 / live
		printf "%-44s %7.0f   (target < 300)%s\n", "scan peak RSS bytes / peak live connection", b,
			(b < 300 ? "" : "  MISSED")
		printf "  peak RSS %.1f MB, %d connections live at most (scan'"'"'s stats line); on a one-connection capture %.1f MB\n",
			rss / 1024, live, rss1 / 1024
	} else {
		print "scan peak RSS / live connection: no \"at most N at once\" in scan'"'"'s stats line  MISSED"
	}
}'
