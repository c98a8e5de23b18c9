# shellcheck shell=bash
# bg.sh - sourced by t_watch.sh and t_watch_fix.sh: the programs they run
# in the background while watch looks on. Uses W (the work directory),
# CLIENT_TIMEOUT (seconds) and appends to BG_PIDS (what their cleanup
# kills).

# run_bg NAME CMD...: CMD in the background through exec (its pid is
# BG_PID: env and naglefix exec too), output in $W/NAME.out and .err.
run_bg() {
    local name=$1
    shift
    (exec env -u LD_PRELOAD "$@") >"$W/$name.out" 2>"$W/$name.err" &
    BG_PID=$!
    BG_PIDS+=("$BG_PID")
}

# wait_bg NAME PID: waits for it (CLIENT_TIMEOUT at most, then kills it);
# prints the median of its "median_ms=" line, or NA.
wait_bg() {
    local name=$1 pid=$2 i m
    for ((i = 0; i < CLIENT_TIMEOUT * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    m=$(sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' "$W/$name.out" | tail -n 1)
    echo "${m:-NA}"
}
