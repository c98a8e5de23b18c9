#!/usr/bin/env bash
# run.sh - watch's metrics' tests (`make test-metrics`): every unit-test
# program build/tests/metrics/check_* (Check: the series and their text,
# the request reader, the endpoint on loopback with the test's clock),
# then every script tests/metrics/t_*.sh (watch --metrics scraped by a
# real Prometheus, node_exporter reading --metrics-file, the alert rules
# under promtool, bad clients against a running watch, the service
# unit's hardening), each ending with its counts. Ends with the sum in
# one "N passed, M failed" line; exit status 0 iff nothing failed and
# every part ran. T=pattern picks tests by name in the programs and the
# scripts alike (tests/lib.sh); SUITE= and CASE= pick a Check suite or
# case of the programs, and then no script runs (they have neither).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

for t in build/tests/metrics/check_*; do
	[ -x "$t" ] || continue
	check_part tests/metrics "$t"
done
if [[ -n ${SUITE:-}${CASE:-} ]]; then
	echo "note: SUITE and CASE pick the programs' tests: no script runs"
else
	for s in tests/metrics/t_*.sh; do
		[ -e "$s" ] || continue
		part "${s##*/}" bash "$s"
	done
fi
finish
