#!/usr/bin/env bash
# t_unit.sh: conf/naglefix-watch.service, hardened to what its work needs
# (issue 30): `systemd-analyze security --offline=true` (systemd 252 reads
# the file without a running manager) rates it 3.0 or lower; the lines it
# still marks are printed, each one a need of watch's work (the unit's
# head comment says which). `systemd-analyze verify` finds nothing but
# this machine's paths (t_watch.sh). Each directive is checked where
# systemd runs it: tests/vm (make test-vm). Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
export LC_ALL=C
W=$TOP/build/metrics-unit
rm -rf "$W"
mkdir -p "$W"
UNIT=$TOP/conf/naglefix-watch.service
MAX=3.0

if ! command -v systemd-analyze >/dev/null; then
    skip "t_unit" "no systemd-analyze"
    finish
    exit
fi
if selected "systemd-analyze security: exposure at most $MAX"; then
    systemd-analyze security --offline=true "$UNIT" >"$W/security.out" 2>&1
    score=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p' "$W/security.out")
    if [[ -n $score ]] && awk -v s="$score" -v m="$MAX" 'BEGIN { exit !(s <= m) }'; then
        pass "systemd-analyze security: exposure $score (at most $MAX)"
        awk '/^- / && $NF ~ /^[0-9.]+$/ { print "    still: " $2 " (" $NF ")" }' "$W/security.out"
    else
        fail "systemd-analyze security: exposure at most $MAX" "'${score:-none}'" "$W/security.out"
    fi
fi
finish
