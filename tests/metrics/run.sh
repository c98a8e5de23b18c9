#!/usr/bin/env bash
# run.sh - watch's metrics' tests (`make test-metrics`): every unit-test
# program build/tests/metrics/check_* (Check: the series and their text,
# the request reader, the endpoint on loopback with the test's clock),
# then every script tests/metrics/t_*.sh (watch --metrics scraped by a
# real Prometheus, node_exporter reading --metrics-file, the alert rules
# under promtool, bad clients against a running watch, the service
# unit's hardening), each ending with "N passed, M failed". Ends with the
# sum in one such line; exit status 0 iff nothing failed and every part
# ran. T=pattern is passed on to the scripts (tests/lib.sh's name filter).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
passed=0
failed=0

# count LOG RC: adds LOG's closing counts (Check's or ours) to the totals.
count() {
	local log=$1 rc=$2 p f
	if read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$log" | tail -n 1) && [ -n "$p" ]; then
		:
	elif read -r p f < <(sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' "$log" |
		awk '{print $1-$2-$3, $2+$3}' | tail -n 1) && [ -n "$p" ]; then
		:
	else
		p=0 f=1
		echo "FAIL $3: no result line (exit $rc)"
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "FAIL $3: exit status $rc"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in build/tests/metrics/check_*; do
	[ -x "$t" ] || continue
	echo "== ${t##*/}"
	(cd tests/metrics && CK_DEFAULT_TIMEOUT=60 "../../$t") >"$log" 2>&1
	rc=$?
	grep -v '^[0-9]*%:' "$log" | grep -E ':[EF]:' | head -n 40
	grep '^[0-9]*%:' "$log"
	count "$log" "$rc" "${t##*/}"
done
for s in tests/metrics/t_*.sh; do
	[ -e "$s" ] || continue
	echo "== ${s##*/}"
	bash "$s" 2>&1 | tee "$log"
	count "$log" "${PIPESTATUS[0]}" "${s##*/}"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
