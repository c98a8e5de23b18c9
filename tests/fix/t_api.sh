# t_api.sh - naglefix fix: the functions watch --fix calls (nf_fix_inode, nf_fix_listener).
# Sourced by tests/fix/run.sh (`make test-fix`), in its order, with its
# helpers, servers and programs; not run alone.
# shellcheck shell=bash

# ---- the functions watch --fix calls ---------------------------------------------

# nf_fix_inode on a client's socket (by inode alone, then again: already
# on; a wrong fd: -ESTALE; an inode it does not hold: -ENOENT) and
# nf_fix_listener on a server's port (another port: -ENOENT); what they
# set is recorded: --undo turns exactly that off.
check_api() {
    local name="nf_fix_inode and nf_fix_listener" c s ino lino other out=""
    selected "$name" || return 0
    start_server fix-api-echo python3 "$HERE/echo_server.py" "$H" "$SERVER_LIFETIME" || return
    local aport=$SERVER_PORT
    s=$(pgrep -P "${SERVER_PID_OF[fix-api-echo]}" | head -n 1)
    start_client api python3 "$HERE/fix_client.py" "$H" "$aport" 100000 || return
    c=$PID
    wait_rounds api 2
    read -r fd ino _ < <("$W/nodelay_of" "$c" | awk '$4 == 0')
    read -r lfd lino _ < <("$W/nodelay_of" "$s" | awk '$4 == 1')
    other=$("$W/nodelay_of" "$s" | awk '$4 == 0 { print $1; exit }')
    out+="$("$W/api_check" inode "$c" "$ino" -1)|"
    out+="$("$W/api_check" inode "$c" "$ino" "$fd")|"
    out+="$("$W/api_check" inode "$s" "$lino" "$other")|"
    out+="$("$W/api_check" inode "$c" 1 -1)|"
    out+="$("$W/api_check" listener "$s" "$aport")|"
    out+="$("$W/api_check" listener "$s" 1)"
    local want="rc 0 before 0 recorded 1 nodelay 1|rc 0 before 1 recorded 0 nodelay 1|rc -116 before -1 recorded 0 nodelay -1|rc -2 before -1 recorded 0 nodelay -1|rc 0 before 0 recorded 1 nodelay 1|rc -2 before -1 recorded 0 nodelay -1"
    if [[ $out != "$want" || $(nodelay "$c" "$ino") != 1 || $(nodelay "$s" "$lino") != 1 ]]; then
        fail "$name" "got '$out'"
        return
    fi
    "${FIX[@]}" --undo "$c" "$s" >"$W/api-undo.fix" 2>&1
    if [[ $? == 0 && $(nodelay "$c" "$ino") == 0 && $(nodelay "$s" "$lino") == 0 ]] &&
        (($(grep -c undone "$W/api-undo.fix") == 2)); then
        pass "$name: set by inode (fd looked up or given), already on, -ESTALE, -ENOENT, a listener by port; recorded, and --undo clears exactly those two"
    else
        fail "$name: --undo of what they set" "" "$W/api-undo.fix"
    fi
    kill "$c" 2>/dev/null
}
check_api
