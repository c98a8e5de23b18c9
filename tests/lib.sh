# lib.sh: what the test runners share: the counts, the PASS/FAIL/SKIP lines,
# the closing "N passed, M failed" that tests/run-all.sh reads, and the name
# filter T.
# Source it from a runner (bash, set -u). Sourcing sets PASSED=0, FAILED=0,
# SELECTED=0 and FAIL_TAIL=20, and T to "" if unset, and defines the
# functions below; it sets no trap, makes no directory and leaves the
# environment alone. Provides:
#   selected NAME              true if the name filter T selects the check
#                              NAME: T unset or empty, or T (a shell pattern)
#                              matches somewhere in NAME (T=test_reuse:
#                              "test_reuse closed-mid-send"; T='rtt-*-fast').
#                              A runner asks before it runs a check.
#   any_selected NAME...       true if T selects any of the NAMEs (for a
#                              set-up several checks share), counting none
#   pass NAME                  prints "PASS NAME"; counts a pass
#   fail NAME [WHY [LOG]]      prints "FAIL NAME: WHY" ("FAIL NAME" with no WHY),
#                              then the last FAIL_TAIL lines of LOG, indented,
#                              if LOG is not empty; counts a failure
#   skip NAME WHY              prints "SKIP NAME: WHY"; counts neither way
#   judge NAME RC START LOG [HINT [DETAIL]]
#                              the verdict on a test program run under
#                              `timeout $LIMIT`: status 0 passes (with the
#                              seconds since START), 77 skips (the reason
#                              from its first "SKIP x: why" line), a timeout
#                              (with HINT) or a signal fails, as does any
#                              other status (with DETAIL)
#   finish                     prints "N passed, M failed"; status 0 iff M == 0,
#                              so it is a runner's last command. Before it,
#                              "SKIP T: ..." if T selected no check here
#   elapsed START              seconds since START (an $EPOCHREALTIME), as
#                              "%.2f"; needs LC_ALL=C (a dot in the clock)
#   scratch_dir PREFIX         makes the directory $TMP, removed on exit (INT
#                              and TERM exit 130), or exits 1
#   clean_env [VAR...]         unsets LD_PRELOAD, NAGLEFIX_MODE, NAGLEFIX_CONF,
#                              NAGLEFIX_LOG, NAGLEFIX_REACH, NAGLEFIX_SAID and
#                              each VAR, so nothing from the caller's
#                              environment configures a test
#   need_built MAKECMD FILE... exits 2, saying to run MAKECMD, if a FILE is missing
#   fresh_logs DIR EXT...      makes DIR and removes its *.EXT of an earlier run
#   note_etc_conf WHAT         prints "note: /etc/naglefix.conf exists; WHAT" if
#                              it does (the library reads it when nothing else
#                              names a config)
# A runner whose failures show more than a log's tail (sanitize, fuzz)
# defines its own fail after sourcing this one; it adds 1 to FAILED too.
# shellcheck shell=bash

PASSED=0
FAILED=0
SELECTED=0
FAIL_TAIL=20
T=${T:-}

selected() {
    # shellcheck disable=SC2053 # T is a pattern
    [[ -z ${T:-} || $1 == *${T:-}* ]] || return 1
    SELECTED=$((SELECTED + 1))
}

pass() {
    echo "PASS $1"
    PASSED=$((PASSED + 1))
}

fail() {
    echo "FAIL $1${2:+: $2}"
    [[ -n ${3:-} && -s ${3:-} ]] && tail -n "$FAIL_TAIL" "$3" | sed 's/^/    /'
    FAILED=$((FAILED + 1))
}

skip() {
    echo "SKIP $1: $2"
}

judge() {
    local name=$1 rc=$2 start=$3 log=$4 hint=${5:-} detail=${6:-}
    if ((rc == 0)); then
        pass "$name ($(elapsed "$start") s)"
    elif ((rc == 77)); then
        skip "$name" "$(sed -n 's/^SKIP [^:]*: //p' "$log" | head -n 1)"
    elif ((rc == 124 || rc == 137)); then
        fail "$name" "timed out after $LIMIT s${hint:+ $hint}" "$log"
    elif ((rc > 128)); then
        fail "$name" "killed by signal $((rc - 128))" "$log"
    else
        fail "$name" "exit status $rc${detail:+: $detail}" "$log"
    fi
}

any_selected() {
    local name
    for name in "$@"; do
        # shellcheck disable=SC2053 # T is a pattern
        [[ -z ${T:-} || $name == *${T:-}* ]] && return 0
    done
    return 1
}

finish() {
    if [[ -n ${T:-} ]] && ((SELECTED == 0)); then
        skip T "'$T' names no check of this suite"
    fi
    echo "$PASSED passed, $FAILED failed"
    ((FAILED == 0))
}

elapsed() {
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}

scratch_dir() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
    trap 'rm -rf "$TMP"' EXIT
    trap 'exit 130' INT TERM
}

# shellcheck disable=SC2120 # most runners unset only the four
clean_env() {
    unset LD_PRELOAD NAGLEFIX_MODE NAGLEFIX_CONF NAGLEFIX_LOG NAGLEFIX_REACH NAGLEFIX_SAID "$@"
}

need_built() {
    local make=$1 f
    shift
    for f in "$@"; do
        [[ -e $f ]] || { echo "run.sh: $f is missing: run '$make'" >&2; exit 2; }
    done
}

fresh_logs() {
    local dir=$1 ext
    shift
    mkdir -p "$dir"
    for ext in "$@"; do
        rm -f "$dir"/*."$ext"
    done
}

note_etc_conf() {
    if [[ -e /etc/naglefix.conf ]]; then
        echo "note: /etc/naglefix.conf exists; $1"
    fi
}
