#!/usr/bin/env bash
# run.sh - the packet side's tests (`make test-wire`): every unit-test
# program build/tests/wire/check_* (Check, deterministic, no network),
# then every script tests/wire/t_*.sh (captures of real programs and of
# modelled ends read by `naglefix scan`; watch's are tests/watch), each
# ending with its counts. Ends with the sum in one "N passed, M failed"
# line; exit status 0 iff nothing failed and every part ran.
# T=pattern picks tests by name in the programs and the scripts alike
# (tests/lib.sh); SUITE= and CASE= pick a Check suite or case of the
# programs, and then no script runs (they have neither).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

# WIRE_PART=plain runs only what judges no time (the programs and the
# scripts named below: captures on file or modelled, read by scan and by
# tshark, CPU alone), WIRE_PART=timed only the rest; tests/run-all.sh
# runs the two in different lanes. Unset or empty: all.
PLAIN_SCRIPTS=" t_decode_vs_tshark.sh t_model.sh "
WIRE_PART=${WIRE_PART:-}

if in_part "$WIRE_PART" 0; then
	for t in build/tests/wire/check_*; do
		[ -x "$t" ] || continue
		check_part tests/wire "$t"
	done
fi
if [[ -n ${SUITE:-}${CASE:-} ]]; then
	echo "note: SUITE and CASE pick the programs' tests: no script runs"
else
	for s in tests/wire/t_*.sh; do
		[ -e "$s" ] || continue
		if [[ $PLAIN_SCRIPTS == *" ${s##*/} "* ]]; then in_part "$WIRE_PART" 0; else in_part "$WIRE_PART" 1; fi ||
			continue
		part "${s##*/}" bash "$s"
	done
fi
finish
