#!/usr/bin/env bash
# run.sh - the command's own functions (`make test-cli`): every Check
# program build/tests/cli/check_* (src/cli's functions linked without the
# command's main), each ending with Check's line, and a SKIP line for a
# test this machine cannot run; then usage_man.py: each command's --help
# against naglefix(1) and against its getopt table; then t_usage.sh: the
# run mode's and check's --help and usage errors (tests/usage.sh).
# Ends with "N passed, M failed" over them
# all; exit status 0 iff nothing failed and every program ran.
# T=pattern picks tests by name (tests/unit/unit.c's filter); SUITE= and
# CASE= pick a Check suite or case.
# CLI_PART=timed runs only the programs that judge a time (TIMED:
# check_watch_stream, whose frames are held NF_WATCH_HOLD_MS by the
# clock), CLI_PART=plain all the rest; tests/run-all.sh runs the two in
# different lanes. Unset or empty: all.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

TIMED=" check_watch_stream "
CLI_PART=${CLI_PART:-}

ran=0
for t in build/tests/cli/check_*; do
	[ -x "$t" ] || continue
	if [[ $TIMED == *" ${t##*/} "* ]]; then in_part "$CLI_PART" 1; else in_part "$CLI_PART" 0; fi ||
		continue
	check_part tests/cli "$t"
	ran=$((ran + 1))
done
((ran > 0)) || fail "test-cli" "no program in build/tests/cli (make test-cli builds them)"
if ! in_part "$CLI_PART" 0; then
	:
elif [ -x build/naglefix ]; then
	part usage_man.py python3 tests/cli/usage_man.py build/naglefix src/man/naglefix.1 src/cli
	part t_usage.sh bash tests/cli/t_usage.sh
else
	fail "usage_man.py" "no build/naglefix (make test-cli builds it)"
fi
finish
