#!/usr/bin/env bash
# t_usage.sh - the usage of naglefix audit and naglefix report (`make test-audit` runs it): its
# --help and each usage error (status 125, one line naming what is
# wrong; tests/usage.sh). Ends with "N passed, M failed".
# T=pattern runs only the checks whose name it matches; NAGLEFIX_BUILD=dir
# (as tests/integration/run.sh) checks another build's command.
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
# shellcheck source-path=SCRIPTDIR source=../usage.sh
. "$HERE/../usage.sh"
usage_start "make test-audit"

help_of cli-help-audit audit
help_of cli-help-report report
usage_says cli-report-names-option "naglefix report: unknown option '--b\x1bgus'" report $'--b\egus'
usage_says cli-report-no-log "naglefix report: no LOG" report
usage_says cli-audit-option-quoted "naglefix audit: unknown option '--b\x1bgus'" audit $'--b\egus' -- true
usage_says cli-audit-no-command "naglefix audit: no COMMAND" audit --json
finish
