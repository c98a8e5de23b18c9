#!/usr/bin/env bash
# t_usage.sh - the usage of naglefix watch (`make test-watch` runs it): its
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
usage_start "make test-watch"

help_of cli-help-watch watch
usage_says cli-watch-unknown-option "naglefix watch: unknown option '--b\x1bgus'" watch $'--b\egus'
usage_says cli-watch-unknown-short "naglefix watch: unknown option '-x'" watch -x
usage_says cli-watch-needs-argument "naglefix watch: option '-t' (--time) needs an argument" watch -t
usage_says cli-watch-bad-seconds "naglefix watch: -t needs a number of seconds > 0, not 'a\x1bb'" watch -t $'a\eb'
usage_says cli-watch-stray-word "naglefix watch: unexpected argument 'a\x1bb'" watch $'a\eb'
usage_says cli-watch-empty-netns "naglefix watch: --netns needs a NAME, PATH or PID" watch --netns ''
finish
