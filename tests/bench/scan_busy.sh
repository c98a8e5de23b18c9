#!/usr/bin/env bash
# scan_busy.sh - `make bench`'s part for `naglefix scan` on a host whose
# other core is busy: the shape of a busy server's capture, 45,000
# connections live at once (build/tests/wire/model --conns 45000
# --concurrent 45000 --rounds 10: 2,070,000 packets, 196 MB), read from
# the page cache REPS times in each of two states, interleaved in each rep:
#   quiet   cat FILE >/dev/null, then naglefix scan FILE
#   busy    the same, with a busy loop pinned to the last CPU
# and tshark (-q -z conv,tcp) once in each state (it takes about a minute).
# and, in each rep and state, cat and scan once more pinned to the first
# CPU (taskset -c 0; the busy loop is on the last): their CPU time (user
# + sys, getrusage through bash's time), which others' load on the
# machine moves far less than the wall times.
# Each ratio is the median over the reps of the ratio of that rep's two
# runs. Targets: scan within 3x of cat when quiet (wall, and CPU time
# pinned beside it); scan busy within 1.2x of scan quiet; each line says
# MET or MISSED. The load average before and after is printed (other
# work on the machine moves every figure: read the ratios, each made of
# runs seconds apart).
# REPS (default 5), BENCH_DIR (default $TMPDIR or /tmp).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
model=$top/build/tests/wire/model
nf=$top/build/naglefix
REPS=${REPS:-5}
export LC_ALL=C
[ -x "$model" ] && [ -x "$nf" ] || { echo "bench scan_busy: run make first" >&2; exit 2; }
for tool in tshark taskset; do
	command -v "$tool" >/dev/null || { echo "bench scan_busy: $tool is missing (tests/install-deps.sh)" >&2; exit 2; }
done
cpus=$(nproc)
if ((cpus < 2)); then
	echo "bench scan_busy: one CPU: no other core to keep busy"
	exit 0
fi
dir=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/nf-bench-busy.XXXXXX") || exit 2
busy=""
trap 'if [ -n "$busy" ]; then kill "$busy" 2>/dev/null; fi; rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
cap=$dir/busy.pcap

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }

# timed LABEL CMD...: CMD's wall time (s) appended to $dir/LABEL.runs.
timed() {
	local label=$1 t0 rc
	shift
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>"$dir/$label.err"
	rc=$?
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f\n", b - a }' >>"$dir/$label.runs"
	return $rc
}

# cputime LABEL CMD...: CMD's user + sys seconds, pinned to the first CPU,
# appended to $dir/LABEL.runs.
cputime() {
	local label=$1 TIMEFORMAT='%3U %3S' t rc
	shift
	{ t=$( { time taskset -c 0 "$@" >/dev/null 2>"$dir/$label.err"; } 2>&1); }
	rc=$?
	awk '{ printf "%.4f\n", $1 + $2 }' <<<"$t" >>"$dir/$label.runs"
	return $rc
}

# busy_on / busy_off: a shell loop that never sleeps, pinned to the last CPU.
busy_on() {
	taskset -c "$((cpus - 1))" sh -c 'while :; do :; done' &
	busy=$!
	sleep 0.2 # it has the CPU
}
busy_off() {
	kill "$busy" 2>/dev/null
	wait "$busy" 2>/dev/null
	busy=""
}

echo
echo "naglefix scan with the other core busy ($(date -u +%Y-%m-%d), $cpus cores)"
loadavg() { cut -d ' ' -f 1-3 /proc/loadavg; }
load0=$(loadavg)
if ! timeout 600 "$model" -o "$cap" --conns 45000 --concurrent 45000 --rounds 10 --seed 11 \
	--truth summary >"$dir/truth"; then
	echo "bench scan_busy: the model failed" >&2
	exit 1
fi
printf 'capture: %s packets, %s connections, %s MB\n' \
	"$(sed -n 's/.*packets=\([0-9]*\).*/\1/p' "$dir/truth")" \
	"$(sed -n 's/^summary conns=\([0-9]*\).*/\1/p' "$dir/truth")" "$(($(stat -c %s "$cap") / 1000000))"
cat "$cap" >/dev/null # into the page cache before the first rep

failed=0
for ((rep = 0; rep < REPS; rep++)); do
	timed cat-quiet sh -c 'exec cat "$1" >/dev/null' sh "$cap" || failed=1
	timed scan-quiet "$nf" scan "$cap" || failed=1
	cputime cat-quiet-cpu cat "$cap" || failed=1
	cputime scan-quiet-cpu "$nf" scan "$cap" || failed=1
	busy_on
	timed cat-busy sh -c 'exec cat "$1" >/dev/null' sh "$cap" || failed=1
	timed scan-busy "$nf" scan "$cap" || failed=1
	cputime cat-busy-cpu cat "$cap" || failed=1
	cputime scan-busy-cpu "$nf" scan "$cap" || failed=1
	busy_off
done
timed tshark-quiet timeout 900 tshark -r "$cap" -q -z conv,tcp || failed=1
busy_on
timed tshark-busy timeout 900 tshark -r "$cap" -q -z conv,tcp || failed=1
busy_off
((failed == 0)) || echo "bench scan_busy: a run failed"
echo "load average (1, 5, 15 min): $load0 before, $(loadavg) after"

col() { median <"$dir/$1.runs"; }
ratio() { paste -d ' ' "$dir/$1.runs" "$dir/$2.runs" | awk '$2 > 0 { print $1 / $2 }' | median; }

printf '| %-28s | %10s | %10s |\n' "wall s (median of $REPS)" "quiet" "busy"
printf '|%s|%s|%s|\n' "------------------------------" "------------" "------------"
for l in cat scan tshark; do
	printf '| %-28s | %10.3f | %10.3f |\n' "$l" "$(col "$l-quiet")" "$(col "$l-busy")"
done
for l in cat scan; do
	printf '| %-28s | %10.3f | %10.3f |\n' "$l CPU s, pinned" "$(col "$l-quiet-cpu")" "$(col "$l-busy-cpu")"
done
awk -v sq="$(ratio scan-quiet cat-quiet)" -v sb="$(ratio scan-busy cat-busy)" \
	-v bq="$(ratio scan-busy scan-quiet)" -v cb="$(ratio cat-busy cat-quiet)" \
	-v tq="$(col tshark-quiet)" -v tb="$(col tshark-busy)" -v s="$(col scan-quiet)" \
	-v s2="$(col scan-busy)" -v cq="$(ratio scan-quiet-cpu cat-quiet-cpu)" \
	-v cbq="$(ratio scan-busy-cpu scan-quiet-cpu)" '
BEGIN {
	printf "%-44s %7.2fx  (target <= 3)  %s\n", "scan / cat time, quiet", sq, (sq <= 3 ? "MET" : "MISSED")
	printf "%-44s %7.2fx  (target <= 3)  %s\n", "scan / cat CPU time pinned, quiet", cq, (cq <= 3 ? "MET" : "MISSED")
	printf "%-44s %7.2fx\n", "scan busy / scan quiet CPU time pinned", cbq
	printf "%-44s %7.2fx\n", "scan / cat time, other core busy", sb
	printf "%-44s %7.2fx  (target <= 1.2)  %s\n", "scan busy / scan quiet", bq, (bq <= 1.2 ? "MET" : "MISSED")
	printf "%-44s %7.2fx\n", "cat busy / cat quiet", cb
	printf "%-44s %7.1fx quiet, %.1fx busy\n", "tshark / scan time", tq / s, tb / s2
}'
