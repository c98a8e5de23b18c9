#!/usr/bin/env bash
# t_usage.sh - the usage of naglefix scan (`make test-wire` runs it): its
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
usage_start "make test-wire"

help_of cli-help-scan scan
usage_says cli-scan-unknown-option "naglefix scan: unknown option '--b\x1bgus'" scan $'--b\egus' x.pcap
usage_says cli-scan-no-capture "naglefix scan: no CAPTURE" scan --json
finish
