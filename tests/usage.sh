# usage.sh: the checks of a command's usage, which each command's suite
# runs on its own command (naglefix's run mode and check: tests/cli;
# audit and report: tests/audit; fix: tests/fix; scan: tests/wire;
# watch: tests/watch; attach and detach: tests/attach).
# Source it after tests/lib.sh; usage_start (below), or the caller, sets
# NAGLEFIX (the command) and USAGE_DIR (a directory for each check's
# NAME.out and NAME.log);
# USAGE_LIMIT, the seconds one check may take, is 30 unless set. It runs
# nothing when sourced (usage_start sets lib.sh's scratch_dir trap). Provides:
#   help_of NAME [CMD]         naglefix [CMD] --help prints the whole usage
#                              on stdout (a "usage: naglefix[ CMD]" line and
#                              at least 4 more), nothing on stderr, status 0
#   usage_says NAME TEXT ARG...  naglefix ARG... is a usage error: status
#                              125, nothing on stdout, and on stderr one line
#                              (not the help): the complaint, which has TEXT
#                              (any, if TEXT is empty) and no raw control
#                              byte (a word of the command line is quoted as
#                              \xNN: an escape sequence never reaches the
#                              terminal), ending "; try 'naglefix[ CMD]
#                              --help'" for the command CMD of ARG... if it
#                              names one
#   expect_usage NAME ARG...   a usage error, whatever its complaint says
#   usage_start TARGET         the setup of a suite's t_usage.sh: TOP,
#                              NAGLEFIX (NAGLEFIX_BUILD's command, else
#                              build/'s), a clean environment, the command
#                              built (else TARGET is named) and USAGE_DIR
# Each is one check, counted by lib.sh's pass or fail, run only if the
# name filter T selects NAME.
# shellcheck shell=bash

USAGE_LIMIT=${USAGE_LIMIT:-30}
USAGE_CMDS="check audit report fix scan watch attach detach"

help_of() {
    local name=$1 rc out="$USAGE_DIR/$1.out" log="$USAGE_DIR/$1.log"
    shift
    selected "$name" || return 0
    timeout -k 5 "$USAGE_LIMIT" "$NAGLEFIX" "$@" --help >"$out" 2>"$log"
    rc=$?
    if ((rc != 0)); then
        fail "$name" "exit status $rc, want 0" "$log"
    elif [[ -s $log ]]; then
        fail "$name" "something on stderr" "$log"
    elif ! head -n 1 "$out" | grep -q "^usage: naglefix${1:+ $1}"; then
        fail "$name" "stdout does not start with the usage" "$out"
    elif (($(wc -l <"$out") < 5)); then
        fail "$name" "under 5 lines: not the whole help" "$out"
    else
        pass "$name"
    fi
}

usage_says() {
    local name=$1 text=$2 rc cmd="" out="$USAGE_DIR/$1.out" log="$USAGE_DIR/$1.log"
    shift 2
    selected "$name" || return 0
    [[ " $USAGE_CMDS " == *" ${1-} "* ]] && cmd=" $1"
    timeout -k 5 "$USAGE_LIMIT" "$NAGLEFIX" "$@" >"$out" 2>"$log"
    rc=$?
    if ((rc != 125)); then
        fail "$name" "exit status $rc, want 125" "$log"
    elif [[ -s $out || ! -s $log ]]; then
        fail "$name" "want a complaint on stderr and nothing on stdout" "$out"
    elif ! grep -qF -- "$text" "$log"; then
        fail "$name" "stderr lacks: $text" "$log"
    elif LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$log"; then
        fail "$name" "a raw control byte on stderr" "$log"
    elif (($(wc -l <"$log") != 1)); then
        fail "$name" "$(wc -l <"$log") lines on stderr, want 1 (not the help)" "$log"
    elif ! grep -q "^naglefix$cmd: .*; try 'naglefix$cmd --help'\$" "$log"; then
        fail "$name" "want 'naglefix$cmd: WHAT; try 'naglefix$cmd --help''" "$log"
    else
        pass "$name"
    fi
}

expect_usage() { usage_says "$1" "" "${@:2}"; }

usage_start() {
    TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
    BUILD=$(cd "$TOP" && cd "${NAGLEFIX_BUILD:-build}" && pwd -P) || exit 2 # another build: make B=dir
    NAGLEFIX="$BUILD/naglefix"
    clean_env
    need_built "$1" "$NAGLEFIX"
    scratch_dir nfusage
    USAGE_DIR=$TMP
}
