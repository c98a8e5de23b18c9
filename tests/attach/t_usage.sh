#!/usr/bin/env bash
# t_usage.sh - the usage of naglefix attach and naglefix detach (`make test-attach` runs it): its
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
usage_start "make test-attach"

help_of cli-help-attach attach
help_of cli-help-detach detach
usage_says cli-attach-unknown-option "naglefix attach: unknown option '--b\x1bgus'" attach $'--b\egus'
usage_says cli-attach-needs-argument "naglefix attach: option '-m' (--mode) needs an argument" attach -m
usage_says cli-detach-unknown-option "naglefix detach: unknown option '--b\x1bgus'" detach $'--b\egus'
finish
