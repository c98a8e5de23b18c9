#!/usr/bin/env bash
# Runs every test suite of naglefix (what `make test` calls) and ends with
# one line "N passed, M failed" summing them all. Exits non-zero on any
# failure, or if a suite could not run at all.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
unset T # a name filter is for one suite (tests/README.md): here every test runs

passed=0
failed=0

# Adds the counts of a suite's closing line to the totals.
tally() {
	local name=$1 log=$2 rc=$3 p f
	if read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$log" | tail -n 1) && [ -n "$p" ]; then
		:
	elif read -r p f < <(sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' "$log" |
		awk '{print $1-$2-$3, $2+$3}' | tail -n 1) && [ -n "$p" ]; then
		:
	else
		p=0 f=1
		echo "SUITE $name: no result line (exit $rc)"
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "SUITE $name: exit status $rc"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	echo "== $name: $p passed, $f failed"
}

run_suite() {
	local name=$1 log
	shift
	log=$(mktemp)
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	tally "$name" "$log" "${PIPESTATUS[0]}"
	rm -f "$log"
}

run_suite exports make -s test-exports
run_suite layers make -s test-layers
run_suite inventory make -s test-inventory
run_suite unit make -s test-unit
run_suite cli make -s test-cli
run_suite integration make -s test-integration
run_suite legacy tests/legacy/run.sh nodelay coalesce auto quickack
run_suite coalesce make -s test-coalesce
run_suite auto make -s test-auto
run_suite audit make -s test-audit
run_suite wire make -s test-wire
run_suite metrics make -s test-metrics
run_suite fix make -s test-fix
run_suite attach make -s test-attach
run_suite bounds make -s test-bounds
run_suite install tests/install/run.sh
run_suite man make -s test-man
run_suite readme make -s test-readme
run_suite stress make -s test-stress
run_suite security make -s test-security
run_suite sanitize make -s test-sanitize
run_suite fuzz make -s fuzz
run_suite musl make -s test-musl
run_suite difftest make -s difftest
run_suite external make -s test-external
run_suite vm make -s test-vm

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
