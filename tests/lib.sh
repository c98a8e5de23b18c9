# lib.sh: what the test runners share: the counts, the PASS/FAIL/SKIP lines,
# the closing "N passed, M failed" that tests/run-all.sh reads (and the one
# way to read it back, tally), the name filter T, and the parts of a suite
# run as one (part, check_part).
# Source it from a runner (bash, set -u). Sourcing sets PASSED=0, FAILED=0,
# SELECTED=0 and FAIL_TAIL=20, and T to "" if unset, and defines the
# functions below; it sets no trap, makes no directory and leaves the
# environment alone. Provides:
#   selected NAME              true if the name filter T selects the check
#                              NAME: T unset or empty, or T (a shell pattern)
#                              matches somewhere in NAME (T=test_reuse:
#                              "test_reuse closed-mid-send"; T='rtt-*-fast').
#                              A runner asks before it runs a check. A
#                              runner that defines part_has NAME (true if
#                              the check NAME is in the part of the suite
#                              this run makes) is asked too.
#   any_selected NAME...       true if T selects any of the NAMEs (for a
#                              set-up several checks share), counting none
#   pass NAME                  prints "PASS NAME"; counts a pass
#   fail NAME [WHY [LOG]]      prints "FAIL NAME: WHY" ("FAIL NAME" with no WHY),
#                              then the last FAIL_TAIL lines of LOG, indented,
#                              if LOG is not empty; counts a failure
#   skip NAME WHY              prints "SKIP NAME: WHY"; counts neither way
#   only_selected              from then on, pass prints and counts only
#                              the checks T selects; fail still says every
#                              failure. For a runner whose runs (a daemon,
#                              a machine) each serve many checks, which all
#                              run
#   judge NAME RC START LOG [HINT [DETAIL]]
#                              the verdict on a test program run under
#                              `timeout $LIMIT`: status 0 passes (with the
#                              seconds since START), 77 skips (the reason
#                              from its first "SKIP x: why" line), a timeout
#                              (with HINT) or a signal fails, as does any
#                              other status (with DETAIL)
#   finish                     prints "N passed, M failed"; status 0 iff M == 0,
#                              so it is a runner's last command. Before it,
#                              "SKIP T: ..." if T (or SUITE, CASE) selected
#                              no check here
#   tally NAME LOG RC          adds to the counts those LOG ends with, LOG
#                              the output of NAME (a program, a script, a
#                              suite) that exited RC: its last "N passed, M
#                              failed" line, else Check's "N%: Checks: C,
#                              Failures: F, Errors: E" (C-F-E passed, F+E
#                              failed). No such line, or RC non-zero with
#                              no failure counted, is one failure, said on a
#                              FAIL line. Sets TALLY_PASSED and TALLY_FAILED
#                              to what it added
#   part NAME CMD...           runs CMD, a part of the suite (a script that
#                              ends with finish, a Check program), after
#                              "== NAME": shows its output as it comes but
#                              its "SKIP T: ..." line, and tallies it. A part
#                              without that line counts as a selection
#   check_part DIR PROG        part for the Check program PROG (a path from
#                              the runner's directory), run from DIR (where
#                              its fixtures are), named by its file name:
#                              CK_DEFAULT_TIMEOUT 60 unless set; SUITE and
#                              CASE, if set, as Check's CK_RUN_SUITE and
#                              CK_RUN_CASE (T reaches it by itself:
#                              tests/unit/unit.c)
#   in_part PART TIMED         for a suite run as a timed and a plain part
#                              (tests/run-all.sh's lanes): true if a file
#                              that judges a time (TIMED 1) or none (0)
#                              belongs to PART (timed, plain; empty: all)
#   elapsed START              seconds since START (an $EPOCHREALTIME), as
#                              "%.2f", in any locale (a comma in the clock
#                              is read as a dot)
#   wait_until SECONDS CMD...  runs CMD (a command, a function) every 0.05 s
#                              until it succeeds: status 0 then, at once;
#                              status 1 if SECONDS (a whole or decimal
#                              number: 5, 0.5) pass first. CMD runs at
#                              least once; its output is the caller's. For
#                              an event (a line in a log: `wait_until 5 grep
#                              -qs '^PORT' FILE`, a socket, a file), never
#                              for a time that is itself measured
#   gone PID                   true if no process PID is left (for
#                              `wait_until 10 gone PID`)
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
    declare -F part_has >/dev/null && ! part_has "$1" && return 1
    SELECTED=$((SELECTED + 1))
}

pass() {
    [[ -z ${ONLY_SELECTED:-} ]] || selected "$1" || return 0
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

only_selected() {
    ONLY_SELECTED=1
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
        declare -F part_has >/dev/null && ! part_has "$name" && continue
        # shellcheck disable=SC2053 # T is a pattern
        [[ -z ${T:-} || $name == *${T:-}* ]] && return 0
    done
    return 1
}

finish() {
    local what=${T:+\'$T\'}
    if [[ -n ${SUITE:-} ]]; then what+="${what:+ }SUITE='$SUITE'"; fi
    if [[ -n ${CASE:-} ]]; then what+="${what:+ }CASE='$CASE'"; fi
    if [[ -n $what ]] && ((SELECTED == 0)); then
        skip T "$what names no check of this suite"
    fi
    echo "$PASSED passed, $FAILED failed"
    ((FAILED == 0))
}

tally() {
    local name=$1 log=$2 rc=$3 p f
    if read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$log" | tail -n 1) &&
        [[ -n $p ]]; then
        :
    elif read -r p f < <(sed -n 's/.*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' \
        "$log" | awk '{ print $1 - $2 - $3, $2 + $3 }' | tail -n 1) && [[ -n $p ]]; then
        :
    else
        p=0 f=1
        echo "FAIL $name: no result line (exit status $rc)"
    fi
    if ((rc != 0 && f == 0)); then
        f=1
        echo "FAIL $name: exit status $rc"
    fi
    # shellcheck disable=SC2034 # read by the runner (run-all.sh)
    TALLY_PASSED=$p TALLY_FAILED=$f
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
}

part() {
    local name=$1 log rc
    shift
    log=$(mktemp "${TMPDIR:-/tmp}/nfpart.XXXXXX") || exit 2
    echo "== $name"
    "$@" 2>&1 | tee "$log" | grep --line-buffered -v '^SKIP T: '
    rc=${PIPESTATUS[0]}
    grep -q '^SKIP T: ' "$log" || SELECTED=$((SELECTED + 1))
    tally "$name" "$log" "$rc"
    rm -f "$log"
}

check_part() {
    local dir=$1 prog=$2
    [[ $prog == /* ]] || prog=$PWD/$prog
    part "${prog##*/}" env -C "$dir" CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-60}" \
        ${SUITE:+CK_RUN_SUITE="$SUITE"} ${CASE:+CK_RUN_CASE="$CASE"} "$prog"
}

in_part() {
    case $1 in
    timed) (($2)) ;;
    plain) ((!$2)) ;;
    *) true ;;
    esac
}

elapsed() {
    local now=$EPOCHREALTIME
    LC_ALL=C awk -v a="${1/,/.}" -v b="${now/,/.}" 'BEGIN { printf "%.2f", b - a }'
}

# _usec DECIMAL: the number of seconds DECIMAL (5, 0.25, 1.5) in microseconds.
_usec() {
    local whole=${1%%.*} frac=
    [[ $1 == *.* ]] && frac=${1#*.}
    frac=${frac}000000
    echo $((10#${whole:-0} * 1000000 + 10#${frac:0:6}))
}

wait_until() {
    local end now
    now=${EPOCHREALTIME//[.,]/}
    end=$((now + $(_usec "$1")))
    shift
    until "$@"; do
        now=${EPOCHREALTIME//[.,]/}
        ((now < end)) || return 1
        sleep 0.05
    done
}

gone() {
    ! kill -0 "$1" 2>/dev/null
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
