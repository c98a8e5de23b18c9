#!/usr/bin/env bash
# t_watch_cgroup.sh: each holder `naglefix watch` finds named with its
# service or container, from its process's cgroup (issue 28, item 3).
# Root only; runs in a network namespace of its own (re-executed under
# `unshare -n`). Under the cgroup2 mount it makes, as systemd and a
# container runtime would, nfwc<PID>.slice/nfwc<PID>-app.service and
# nfwc<PID>.slice/docker-<64 hex>.scope, and starts a split-writing
# client (legacy_client.py: two writes a round, Nagle on) in each (moved in
# by writing its cgroup.procs before it execs), against servers of its
# own, while `watch -l LOG` looks on; the cgroups are removed at the end.
# And a real container: Debian's podman (runc: crun refuses hybrid
# cgroups) runs split_client.c, built static, from a root directory
# (--rootfs, nothing pulled), in the test's network namespace
# (--network host), against a line-echo server here.
# Checked: the wire_stall and first-stall lines of each client's row name
# its cgroup ("nfwc<PID>-app.service", "docker-<12 hex>", and the
# container's "libpod-<12 hex>", its id as `podman ps` prints it) beside
# its pid, the table's CGROUP column and the text line too, and `naglefix
# report LOG` (table and --json) carries the name to its row; `naglefix
# fix --json --cgroup` with the container's cgroup sets its socket, its
# line naming the container. Each fails with the name left out of that
# output.
# Env: T (tests/lib.sh's name filter). Output in build/watch-cgroup/.
# Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $EUID -eq 0 && -z ${NF_WATCH_CG_NS:-} ]]; then
    exec env NF_WATCH_CG_NS=1 unshare -n bash "${BASH_SOURCE[0]}" "$@"
fi
# shellcheck source-path=SCRIPTDIR source=../programs/common.sh
. "$HERE/../programs/common.sh"
export LC_ALL=C
clean_env
W=$TOP/build/watch-cgroup
rm -rf "$W"
mkdir -p "$W/state"
# what fix --cgroup records for `naglefix fix --undo` goes here, not to /run/naglefix
export NAGLEFIX_STATE_DIR=$W/state
need_built make "$NAGLEFIX"
if [[ $EUID -ne 0 ]]; then
    skip "t_watch_cgroup" "needs root (CAP_NET_RAW, cgroups)"
    finish
    exit
fi
CLIENT_TIMEOUT=30
H=127.0.0.1
# the cgroup2 mount: the first whole one in mountinfo, as the command finds it
ROOT=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break; if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; exit } }' /proc/self/mountinfo)
SLICE=$ROOT/nfwc$$.slice
UNIT=nfwc$$-app.service
ID=$(printf '%08x' $$)0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab
ID=${ID:0:64}
if [[ -z $ROOT ]]; then
    skip "t_watch_cgroup" "no cgroup2 hierarchy is mounted"
    finish
    exit
fi
if ! mkdir "$SLICE" 2>"$W/mkdir.err"; then
    skip "t_watch_cgroup" "cannot make a cgroup under $ROOT: $(cat "$W/mkdir.err")"
    finish
    exit
fi
mkdir "$SLICE/$UNIT" "$SLICE/docker-$ID.scope"

WATCH_PID=""
BG_PIDS=()
CTR=""
on_exit() {
    local p
    [[ -z $WATCH_PID ]] || kill -KILL "$WATCH_PID" 2>/dev/null
    [[ -z $CTR ]] || podman rm -f "$CTR" >/dev/null 2>&1
    for p in "${BG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    cleanup
    rmdir "$SLICE/$UNIT" "$SLICE/docker-$ID.scope" "$SLICE" 2>/dev/null
}
trap on_exit EXIT
ip link set lo up || { fail "lo up in the test's namespace"; finish; exit; }
# shellcheck source-path=SCRIPTDIR source=bg.sh
. "$HERE/bg.sh"

start_server cg-app python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME"
port_app=$SERVER_PORT
start_server cg-docker python3 "$LEGACY_DIR/legacy_server.py" 0 "$SERVER_LIFETIME"
port_docker=$SERVER_PORT
start_server cg-podman python3 "$HERE/../fix/echo_server.py" "$H" "$SERVER_LIFETIME"
port_podman=$SERVER_PORT

# the container's root: the static client alone
mkdir -p "$W/rootfs"
podman_why=""
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
    podman_why="no podman and runc (tests/install-deps.sh installs them)"
elif ! cc -static -O2 -o "$W/rootfs/split_client" "$HERE/../programs/split_client.c" 2>"$W/cc.err"; then
    podman_why="cc -static split_client.c: $(head -n 1 "$W/cc.err")"
fi

"$NAGLEFIX" watch -l "$W/watch.log" >"$W/watch.out" 2>"$W/watch.err" &
WATCH_PID=$!
for ((i = 0; i < 50; i++)); do # its packet socket bound (a protocol in /proc/net/packet)
    awk 'NR > 1 && $4 != "0000" { f = 1 } END { exit !f }' /proc/net/packet && break
    sleep 0.05
done

# in_cgroup DIR CMD...: CMD moved into the cgroup DIR first, as a runtime does
in_cgroup='echo $$ >"$0/cgroup.procs" && exec "$@"'
run_bg app sh -c "$in_cgroup" "$SLICE/$UNIT" python3 "$LEGACY_DIR/legacy_client.py" "$H" "$port_app" 12 split
pid_app=$BG_PID
run_bg docker sh -c "$in_cgroup" "$SLICE/docker-$ID.scope" python3 "$LEGACY_DIR/legacy_client.py" "$H" "$port_docker" 12 split
pid_docker=$BG_PID
# the container (named for the cleanup; podman's own rlimits, above ours,
# would need CAP_SYS_RESOURCE: lower ones are given)
if [[ -z $podman_why ]]; then
    CTR=nfwc$$
    timeout 60 podman --runtime runc run -d --name "$CTR" --network host --ulimit nofile=1024:1024 \
        --ulimit nproc=1024:1024 --rootfs "$W/rootfs" /split_client "$H" "$port_podman" 400 \
        >/dev/null 2>"$W/podman.err"
    pid_podman=$(podman inspect -f '{{.State.Pid}}' "$CTR" 2>/dev/null)
    [[ -n $CTR && ${pid_podman:-0} != 0 ]] || podman_why="podman run: $(tail -n 1 "$W/podman.err")"
fi
med_app=$(wait_bg app "$pid_app")
med_docker=$(wait_bg docker "$pid_docker")
if [[ -z $podman_why ]]; then # fixed while it runs, after its first stalls
    for ((i = 0; i < 50; i++)); do
        grep -q "\"pid\":$pid_podman," "$W/watch.log" 2>/dev/null && break
        sleep 0.1
    done
    ctr_cgroup=$(sed -n 's/^0:://p' "/proc/$pid_podman/cgroup")
    "$NAGLEFIX" fix -m nodelay --json --cgroup "$ctr_cgroup" >"$W/podman.fix" 2>&1
    podman_fix_rc=$?
    ctr_cgroup_after=$(sed -n 's/^0:://p' "/proc/$pid_podman/cgroup")
    timeout 30 podman wait "$CTR" >/dev/null 2>&1
    podman logs "$CTR" >"$W/podman.out" 2>&1
fi
kill -INT "$WATCH_PID"
wait "$WATCH_PID"
rc=$?
WATCH_PID=""
[[ $rc == 0 ]] || fail "watch: exit 0 at SIGINT" "exit $rc" "$W/watch.err"
"$NAGLEFIX" report "$W/watch.log" >"$W/report.out" 2>"$W/report.err" || fail "report" "" "$W/report.err"
"$NAGLEFIX" report --json "$W/watch.log" >"$W/report.json" 2>>"$W/report.err" || fail "report --json" "" "$W/report.err"

# named NAME PID PORT WANT: the checks of one client, its cgroup's name WANT
named() {
    local name=$1 pid=$2 port=$3 want=$4 got row
    if selected "$name: its wire_stall line names $want"; then
        got=$(jq -r --argjson pid "$pid" 'select(.event == "wire_stall" and .pid == $pid) | .cgroup // "none"' \
            "$W/watch.log" 2>/dev/null | sort -u | tr '\n' ' ')
        if [[ $got == "$want " ]]; then
            pass "$name: its wire_stall line names $want (pid $pid)"
        else
            fail "$name: its wire_stall line names $want" "pid $pid: '${got:-no row}'" "$W/watch.log"
        fi
    fi
    if selected "$name: the table and the first line name $want"; then
        row=$(grep -E "  $want +$pid " "$W/watch.out" | grep -F "$H:$port")
        if [[ -n $row ]] && head -n 1 "$W/watch.out" | grep -q . &&
            grep -qE "^HOLDER .*  CGROUP +PROCESS$" "$W/watch.out" &&
            grep -F "$H:$port" "$W/watch.out" | grep -qE "pid $pid .*  cgroup $want  fix:"; then
            pass "$name: the table and the first line name $want"
        else
            fail "$name: the table and the first line name $want" "row '$row'" "$W/watch.out"
        fi
    fi
    if selected "$name: report's row names $want"; then
        got=$(jq -r --arg p "$H:$port" '.[] | select(.peer == $p) | .cgroup' "$W/report.json" 2>/dev/null)
        row=$(awk -v p="$H:$port" '$1 == p' "$W/report.out")
        if [[ $got == "$want" && $row == *"  $want  "* ]]; then
            pass "$name: report's row names $want"
        else
            fail "$name: report's row names $want" "--json '$got', table '$row'" "$W/report.out"
        fi
    fi
}
echo "clients' medians: app $med_app ms, docker $med_docker ms"
named "x.service under a slice" "$pid_app" "$port_app" "$UNIT"
named "docker-<64 hex>.scope" "$pid_docker" "$port_docker" "docker-${ID:0:12}"
if [[ -n $podman_why ]]; then
    skip "a podman container" "$podman_why"
else
    short=$(podman ps -a --filter "name=^$CTR\$" --format '{{.ID}}')
    echo "podman: container $short ($CTR), cgroup $ctr_cgroup; $(tail -n 1 "$W/podman.out")"
    named "a podman container" "$pid_podman" "$port_podman" "libpod-$short"
    if selected "a podman container: fix --cgroup sets it, named libpod-$short"; then
        got=$(jq -r 'select(.side == "connect") | "\(.pid) \(.cgroup) \(.result)"' "$W/podman.fix" 2>/dev/null)
        if [[ $podman_fix_rc == 0 && $got == "$pid_podman libpod-$short set" ]]; then
            pass "a podman container: fix --cgroup sets it, named libpod-$short"
        else
            fail "a podman container: fix --cgroup sets it, named libpod-$short" "exit $podman_fix_rc, '$got'; its cgroup before and after: $ctr_cgroup, $ctr_cgroup_after" "$W/podman.fix"
        fi
    fi
fi
finish
