#!/usr/bin/env bash
# run.sh: the differential test (make difftest). For each seed, dt_run runs
# dt_prog without the library and with it under each action and compares
# (see dt_run.c); then every op list in regress/ is replayed. Failing seeds
# are shrunk (the first MAX_SHRINK of them, one per kind of difference) to a
# minimal op list with the command that replays it.
#   run.sh [-n SEEDS] [-s FIRST] [-a "ACTIONS"] [-j JOBS]
# Default (the CI quota): seeds 1..500 under coalesce, 1..200 also under
# pass, nodelay, audit, auto and quickack. With -n: SEEDS seeds from FIRST
# under ACTIONS (default all six). Ends with "N passed, M failed", one count per seed x
# action; exit status 1 if any failed. T=pattern runs only the seeds and
# op lists under the actions it matches, named as the PASS lines name them
# ("17 coalesce", "01-sendfile64.ops nodelay"; tests/lib.sh).
# DT_AVOID=SENDFILE64,STDIO,backlog,... leaves out of the generated lists what
# it names (see dt_avoid in dt_gen.h): to search past bugs already known.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
. tests/lib.sh
clean_env

n='' first=1 actions='' jobs=2
while getopts n:s:a:j: o; do
	case $o in
	n) n=$OPTARG ;;
	s) first=$OPTARG ;;
	a) actions=$OPTARG ;;
	j) jobs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
MAX_SHRINK=${MAX_SHRINK:-3}
B=build
need_built "make difftest" $B/libnaglefix.so $B/tests/difftest/dt_prog $B/tests/difftest/dt_run \
	$B/tests/difftest/dt_clock_check
lib=$top/$B/libnaglefix.so
work=${DT_WORK:-$top/$B/difftest}
rm -rf "$work"
mkdir -p "$work"
dt=(env -u LD_PRELOAD "$top/$B/tests/difftest/dt_run" -p "$top/$B/tests/difftest/dt_prog" -l "$lib" -w "$work")
log=$work/results
start=$EPOCHREALTIME

# One line per seed: SEED ACTIONS...
plan() {
	if [ -n "$n" ]; then
		for ((s = first; s < first + n; s++)); do echo "$s ${actions:-coalesce pass nodelay audit auto quickack}"; done
	else
		for ((s = 1; s <= 500; s++)); do
			if [ "$s" -le 200 ]; then echo "$s coalesce pass nodelay audit auto quickack"; else echo "$s coalesce"; fi
		done
	fi
}

# pick: "NAME ACTION..." lines cut to the actions T selects ("NAME ACTION"
# as the PASS lines say it: a file by its name only), a line left with
# none dropped.
pick() {
	local name rest a keep
	while read -r name rest; do
		keep=''
		for a in $rest; do
			any_selected "${name##*/} $a" && keep+=" $a"
		done
		[ -n "$keep" ] && echo "$name$keep"
	done
}

# The seeds, then the regression corpus (always replayed, under each
# action it names): "NAME ACTION..." lines, dealt out in turn to JOBS
# dt_run -L processes (one process runs many: no shell and no exec a seed).
{
	plan
	for f in tests/difftest/regress/*.ops; do
		[ -e "$f" ] || continue
		acts=$(sed -n 's/^# actions: //p' "$f" | head -n 1)
		echo "$f ${acts:-coalesce}"
	done
} | pick >"$work/plan"
# the clock that tells a hang from a run kept off the CPU (dt_clock.h):
# its checks take about 3-4 s
if any_selected "clock: a run"; then
	"$top/$B/tests/difftest/dt_clock_check" >"$work/clock" 2>&1
	grep -q ' passed, ' "$work/clock" || echo "FAIL clock: a run's clock checked: no result line ($work/clock)" >>"$work/clock"
	grep -E '^(PASS|FAIL|SKIP) ' "$work/clock"
fi
for ((j = 0; j < jobs; j++)); do
	awk -v n="$jobs" -v j="$j" 'NR % n == j' "$work/plan" | "${dt[@]}" -L &
done >"$log" 2>&1
wait

grep -E '^(FAIL|  run directory)' "$log"
while read -r verdict name rest; do
	case $verdict in
	PASS) PASSED=$((PASSED + 1)) ;;
	FAIL) FAILED=$((FAILED + 1)) ;;
	esac
done < <(grep -E '^(PASS|FAIL) ' "$log")
SELECTED=$((PASSED + FAILED))
# every run planned reported (a dt_run that died would take the rest of
# its lines with it)
planned=$(awk '{ n += NF - 1 } END { print n + 0 }' "$work/plan")
if ((SELECTED != planned)); then
	fail "difftest: every run reported" "$SELECTED verdicts, $planned runs planned (log $log)"
fi

# print and shrink a few failing seeds (MAX_SHRINK), one per class of
# difference (the words up to the first number), hangs last: each of their
# trials costs the run limit
shrunk=0
declare -A seen=()
while read -r _ seed action why; do
	[ "$shrunk" -ge "$MAX_SHRINK" ] && break
	case $seed in *.ops) continue ;; esac
	class=$(echo "${why%%[0-9]*}" | tr -s ' ')
	class="$action $class"
	[ -n "${seen[$class]:-}" ] && continue
	seen[$class]=1
	shrunk=$((shrunk + 1))
	echo "== shrinking seed $seed under $action"
	"${dt[@]}" -a "${action%:}" -s "$seed" -S -v 2>/dev/null | sed -n '/^  ops:/,$p'
done < <(grep '^FAIL ' "$log" | sed 's/:\(.*\)/ \1/' | awk '/ hang /{h[++n]=$0; next} {print} END{for (i = 1; i <= n; i++) print h[i]}')

if [ -e "$work/clock" ]; then
	clock_p=$(grep -c '^PASS ' "$work/clock") clock_f=$(grep -c '^FAIL ' "$work/clock")
	PASSED=$((PASSED + clock_p)) FAILED=$((FAILED + clock_f))
	SELECTED=$((SELECTED + clock_p + clock_f))
fi
echo "difftest: $(grep -c . <(plan)) seeds in $(elapsed "$start") s; log in $log"
finish
