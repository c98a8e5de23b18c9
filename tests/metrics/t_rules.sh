#!/usr/bin/env bash
# t_rules.sh: what conf/ gives a Prometheus, judged by promtool (issue 30):
# conf/naglefix-alerts.yml passes `promtool check rules` and its unit test
# tests/metrics/alerts_test.yml (`promtool test rules`: NaglefixStalls
# fires for a holder stalling 10 minutes, with its fix in the labels and
# the annotations, not for one stall; the drops and overflow alerts fire
# theirs); a prometheus.yml made of conf/naglefix-scrape.yml's job and the
# rules passes `promtool check config`. (t_prometheus.sh loads both into
# a running Prometheus.) Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
export LC_ALL=C
W=$TOP/build/metrics-rules
rm -rf "$W"
mkdir -p "$W"

if ! command -v promtool >/dev/null; then
    fail "t_rules" "no promtool: run tests/install-deps.sh"
    finish
    exit
fi

if selected "promtool check rules conf/naglefix-alerts.yml"; then
    if promtool check rules "$TOP/conf/naglefix-alerts.yml" >"$W/check.out" 2>&1; then
        pass "promtool check rules conf/naglefix-alerts.yml: $(grep -o '[0-9]* rules found' "$W/check.out")"
    else
        fail "promtool check rules conf/naglefix-alerts.yml" "" "$W/check.out"
    fi
fi
if selected "promtool test rules alerts_test.yml"; then
    if (cd "$HERE" && promtool test rules alerts_test.yml) >"$W/test.out" 2>&1; then
        pass "promtool test rules alerts_test.yml: $(grep -c 'eval_time' "$HERE/alerts_test.yml") evaluations as expected"
    else
        fail "promtool test rules alerts_test.yml" "" "$W/test.out"
    fi
fi
if selected "promtool check config: the scrape job and the rules"; then
    {
        printf 'rule_files:\n  - %s/conf/naglefix-alerts.yml\n' "$TOP"
        cat "$TOP/conf/naglefix-scrape.yml"
    } >"$W/prometheus.yml"
    if promtool check config "$W/prometheus.yml" >"$W/config.out" 2>&1; then
        pass "promtool check config: conf/naglefix-scrape.yml's job and the rules"
    else
        fail "promtool check config: the scrape job and the rules" "" "$W/config.out"
    fi
fi
finish
