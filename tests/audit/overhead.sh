#!/usr/bin/env bash
# overhead.sh: what audit costs per write, next to no library and `pass`.
# Builds tests/audit/overhead.c into build/tests/audit-overhead and prints,
# per workload, the median of RUNS runs (default 5) of ns per write (stream
# of 64-byte writes) and ns per round trip (one 100-byte write, its echo).
# Loopback timings are noisy: compare within one run of this script. Both
# threads are pinned to one CPU (taskset, if present), which steadies the
# round trips (a context switch each way instead of cross-CPU wake-ups).
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN="$TOP/build/tests/audit-overhead"
NAGLEFIX="$TOP/build/naglefix"
RUNS=${RUNS:-5}
PIN=()
command -v taskset >/dev/null && PIN=(taskset -c 0)
mkdir -p "$TOP/build/tests"
cc -O2 -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$BIN" \
    "$TOP/tests/audit/overhead.c" -lpthread || exit 1
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

run() { # run MODE WORKLOAD N
    local mode=$1 i
    shift
    for ((i = 0; i < RUNS; i++)); do
        case $mode in
            none) ${PIN[@]+"${PIN[@]}"} "$BIN" "$@" ;;
            *) NAGLEFIX_LOG=$LOG ${PIN[@]+"${PIN[@]}"} "$NAGLEFIX" -m "$mode" -- "$BIN" "$@" ;;
        esac | awk '{print $2}'
    done | median
}

printf '%-10s %18s %8s %22s %8s\n' "library" "ns per 64 B write" "ratio" "ns per 100 B round trip" "ratio"
base_w="" base_r=""
for mode in none pass audit; do
    w=$(run "$mode" stream 300000)
    r=$(run "$mode" pingpong 30000)
    [ -z "$base_w" ] && base_w=$w base_r=$r
    printf '%-10s %18s %8s %22s %8s\n' "$mode" "$w" "$(awk -v a="$w" -v b="$base_w" 'BEGIN {printf "%.3f", a / b}')" \
        "$r" "$(awk -v a="$r" -v b="$base_r" 'BEGIN {printf "%.3f", a / b}')"
done
