#!/usr/bin/env bash
# run.sh - the command's own functions (`make test-cli`): every Check
# program build/tests/cli/check_* (src/cli's functions linked without the
# command's main), each ending with Check's line, and a SKIP line for a
# test this machine cannot run. Ends with "N passed, M failed" over them
# all; exit status 0 iff nothing failed and every program ran.
# T=pattern picks tests by name (tests/unit/unit.c's filter).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
passed=0
failed=0
ran=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in build/tests/cli/check_*; do
	[ -x "$t" ] || continue
	echo "== ${t##*/}"
	CK_DEFAULT_TIMEOUT=60 "$t" >"$log" 2>&1
	rc=$?
	grep -E '^SKIP |:[EF]:' "$log" | head -n 40
	line=$(grep '^[0-9]*%: Checks:' "$log")
	echo "${line:-FAIL ${t##*/}: no result line (exit $rc)}"
	read -r p f < <(sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' \
		"$log" | awk '{print $1-$2-$3, $2+$3}')
	[ -n "${p:-}" ] || { p=0 f=1; }
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1 && echo "FAIL ${t##*/}: exit status $rc"
	passed=$((passed + p))
	failed=$((failed + f))
	ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "FAIL: no program in build/tests/cli (make test-cli builds them)"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
