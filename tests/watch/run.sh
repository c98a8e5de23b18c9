#!/usr/bin/env bash
# run.sh - `naglefix watch`'s tests (`make test-watch`): every script
# tests/watch/t_*.sh (watch on the live host, watch naming holders by
# cgroup, in network namespaces, while namespaces come and go, and watch
# --fix; t_usage.sh its --help and usage errors), each ending with its
# counts. Ends with the sum in one
# "N passed, M failed" line; exit status 0 iff nothing failed and every
# part ran. T=pattern picks checks by name (tests/lib.sh). The programs
# the scripts run are tests/programs' (with other suites) and their own;
# the ground truth they share with the wire suite's, capcheck.py, is in
# tests/wire.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

for s in tests/watch/t_*.sh; do
	[ -e "$s" ] || continue
	part "${s##*/}" bash "$s"
done
finish
