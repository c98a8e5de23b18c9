#!/usr/bin/env bash
# run.sh - the auto tests: build/tests/auto/test_auto, one run per variant
# under libnaglefix.so with NAGLEFIX_MODE=auto (no config file), its peer
# re-executed without the library (tests/common/peer.h). Each variant
# fails under NAGLEFIX_MODE=pass (its rounds stall ~40 ms), except cork,
# which checks that auto leaves a corked socket alone. Then (with no
# VARIANT named) tests/coalesce/test_integrity under auto: every byte, once,
# in order.
# `make test-auto` builds first. Usage: tests/auto/run.sh [VARIANT...]
# Prints PASS/FAIL/SKIP lines and ends with "N passed, M failed".
# MODE=pass runs the same under another action (to see the tests notice).
# T=pattern runs only the tests whose name it matches (tests/lib.sh).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P)
B="$TOP/build/tests/auto"
LIB=${NAGLEFIX_LIB:-$TOP/build/libnaglefix.so}
LOGS="$B/logs"
LIMIT=40
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"

scratch_dir autotest
clean_env
need_built "make test-auto" "$LIB" "$B/test_auto"
fresh_logs "$LOGS" log

VARIANTS=("$@")
((${#VARIANTS[@]})) || VARIANTS=(chatty bulk reader-thread restore restore-race cork poll select epoll)
for v in "${VARIANTS[@]}"; do
    selected "test_auto $v" || continue
    log="$LOGS/test_auto-$v.log"
    conf=none # the waits: the timer a second away, so only the wait can push
    [[ $v == poll || $v == select || $v == epoll ]] && conf="$HERE/conf/flush-1s.conf"
    start=$EPOCHREALTIME
    (cd "$TMP" && timeout -k 5 "$LIMIT" env LD_PRELOAD="$LIB" NAGLEFIX_CONF="$conf" \
        NAGLEFIX_MODE="${MODE:-auto}" "$B/test_auto" "$v") >"$log" 2>&1
    judge "test_auto $v" $? "$start" "$log"
    grep -h "segments\|median\|epochs" "$log" | sed 's/^/    /'
done

# Every byte, once, in order (tests/coalesce/test_integrity: seeded write
# sizes, calls and threads, the peer hashes what it got), under auto.
if [[ $# -eq 0 ]] && selected "test_integrity"; then
    need_built "make test-coalesce" "$TOP/build/tests/coalesce/test_integrity"
    for v in single threads4 shared2; do
        selected "test_integrity $v (auto)" || continue
        log="$LOGS/test_integrity-$v.log"
        start=$EPOCHREALTIME
        (cd "$TMP" && timeout -k 5 "$LIMIT" env LD_PRELOAD="$LIB" NAGLEFIX_CONF=none \
            NAGLEFIX_MODE="${MODE:-auto}" "$TOP/build/tests/coalesce/test_integrity" "$v") >"$log" 2>&1
        judge "test_integrity $v (auto)" $? "$start" "$log"
    done
fi
finish
