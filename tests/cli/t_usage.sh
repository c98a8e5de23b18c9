#!/usr/bin/env bash
# t_usage.sh - the usage of naglefix's run mode and of naglefix check
# (`make test-cli` runs it): --help and --version, and each usage error
# (status 125, one line naming what is wrong; tests/usage.sh). The other
# commands' usage checks are in their own suites. Ends with "N passed,
# M failed". T=pattern runs only the checks whose name it matches.
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=../usage.sh
. "$HERE/../usage.sh"
usage_start "make test-cli"
BAD="$TOP/tests/integration/conf/bad-action.conf"

cli_help() {
    local out rc
    if selected cli-help; then
        out=$(timeout "$USAGE_LIMIT" "$NAGLEFIX" --help 2>&1)
        rc=$?
        if ((rc != 0)) || [[ $out != usage:* ]]; then fail cli-help "status $rc: '$out'"; else pass cli-help; fi
    fi
    selected cli-version || return 0
    out=$(timeout "$USAGE_LIMIT" "$NAGLEFIX" --version 2>&1)
    rc=$?
    if ((rc != 0)) || [[ ! $out =~ ^naglefix\ [0-9]+\.[0-9]+ ]]; then
        fail cli-version "status $rc: '$out'"
    else
        pass cli-version
    fi
}
cli_help

help_of cli-help-main
help_of cli-help-check check

expect_usage cli-unknown-option --bogus true
expect_usage cli-bad-mode -m fastest true
expect_usage cli-option-without-argument -c
expect_usage cli-no-command
expect_usage cli-no-command-after-options -m nodelay --
expect_usage cli-check-two-files check "$BAD" "$BAD"
expect_usage cli-empty-config -c '' true
expect_usage cli-empty-log -l '' true

usage_says cli-unknown-option-quoted "naglefix: unknown option '--fo\x1bo'" $'--fo\eo' true
usage_says cli-unknown-short-option "naglefix: unknown option '-x'" -xc FILE true
usage_says cli-option-needs-argument "naglefix: option '-c' (--config) needs an argument" --config
usage_says cli-short-option-needs-argument "naglefix: option '-m' (--mode) needs an argument" -m
usage_says cli-bad-mode-quoted "unknown action 'fa\x1b[31mst'" -m $'fa\e[31mst' true
usage_says cli-check-names-option "naglefix check: unknown option '--bogus'" check --bogus
usage_says cli-check-two-files-said "naglefix check: one FILE at most" check "$BAD" "$BAD"
finish
