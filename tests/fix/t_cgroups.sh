# t_cgroups.sh - naglefix fix: a service or a container: --unit NAME, --cgroup PATH.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

# ---- a service or a container: --unit NAME, --cgroup PATH --------------------------

# Cgroups made under the cgroup2 mount as systemd and a container runtime
# make them: nffix<PID>.slice/nffix<PID>-app.service (a client in it and
# one in a cgroup below it, as a service that delegates) and
# nffix<PID>.slice/docker-<64 hex>.scope (a client in it), each client
# moved in by writing cgroup.procs before it execs; a fourth client
# outside them; a helper with no socket (sleep) in the service, and one
# alone in nffix<PID>-idle.service. `fix -m nodelay --unit nffix<PID>-app`
# sets the service's two clients (its lines naming the unit), not the
# others, and exits 0 (the helper is no failure); `fix --json
# --cgroup` with the scope's path relative to the mount sets the
# container's (its lines "cgroup":"docker-<12 hex>"); the outside client
# is untouched and still stalls; `fix --undo --cgroup nffix<PID>.slice`
# turns the three off again (exit 0: the helpers have no record); a unit
# whose processes hold no TCP socket: exit 6, said once; a unit that is
# not running: exit 4, said.
# TCP_NODELAY read by the tests' own nodelay_of; the cgroups removed after.
# cg_nodelay PID...: the TCP_NODELAY of each one's sockets, "PID:N,N " each
cg_nodelay() {
    local p
    for p in "$@"; do printf '%s:%s ' "$p" "$("$W/nodelay_of" "$p" | awk '{ print $3 }' | paste -sd, -)"; done
}
check_cgroups() {
    local name="--unit and --cgroup" root slice unit id c0 c1 c2 c3 rc nd want med i d
    selected "$name" || return 0
    root=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break; if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; exit } }' /proc/self/mountinfo)
    slice=$root/nffix$$.slice unit=nffix$$-app.service
    id=$(printf '%08x' $$)fedcba9876543210fedcba9876543210fedcba9876543210fedcba98
    if [[ -z $root ]]; then
        skip "$name" "no cgroup2 hierarchy is mounted"
        return
    elif ! mkdir "$slice" "$slice/$unit" "$slice/$unit/worker" "$slice/docker-$id.scope" \
        "$slice/nffix$$-idle.service" 2>"$W/cg.err"; then
        skip "$name" "cannot make cgroups under $root: $(head -n 1 "$W/cg.err")"
        rmdir "$slice/$unit/worker" "$slice/$unit" "$slice/docker-$id.scope" "$slice/nffix$$-idle.service" \
            "$slice" 2>/dev/null
        return
    fi
    local in_cg='echo $$ >"$0/cgroup.procs" && exec "$@"' client=(python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000)
    start_client cg1 sh -c "$in_cg" "$slice/$unit" "${client[@]}" && c1=$PID &&
        start_client cg2 sh -c "$in_cg" "$slice/$unit/worker" "${client[@]}" && c2=$PID &&
        start_client cg3 sh -c "$in_cg" "$slice/docker-$id.scope" "${client[@]}" && c3=$PID &&
        start_client cg0 "${client[@]}" && c0=$PID || { fail "$name: clients started" "" "$W/cg.err"; return; }
    local helpers=()
    for d in "$slice/$unit" "$slice/nffix$$-idle.service"; do
        sh -c "$in_cg" "$d" sleep 90 &
        helpers+=("$!")
    done
    wait_rounds cg0 "$PRE"
    "${FIX[@]}" -m nodelay --unit "nffix$$-app" >"$W/cg-unit.fix" 2>&1
    rc=$? nd=$(cg_nodelay "$c1" "$c2" "$c3" "$c0")
    if ((rc == 0)) && [[ $nd == "$c1:1 $c2:1 $c3:0 $c0:0 " ]] &&
        (($(grep -cE "^($c1|$c2) +$unit +[0-9]+ +connect .* 0 -> 1 +set" "$W/cg-unit.fix") == 2)) &&
        ! grep -qE "^($c3|$c0) " "$W/cg-unit.fix"; then
        pass "$name: --unit nffix<PID>-app sets its two processes (the one below it too), named $unit, no other ($nd)"
    else
        fail "$name: --unit sets the unit's processes, named" "exit $rc, TCP_NODELAY $nd" "$W/cg-unit.fix"
    fi
    "${FIX[@]}" -m nodelay --json --cgroup "nffix$$.slice/docker-$id.scope" >"$W/cg-docker.fix" 2>&1
    rc=$? nd=$(cg_nodelay "$c3" "$c0")
    want=$(jq -r --argjson p "$c3" 'select(.pid == $p and .side == "connect") | "\(.cgroup) \(.result)"' "$W/cg-docker.fix" 2>/dev/null)
    if ((rc == 0)) && [[ $nd == "$c3:1 $c0:0 " && $want == "docker-${id:0:12} set" ]] &&
        (($(jq -r '.pid' "$W/cg-docker.fix" | sort -u | wc -l) == 1)); then
        pass "$name: --cgroup SLICE/docker-<64 hex>.scope sets its process, named docker-${id:0:12} (--json)"
    else
        fail "$name: --cgroup sets the container's process, named" "exit $rc, TCP_NODELAY $nd, '$want'" "$W/cg-docker.fix"
    fi
    wait_rounds cg0 $(($(rounds cg0) + 20))
    read -r med _ < <(stat_rounds cg0 1 999999)
    if ge "$med" "$STALL_MIN_MS"; then
        pass "$name: the process outside still stalls ($med ms a round) and its socket untouched"
    else
        fail "$name: the process outside still stalls" "median $med ms"
    fi
    "${FIX[@]}" --undo --cgroup "$slice" >"$W/cg-undo.fix" 2>&1
    rc=$? nd=$(cg_nodelay "$c1" "$c2" "$c3" "$c0")
    if ((rc == 0)) && [[ $nd == "$c1:0 $c2:0 $c3:0 $c0:0 " ]] && (($(grep -c ' undone' "$W/cg-undo.fix") == 3)); then
        pass "$name: --undo --cgroup SLICE turns off the three again ($nd)"
    else
        fail "$name: --undo --cgroup SLICE" "exit $rc, TCP_NODELAY $nd" "$W/cg-undo.fix"
    fi
    "${FIX[@]}" -m nodelay --unit "nffix$$-idle" >"$W/cg-idle.fix" 2>&1
    rc=$?
    if ((rc == 6)) && (($(wc -l <"$W/cg-idle.fix") == 1)) &&
        grep -q "none of the 1 process of the cgroups given holds a TCP socket" "$W/cg-idle.fix"; then
        pass "$name: a unit whose process holds no TCP socket: exit 6, said once"
    else
        fail "$name: a unit whose process holds no TCP socket: exit 6, said once" "exit $rc" "$W/cg-idle.fix"
    fi
    "${FIX[@]}" -m nodelay --unit "nffix$$-none" >"$W/cg-none.fix" 2>&1
    rc=$?
    if ((rc == 4)) && grep -q "unit nffix$$-none.service: not running" "$W/cg-none.fix"; then
        pass "$name: a unit not running: exit 4, said"
    else
        fail "$name: a unit not running: exit 4, said" "exit $rc" "$W/cg-none.fix"
    fi
    kill "$c0" "$c1" "$c2" "$c3" "${helpers[@]}" 2>/dev/null
    wait "${helpers[@]}" 2>/dev/null
    for ((i = 0; i < 50; i++)); do # until the processes have left them
        rmdir "$slice/$unit/worker" "$slice/$unit" "$slice/docker-$id.scope" "$slice/nffix$$-idle.service" \
            "$slice" 2>/dev/null
        [[ -d $slice ]] || break
        sleep 0.1
    done
    [[ ! -d $slice ]] || fail "$name: its cgroups removed" "$slice is left"
}
check_cgroups
