#!/usr/bin/env bash
# Runs every test suite of naglefix (what `make test` calls) and ends with
# one line "N passed, M failed" summing them all. Exits non-zero on any
# failure, or if a suite could not run at all. Each suite's closing line
# "== NAME: N passed, M failed in S s" and the line "== all: S s" before
# the last say where the run's time went.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
unset T SUITE CASE # a filter is for one suite (tests/README.md): here every test runs
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/tests/lib.sh"
start_all=$EPOCHREALTIME

# run_suite NAME CMD...: runs a suite as a part (lib.sh: its output, its
# counts added to the totals) and says its counts and its seconds.
run_suite() {
	local name=$1 start=$EPOCHREALTIME
	shift
	part "$name" "$@"
	echo "== $name: $TALLY_PASSED passed, $TALLY_FAILED failed in $(elapsed "$start") s"
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
run_suite watch make -s test-watch
run_suite metrics make -s test-metrics
run_suite fix make -s test-fix
run_suite attach make -s test-attach
run_suite image make -s test-image
run_suite bounds make -s test-bounds
run_suite install tests/install/run.sh
run_suite deb make -s test-deb
run_suite man make -s test-man
run_suite readme make -s test-readme
run_suite stress make -s test-stress
run_suite security make -s test-security
run_suite sanitize make -s test-sanitize
# Fuzzing here is a regression check, 15 s a target (FUZZ_TIME, if set,
# wins): each target replays its committed seed corpus and what earlier
# runs found (well under a second) and then searches on for some hundred
# thousand inputs, and its canary proves the run can fail. The search
# itself, 60 s a target, is `make fuzz` (tests/README.md).
run_suite fuzz env FUZZ_TIME="${FUZZ_TIME:-15}" make -s fuzz
run_suite musl make -s test-musl
run_suite difftest make -s difftest
run_suite external make -s test-external
run_suite vm make -s test-vm

echo "== all: $(elapsed "$start_all") s"
finish
