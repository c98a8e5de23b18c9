#!/usr/bin/env bash
# scan_floor.sh - how near `cat FILE >/dev/null` any per-connection
# detector can come on scan_busy.sh's capture (45,000 connections live at
# once, 2,070,000 packets, 196 MB, the same model and seed), from the
# levels of tests/bench/scan_floor.c (its header says what each does):
#   true              a process started and ended, nothing read
#   cat               cat FILE >/dev/null
#   read walk hash    scan_floor at each level (SLOTS slots for the table
#   table prefetch    levels, default 131072: 34% full)
#   prefetch-2lines   prefetch, each connection two cache lines (scan's
#                     connection is three, two read by every segment)
#   mmap mmap-walk    the file mapped (MAP_POPULATE) instead of read(2),
#   mmap-prefetch     the records walked in place at that level
#   fault fault-walk  mapped and faulted in on first touch, the records
#   fault-hash        walked in place at that level
#   fault-table
#   fault-prefetch
#   fault-prefetch-2lines
#   scan              naglefix scan FILE
# each run once a rep, pinned to CPU BENCH_CPU (default 0),
# the rows in a turned order each rep (rep k starts at row k), REPS reps
# (default 7), the file in the page cache. Per row: the median wall time
# and CPU time (user + sys, wait4's, microseconds; python3 runs each), and
# the median over the reps of the row's CPU time over cat's in that rep.
# The load average before and after is printed: read the ratios only from
# a run on a quiet machine (about 1 or less). Exits 1, the ratios
# unprinted, when any run failed.
# CAP=FILE uses that capture instead of making one (it must be model.c's
# kind: pcap, Ethernet, IPv4, TCP). A file read some minutes after it
# was written made cat 1.8x slower here (tests/bench/README.md,
# 2026-12-06): compare ratios only between files of the same age.
# BENCH_DIR as scan_busy.sh's.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
model=$top/build/tests/wire/model
nf=$top/build/naglefix
floor=$top/build/tests/scan_floor
REPS=${REPS:-7}
SLOTS=${SLOTS:-131072}
BENCH_CPU=${BENCH_CPU:-0}
export LC_ALL=C
for f in "$model" "$nf" "$floor"; do
	[ -x "$f" ] || { echo "bench scan_floor: make $f first" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "bench scan_floor: python3 is missing" >&2; exit 2; }
dir=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/nf-bench-floor.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
cap=${CAP:-$dir/busy.pcap}

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
loadavg() { cut -d ' ' -f 1-3 /proc/loadavg; }

# row NAME: the command of row NAME, its words in the array cmd.
row() {
	case $1 in
	true) cmd=(true) ;;
	cat) cmd=(cat "$cap") ;;
	*-2lines) cmd=("$floor" "${1%-2lines}" "$cap" "$SLOTS" 2) ;;
	scan) cmd=("$nf" scan "$cap") ;;
	*) cmd=("$floor" "$1" "$cap" "$SLOTS") ;;
	esac
}

# timed NAME: row NAME run once pinned; its wall and CPU seconds (user +
# sys from wait4, to the microsecond: bash's time gives milliseconds, a
# tenth of cat's time here) appended to $dir/NAME.wall and $dir/NAME.cpu.
# 1 if it failed.
timed() {
	local cmd
	row "$1"
	python3 - "$BENCH_CPU" "$dir/$1" "${cmd[@]}" <<'PY'
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
out = os.open("/dev/null", os.O_WRONLY)
err = os.open(sys.argv[2] + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t0 = time.perf_counter()
pid = os.posix_spawnp(sys.argv[3], sys.argv[3:], os.environ, file_actions=[
    (os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, err, 2)])
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[2] + ".wall", "a") as f:
    f.write("%.6f\n" % wall)
with open(sys.argv[2] + ".cpu", "a") as f:
    f.write("%.6f\n" % (ru.ru_utime + ru.ru_stime))
sys.exit(0 if os.waitstatus_to_exitcode(status) == 0 else 1)
PY
}

rows=(true cat read walk hash table prefetch prefetch-2lines mmap mmap-walk mmap-prefetch
	fault fault-walk fault-hash fault-table fault-prefetch fault-prefetch-2lines scan)
echo
echo "any detector's floor against cat ($(date -u +%Y-%m-%d), $(nproc) cores, pinned to CPU $BENCH_CPU)"
load0=$(loadavg)
if [ -z "${CAP:-}" ] && ! timeout 600 "$model" -o "$cap" --conns 45000 --concurrent 45000 \
	--rounds 10 --seed 11 --truth summary >"$dir/truth"; then
	echo "bench scan_floor: the model failed" >&2
	exit 1
fi
echo "capture: $(($(stat -c %s "$cap") / 1000000)) MB; table: $SLOTS slots; $REPS reps"
cat "$cap" >/dev/null # into the page cache before the first rep
failed=()
for ((rep = 0; rep < REPS; rep++)); do
	for ((i = 0; i < ${#rows[@]}; i++)); do
		r=${rows[(rep + i) % ${#rows[@]}]}
		timed "$r" || failed+=("$r")
	done
done
echo "load average (1, 5, 15 min): $load0 before, $(loadavg) after"
if ((${#failed[@]})); then
	echo "bench scan_floor: ${#failed[@]} runs failed, no ratios" >&2
	for r in $(printf '%s\n' "${failed[@]}" | sort -u); do
		echo "  $r: $(cat "$dir/$r.err")" >&2
	done
	exit 1
fi
"$floor" table "$cap" "$SLOTS" | sed 's/ [0-9.]* s in the loop,//'

ratio() { paste -d ' ' "$dir/$1.cpu" "$dir/cat.cpu" | awk '$2 > 0 { print $1 / $2 }' | median; }
printf '| %-22s | %9s | %9s | %9s |\n' "median of $REPS" "wall s" "CPU s" "CPU / cat"
printf '|%s|%s|%s|%s|\n' "------------------------" "-----------" "-----------" "-----------"
for r in "${rows[@]}"; do
	printf '| %-22s | %9.4f | %9.4f | %8.2fx |\n' "$r" "$(median <"$dir/$r.wall")" \
		"$(median <"$dir/$r.cpu")" "$(ratio "$r")"
done
awk -v t="$(ratio table)" -v p="$(ratio prefetch)" -v s="$(ratio scan)" \
	-v mp="$(ratio mmap-prefetch)" -v ft="$(ratio fault-table)" \
	-v fp="$(ratio fault-prefetch)" 'BEGIN {
	f = t < p ? t : p
	m = ft < fp ? ft : fp
	m = mp < m ? mp : m
	printf "the floor (table or prefetch, the lower) / cat CPU   %5.2fx  (issue 35: scan <= 3x)\n", f
	printf "the mapped floor (mmap-prefetch, fault-table or\n"
	printf "  fault-prefetch, the lowest) / cat CPU              %5.2fx\n", m
	printf "scan / the floor CPU                                 %5.2fx\n", s / f
}'
