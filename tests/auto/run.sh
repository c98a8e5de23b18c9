#!/usr/bin/env bash
# run.sh - the auto tests: build/tests/auto/test_auto, one run per variant
# under libnaglefix.so with NAGLEFIX_MODE=auto (no config file), its peer
# re-executed without the library (tests/common/peer.h). Each variant
# fails under NAGLEFIX_MODE=pass (its rounds stall ~40 ms), except cork,
# which checks that auto leaves a corked socket alone, and quiet-count,
# run under strace: it counts the library's SIOCOUTQNSD. Then (with no
# VARIANT named) build/tests/auto/test_auto_sends once for each send hook of
# tests/inventory/auto_sends.tsv (a split answer of two calls of it, the
# timer a second away: fails under pass, and under auto if the hook does
# not note its send), and tests/coalesce/test_integrity under auto: every
# byte, once, in order.
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
need_built "make test-auto" "$LIB" "$B/test_auto" "$B/test_auto_sends"
fresh_logs "$LOGS" log

# quiet-count: 80 + 300 messages of one send each, the timer a second
# away; the library's SIOCOUTQNSD under strace: one a read while it learns
# (64), then none (380 without the quiet rule). Between 32 and 100 (fewer
# than 32: strace did not see the library's calls, or auto never checked).
QUIET_MIN=32
QUIET_MAX=100
quiet_count() {
    local name="test_auto quiet-count" log="$LOGS/test_auto-quiet-count.log"
    local st="$LOGS/quiet-count.strace" n rc start=$EPOCHREALTIME
    if ! command -v strace >/dev/null || ! strace -o /dev/null true 2>/dev/null; then
        skip "$name" "strace cannot trace here (tests/install-deps.sh installs it; ptrace may be denied)"
        return
    fi
    (cd "$TMP" && timeout -k 5 "$LIMIT" strace -f -qq -e trace=ioctl -o "$st" env LD_PRELOAD="$LIB" \
        NAGLEFIX_CONF="$HERE/conf/flush-1s.conf" NAGLEFIX_MODE="${MODE:-auto}" "$B/test_auto" quiet-count) >"$log" 2>&1
    rc=$?
    n=$(grep -c SIOCOUTQNSD "$st")
    ((rc == 0 && (n > QUIET_MAX || n < QUIET_MIN))) && rc=1
    judge "$name" "$rc" "$start" "$log" "" "$n SIOCOUTQNSD in 380 one-send messages (want $QUIET_MIN-$QUIET_MAX)"
    echo "    the library asked the kernel $n times in 380 messages (want $QUIET_MIN-$QUIET_MAX)"
}

VARIANTS=("$@")
((${#VARIANTS[@]})) || VARIANTS=(chatty bulk reader-thread restore restore-race cork poll select epoll quiet quiet-count)
for v in "${VARIANTS[@]}"; do
    selected "test_auto $v" || continue
    [[ $v == quiet-count ]] && { quiet_count; continue; }
    log="$LOGS/test_auto-$v.log"
    conf=none # the waits: the timer a second away, so only the wait can push
    [[ $v == poll || $v == select || $v == epoll ]] && conf="$HERE/conf/flush-1s.conf"
    start=$EPOCHREALTIME
    (cd "$TMP" && timeout -k 5 "$LIMIT" env LD_PRELOAD="$LIB" NAGLEFIX_CONF="$conf" \
        NAGLEFIX_MODE="${MODE:-auto}" "$B/test_auto" "$v") >"$log" 2>&1
    judge "test_auto $v" $? "$start" "$log"
    grep -h "segments\|median\|epochs" "$log" | sed 's/^/    /'
done

# Every send hook noted: one split answer per row of auto_sends.tsv.
if [[ $# -eq 0 ]]; then
    for sym in $(grep -v '^#' "$TOP/tests/inventory/auto_sends.tsv" | grep -v '^symbol	' | cut -f1); do
        selected "test_auto_sends $sym" || continue
        log="$LOGS/test_auto_sends-$sym.log"
        start=$EPOCHREALTIME
        (cd "$TMP" && timeout -k 5 "$LIMIT" env LD_PRELOAD="$LIB" NAGLEFIX_CONF="$HERE/conf/flush-1s.conf" \
            NAGLEFIX_MODE="${MODE:-auto}" "$B/test_auto_sends" "$sym") >"$log" 2>&1
        judge "test_auto_sends $sym" $? "$start" "$log"
        grep -h "median" "$log" | sed 's/^/    /'
    done
fi

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
