#!/usr/bin/env bash
# memccp_rounds.sh HOST:PORT ROUNDS FILE...: runs Debian's memccp
# (libmemcached-tools), unmodified, ROUNDS times, each storing every FILE
# on the memcached at HOST:PORT, and prints the wall time of one run as the
# other legacy clients print a round: "median_ms=X p99_ms=Y rounds=N"
# (round 1, a warm-up, not counted); with MEMCCP_TIMES=FILE set, also each
# counted run's time in ms, one a line in their order, into FILE (a check
# that judges each run on its own). memccp sends each file in 8 KiB
# pieces with MSG_MORE and the last one without: a last piece after a full
# segment is held by Nagle until memcached's delayed ACK, ~40 ms a file.
set -eu
export LC_ALL=C
server=$1 rounds=$2
shift 2
times=()
for ((i = 0; i < rounds; i++)); do
    t0=$EPOCHREALTIME
    memccp --servers="$server" "$@"
    t1=$EPOCHREALTIME
    ((i == 0)) && continue
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) * 1000 }')")
done
[[ -z ${MEMCCP_TIMES:-} ]] || printf '%s\n' "${times[@]}" >"$MEMCCP_TIMES"
printf '%s\n' "${times[@]}" | sort -g | awk '{ t[NR] = $1 } END {
    printf "median_ms=%.3f p99_ms=%.3f rounds=%d\n", t[int((NR + 1) / 2)], t[NR], NR }'
