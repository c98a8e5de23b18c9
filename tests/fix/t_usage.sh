#!/usr/bin/env bash
# t_usage.sh - the usage of naglefix fix (`make test-fix` runs it): its
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
usage_start "make test-fix"

help_of cli-help-fix fix
usage_says cli-fix-unknown-option "naglefix fix: unknown option '--b\x1bgus'" fix $'--b\egus' 1
usage_says cli-fix-needs-argument "naglefix fix: option '-i' (--interval) needs an argument" fix -i
usage_says cli-fix-not-a-pid "naglefix fix: not a PID: 'x\x1by'" fix -m nodelay $'x\ey'
usage_says cli-fix-no-pid "naglefix fix: no PID" fix -m nodelay
finish
