#!/usr/bin/env bash
# run.sh: legacy-program tests for naglefix (Java, Python, Node, Perl clients).
# Usage: tests/legacy/run.sh [MODE...]     (default MODE list: nodelay)
# Each split-write client must stall (>= 30 ms median) without the shim and,
# for every MODE that fixes the stall, be fast (< 5 ms) under
# `build/naglefix -m MODE`. Env: ROUNDS (default 13), SERVER_LIFETIME.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MODES=("$@")
((${#MODES[@]})) || MODES=(nodelay)
ROUNDS=${ROUNDS:-13}  # round 1 is a warm-up; the median is over ROUNDS-1 >= 10
STALL_MIN_MS=30       # a round stuck behind Nagle + delayed ACK (~40 ms)
FAST_MAX_MS=5         # a round that does not stall (~0.1 ms)

# Which modes must remove the stall; observe-only modes must leave it alone.
mode_fixes_stall() {
    case $1 in
        pass | audit) return 1 ;;
        *) return 0 ;; # nodelay, coalesce, ...
    esac
}

# check_split NAME CMD...: CMD is a split-write client command line.
check_split() {
    local name=$1 mode
    shift
    assert_ms_ge "$name split, no shim" "$(run_client none "$@")" "$STALL_MIN_MS"
    for mode in "${MODES[@]}"; do
        if mode_fixes_stall "$mode"; then
            assert_ms_lt "$name split, -m $mode" "$(run_client "$mode" "$@")" "$FAST_MAX_MS"
        else
            assert_ms_ge "$name split, -m $mode" "$(run_client "$mode" "$@")" "$STALL_MIN_MS"
        fi
    done
}

compile_java || fail "compile Java sources"
java_port="" py_port=""
start_server java-echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME" &&
    java_port=$SERVER_PORT
start_server py-server python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME" &&
    py_port=$SERVER_PORT
[[ -x $NAGLEFIX ]] || echo "note: $NAGLEFIX not built; shim checks will fail" >&2

H=127.0.0.1
check_split java java -cp "$LEGACY_BUILD" LegacyClient "$H" "$java_port" "$ROUNDS" split
check_split python python3 "$LEGACY_DIR/legacy_client.py" "$H" "$py_port" "$ROUNDS" split
check_split node node "$LEGACY_DIR/legacy_client.js" "$H" "$java_port" "$ROUNDS" split
check_split perl perl "$LEGACY_DIR/legacy_client.pl" "$H" "$java_port" "$ROUNDS" split
assert_ms_lt "java single, no shim" \
    "$(run_client none java -cp "$LEGACY_BUILD" LegacyClient "$H" "$java_port" "$ROUNDS" single)" \
    "$FAST_MAX_MS"

finish
