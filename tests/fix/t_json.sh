# t_json.sh - naglefix fix: --json.
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

# ---- --json ---------------------------------------------------------------------

check_json() {
    local name="--json lines" v
    selected "$name" || return 0
    start_client json python3 "$HERE/fix_client.py" "$H" "$PPORT" 100000 || return
    v=$PID
    wait_rounds json 2
    "${FIX[@]}" -m nodelay --json "$v" >"$W/json.fix" 2>"$W/json.err"
    "${FIX[@]}" --undo --json "$v" >>"$W/json.fix" 2>>"$W/json.err"
    if python3 - "$W/json.fix" "$v" <<'PY'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
pid = int(sys.argv[2])
keys = {"event", "pid", "fd", "inode", "side", "local", "peer", "state",
        "nodelay_before", "nodelay_after", "result"}
assert rows and all(keys <= set(r) and r["pid"] == pid for r in rows), rows
fix = [r for r in rows if r["event"] == "fix"]
undo = [r for r in rows if r["event"] == "fix_undo"]
assert [(r["side"], r["result"], r["nodelay_before"], r["nodelay_after"], r["action"], r["rule"])
        for r in fix] == [("connect", "set", 0, 1, "nodelay", "-m nodelay")], fix
assert [(r["result"], r["inode"]) for r in undo] == [("undone", fix[0]["inode"])], undo
PY
        pass "$name: every line JSON, the audit log's names (pid, fd, side, local, peer) and the change"
    else
        fail "$name" "" "$W/json.fix"
    fi
    kill "$v" 2>/dev/null
}
check_json
