# daemons.sh: git daemon, rsync's daemon and OpenSSH's sshd, with their
# own clients, both ends under one action (sourced by tests/external/run.sh, whose lib_env,
# lib_messages, free_port, up, PYH, TMP and LIB it uses).
#
# Two C programs nobody here wrote that speak a request/response protocol
# in small pieces over TCP: git's pkt-lines (a 4-byte length, then the
# payload) and rsync's multiplexed protocol. Bare, both stall on Nagle:
# `naglefix audit` finds 40-44 ms split writes and split receives in each
# (checked below). Under every action, each transfer must leave the same
# bytes as bare: for git, the served repository's objects (named by their
# hashes, which fsck checks), the refs a push leaves, what ls-remote lists;
# for rsync, the trees (diff -r), a delta transfer that reused the old
# file, and the listing. Actions: the four of issue 1, auto and quickack,
# and coalesce with a 64-byte buffer and with a 1 s timer (every small write
# held from a connection's first, start=split: the timer then hides no
# misordering). Then what the fix is worth: rsync's pull and push, median
# of 3, under nodelay, coalesce and auto, printed beside the bare time
# (a NOTE line, not a check: in session 20's suite runs on this machine
# 120-316 ms against 303-362 bare, 0.40-0.87 of it, so "under half" failed
# 3 runs in 5: a gap within this machine's noise; session 19 had measured
# 58-64 ms against 248-276). The NOTE gives rsync's own floor beside them:
# the same two copies by one local rsync (2026-12-02: 152-164 ms local,
# 195-220 nodelay, 363-415 bare: nodelay is near the floor, and the ratio
# to bare moves with what rsync itself costs on the machine that day; a
# run of this part the same hour: 266 nodelay, 486 bare, 294 local).
# What coalesce meets here: git's upload-pack speaks on its descriptors 0
# and 1 and git's client dup()s its socket, so their writes are never held
# (stdio, dup: README); rsync's are (a build that flipped a byte in one
# flush in 7 failed 10 of rsync's checks, 2026-12-01).
# shellcheck shell=bash

DAEMON_ACTIONS=(bare pass audit nodelay coalesce "coalesce buffer=64 start=split"
    "coalesce flush=1s start=split" auto quickack)
# Commits and pushes made with fixed names and dates: the same hashes in
# every run, so that listings compare across runs.
export GIT_AUTHOR_NAME=naglefix GIT_AUTHOR_EMAIL=naglefix@localhost \
    GIT_COMMITTER_NAME=naglefix GIT_COMMITTER_EMAIL=naglefix@localhost \
    GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' \
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

# daemon_env ACTION: ENVV for a run of a daemon or its client under ACTION
# (`default ACTION`: both sides of every connection), or nothing for bare.
daemon_env() { lib_env "$1" "default $1"; }

DAEMON_PID=""
DAEMON_PORT=""

# start_daemon ACTION LOG CMD...: CMD under ACTION in the background, with
# PORT in its arguments replaced by a free port, until 127.0.0.1 listens
# there (up to 5 ports: another process may take one first). Sets
# DAEMON_PID and DAEMON_PORT; returns 1 if it never listened.
start_daemon() {
    local action=$1 log=$2 try args a
    shift 2
    for ((try = 0; try < 5; try++)); do
        DAEMON_PORT=$(free_port) || return 1
        args=()
        for a in "$@"; do args+=("${a//PORT/$DAEMON_PORT}"); done
        daemon_env "$action"
        env "${ENVV[@]}" "${args[@]}" >>"$log" 2>&1 &
        DAEMON_PID=$!
        wait_until 60 up "$DAEMON_PID" "$DAEMON_PORT" && ! gone "$DAEMON_PID" && return 0
        stop_daemon
    done
    return 1
}

stop_daemon() {
    [[ -n $DAEMON_PID ]] || return 0
    kill -TERM "$DAEMON_PID" 2>/dev/null
    wait "$DAEMON_PID" 2>/dev/null
    DAEMON_PID=""
}

# client ACTION LOG CMD...: CMD under ACTION, its output in LOG; its status.
client() {
    local action=$1 log=$2
    shift 2
    daemon_env "$action"
    env "${ENVV[@]}" timeout -k 5 120 "$@" >"$log" 2>&1
}

# end_run ACTION DIR TAG: stops the daemon; keeps an audit run's records
# in DIR/audit.jsonl; then the library's messages (lib_messages).
end_run() {
    stop_daemon
    [[ $1 != audit ]] || cat "$TMP"/naglefix-*.log >"$2/audit.jsonl" 2>/dev/null
    lib_messages "$3"
}

# same_as_bare ACTION TAG WHAT RC FILE BAREFILE MIN: a listing's verdict.
# Bare, the command (status RC) listed at least MIN lines into FILE; under
# an action, exactly what it listed bare (BAREFILE).
same_as_bare() {
    local action=$1 tag=$2 what=$3 rc=$4 file=$5 bare=$6 min=$7
    if [[ $action == bare ]]; then
        ((rc == 0)) && (($(grep -c . "$file") >= min))
        check "$tag: $what (status $rc)" $? "$file"
    else
        ((rc == 0)) && cmp -s "$bare" "$file"
        check "$tag: $what, as bare (status $rc)" $? "$file"
    fi
}

# check WHAT COND-STATUS [LOG]: pass or fail WHAT on the status of the
# command before.
check() {
    if (($2 == 0)); then pass "$1"; else fail "$1" "${4:-}" "${3:-}"; fi
}

# ---- git ------------------------------------------------------------------

# make_repo DIR: a repository of 24 commits: random files from 0 B to
# 3 MiB, a tree of small ones, renames and deletions; then DIR.git, bare,
# and DIR.objects, its objects (objects).
make_repo() {
    local dir=$1 i
    git init -q -b main "$dir" || return 1
    for ((i = 1; i <= 24; i++)); do
        mkdir -p "$dir/d$((i % 5))"
        head -c $((i * i * 97)) /dev/urandom >"$dir/d$((i % 5))/f$i"
        printf 'line %d\n' "$i" >>"$dir/log.txt"
        ((i == 8)) && head -c 3145735 /dev/urandom >"$dir/big"
        ((i == 12)) && git -C "$dir" mv -k d1/f1 moved
        ((i == 16)) && git -C "$dir" rm -q d2/f2
        : >"$dir/empty"
        git -C "$dir" add -A && git -C "$dir" commit -q -m "commit $i" || return 1
    done
    git -C "$dir" tag -a -m v1 v1 HEAD~4
    git clone -q --bare "$dir" "$dir.git" &&
        objects "$dir.git" >"$dir.objects" &&
        head -c 200000 /dev/urandom >"$TMP/pushed" # what each run pushes
}

# objects DIR: every object reachable in the repository DIR, sorted.
objects() { git -C "$1" rev-list --objects --all | sort; }

git_run() {
    local action=$1 tag="git $1" dir=$TMP/git-${1// /_} base=$TMP/git-bare
    local url rc
    mkdir -p "$dir"
    cp -a "$TMP/repo.git" "$dir/served.git"
    if ! start_daemon "$action" "$dir/daemon.log" git daemon --reuseaddr --export-all \
        --enable=receive-pack --informative-errors --base-path="$dir" --listen=127.0.0.1 \
        --port=PORT; then
        fail "$tag: start" "no listener on 127.0.0.1" "$dir/daemon.log"
        return
    fi
    url=git://127.0.0.1:$DAEMON_PORT/served.git

    client "$action" "$dir/clone.log" git clone -q "$url" "$dir/clone"
    rc=$?
    if ((rc != 0)); then
        fail "$tag: clone" "status $rc" "$dir/clone.log"
    else
        cmp -s "$TMP/repo.objects" <(objects "$dir/clone")
        check "$tag: clone has every object of the served repository" $? "" \
            "the object lists differ"
        git -C "$dir/clone" fsck --strict --no-progress >"$dir/fsck.log" 2>&1
        check "$tag: fsck --strict of the clone (each object's bytes match its hash)" $? \
            "$dir/fsck.log"
        # a commit of new files, pushed back: receive-pack
        cp "$TMP/pushed" "$dir/clone/pushed"
        printf 'pushed\n' >"$dir/clone/small"
        git -C "$dir/clone" add -A && git -C "$dir/clone" commit -q -m pushed
        client "$action" "$dir/push.log" git -C "$dir/clone" push -q origin HEAD:refs/heads/pushed
        rc=$?
        [[ $rc == 0 && $(git -C "$dir/served.git" rev-parse refs/heads/pushed) == \
            "$(git -C "$dir/clone" rev-parse HEAD)" ]] &&
            git -C "$dir/served.git" fsck --strict --no-progress >>"$dir/push.log" 2>&1
        check "$tag: push (status $rc): the served repository has the commit, fsck clean" $? \
            "$dir/push.log"
    fi
    client "$action" "$dir/shallow.log" git clone -q --depth 1 --branch v1 "$url" "$dir/shallow"
    rc=$?
    [[ $rc == 0 && $(git -C "$dir/shallow" rev-parse HEAD) == \
        "$(git -C "$TMP/repo.git" rev-parse 'v1^{commit}')" ]] &&
        git -C "$dir/shallow" fsck --strict --no-progress >>"$dir/shallow.log" 2>&1
    check "$tag: shallow clone of a tag (status $rc)" $? "$dir/shallow.log"
    client "$action" "$dir/ls-remote" git ls-remote "$url"
    same_as_bare "$action" "$tag" ls-remote $? "$dir/ls-remote" "$base/ls-remote" 4
    end_run "$action" "$dir" "$tag"
}

part_git() {
    local action
    if ! git daemon --help >/dev/null 2>&1 && [[ ! -x /usr/lib/git-core/git-daemon ]]; then
        fail "git" "git (with git daemon) not installed: run tests/install-deps.sh"
        return
    fi
    make_repo "$TMP/repo" >"$TMP/make_repo.log" 2>&1 ||
        { fail "git: a repository to serve" "" "$TMP/make_repo.log"; return; }
    for action in "${DAEMON_ACTIONS[@]}"; do git_run "$action"; done
    audit_found git "$TMP/git-audit" git_run audit
}

# ---- rsync ----------------------------------------------------------------

# make_tree DIR: files of 0 B to 3 MiB, 200 small ones in a subtree (of
# i * 37 random bytes, f1 to f200: written by one python, not 200 head
# processes, 2.4 s of CPU on this machine), a symlink.
make_tree() {
    local dir=$1
    mkdir -p "$dir/a/b"
    head -c 3145735 /dev/urandom >"$dir/big"
    head -c 1 /dev/urandom >"$dir/one"
    : >"$dir/empty"
    "${PYH[@]}" -c '
import os, sys
for i in range(1, 201):
    with open(os.path.join(sys.argv[1], "f%d" % i), "wb") as f:
        f.write(os.urandom(i * 37))' "$dir/a/b" || return 1
    ln -s a/b/f7 "$dir/link"
}

write_rsyncd_conf() {
    cat >"$1/rsyncd.conf" <<EOF
use chroot = no
uid = $(id -u)
gid = $(id -g)
pid file = $1/rsyncd.pid
[src]
path = $TMP/tree
read only = yes
[dst]
path = $1/dst
read only = no
munge symlinks = no
EOF
}

# rsync_transfers ACTION DIR: a pull and a push against the daemon on
# DAEMON_PORT; status 0 iff both succeed.
rsync_transfers() {
    local url=rsync://127.0.0.1:$DAEMON_PORT
    rm -rf "$2/pull" "$2/dst/push"
    client "$1" "$2/pull.log" rsync -a "$url/src/" "$2/pull/" &&
        client "$1" "$2/push.log" rsync -a "$TMP/tree/" "$url/dst/push/"
}

rsync_run() {
    local action=$1 tag="rsync $1" dir=$TMP/rsync-${1// /_} base=$TMP/rsync-bare rc url
    mkdir -p "$dir/dst"
    write_rsyncd_conf "$dir"
    if ! start_daemon "$action" "$dir/daemon.log" rsync --daemon --no-detach \
        --config="$dir/rsyncd.conf" --address=127.0.0.1 --port=PORT --log-file="$dir/rsyncd.log"; then
        fail "$tag: start" "no listener on 127.0.0.1" "$dir/daemon.log"
        return
    fi
    url=rsync://127.0.0.1:$DAEMON_PORT
    rsync_transfers "$action" "$dir"
    rc=$?
    ((rc == 0)) && diff -r "$TMP/tree" "$dir/pull" >"$dir/pull.diff" 2>&1
    check "$tag: pull: the tree arrives whole (status $rc)" $? "$dir/pull.log" \
        "$(head -n 2 "$dir/pull.diff" 2>/dev/null | paste -sd' ')"
    ((rc == 0)) && diff -r "$TMP/tree" "$dir/dst/push" >"$dir/push.diff" 2>&1
    check "$tag: push: the tree arrives whole" $? "$dir/push.log" \
        "$(head -n 2 "$dir/push.diff" 2>/dev/null | paste -sd' ')"
    # a delta transfer: the pulled big file changed in the middle and cut
    # short; rsync sends only what differs, in blocks against the old copy
    if ((rc == 0)); then
        printf 'changed' | dd of="$dir/pull/big" bs=1 seek=1500000 conv=notrunc status=none
        truncate -s 3000000 "$dir/pull/big"
        client "$action" "$dir/delta.log" rsync -a --no-whole-file --stats "$url/src/" "$dir/pull/"
        rc=$?
        ((rc == 0)) && cmp -s "$TMP/tree/big" "$dir/pull/big" &&
            grep -Eq '^Matched data: [1-9]' "$dir/delta.log"
        check "$tag: delta transfer: the file rebuilt from old blocks (status $rc)" $? \
            "$dir/delta.log"
    fi
    client "$action" "$dir/list" rsync --list-only "$url/src/"
    same_as_bare "$action" "$tag" "the listing" $? "$dir/list" "$base/list" 6
    end_run "$action" "$dir" "$tag"
}

# rsync_times ACTION: the median over 3 runs of a pull and a push, in ms
# (START_FAILED set if a daemon did not start or a transfer failed).
rsync_times() {
    local dir=$TMP/rsync-time-${1// /_} i start t=()
    mkdir -p "$dir/dst"
    write_rsyncd_conf "$dir"
    start_daemon "$1" "$dir/daemon.log" rsync --daemon --no-detach --config="$dir/rsyncd.conf" \
        --address=127.0.0.1 --port=PORT || { START_FAILED=1; return; }
    for ((i = 0; i < 3; i++)); do
        start=$EPOCHREALTIME
        rsync_transfers "$1" "$dir" || START_FAILED=1
        t+=("$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.0f", (b - a) * 1000}')")
    done
    stop_daemon
    rm -f "$TMP"/naglefix-*.log
    printf '%s\n' "${t[@]}" | sort -n | sed -n 2p
}

# rsync_local_times: the median over 3 runs of the same two copies made
# by one rsync on this host (no daemon, no socket), in ms: what rsync
# itself costs, below which no fix of its sockets can go.
rsync_local_times() {
    local dir=$TMP/rsync-local i start t=()
    for ((i = 0; i < 3; i++)); do
        rm -rf "$dir" && mkdir -p "$dir"
        start=$EPOCHREALTIME
        rsync -a "$TMP/tree/" "$dir/pull/" && rsync -a "$TMP/tree/" "$dir/push/"
        t+=("$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.0f", (b - a) * 1000}')")
    done
    rm -rf "$dir"
    printf '%s\n' "${t[@]}" | sort -n | sed -n 2p
}

part_rsync() {
    local action bare fixed floor
    if ! command -v rsync >/dev/null; then
        fail "rsync" "rsync not installed: run tests/install-deps.sh"
        return
    fi
    make_tree "$TMP/tree" || { fail "rsync: a tree to serve" "make_tree failed"; return; }
    for action in "${DAEMON_ACTIONS[@]}"; do rsync_run "$action"; done
    audit_found rsync "$TMP/rsync-audit" rsync_run audit
    START_FAILED=0
    bare=$(rsync_times bare)
    floor=$(rsync_local_times)
    for action in nodelay coalesce auto; do
        fixed=$(rsync_times "$action")
        # a figure, not a check: the gap is not beyond this machine's noise
        # (the brief's rule for timing in tests)
        ((START_FAILED == 0)) || fail "rsync $action: timed pull + push" "a daemon did not start or a transfer failed"
        echo "NOTE rsync $action: pull + push, median of 3: $fixed ms (bare $bare ms; the same two copies with no network, rsync's own floor: $floor ms)"
    done
}

# ---- sshd -----------------------------------------------------------------

# OpenSSH's server puts its pre-authentication child in a seccomp sandbox
# (prctl(PR_SET_SECCOMP)) that kills it for a system call it does not make
# itself: under audit, auto and quickack the library's own setsockopt or
# its timer thread's clone3 did, and every login failed ("Connection
# closed"), until the library learnt to stand aside there (nf_sandbox.h).

# SetEnv SHLVL=1: the login shell that runs the ssh check's command then
# counts itself a nested shell and does not read the user's ~/.bashrc
# (bash reads it for a command from sshd at level 1: root's here starts
# pyenv, 1 s of CPU a login); the bytes still cross sshd and the shell.
write_sshd_conf() {
    cat >"$1/sshd_config" <<EOF
HostKey $TMP/ssh/hostkey
ListenAddress 127.0.0.1
AuthorizedKeysFile $TMP/ssh/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
PidFile $1/sshd.pid
Subsystem sftp internal-sftp
SetEnv SHLVL=1
EOF
}

SSH_OPTS=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
    -o BatchMode=yes)

sshd_run() {
    local action=$1 tag="sshd $1" dir=$TMP/sshd-${1// /_} rc o
    mkdir -p "$dir"
    write_sshd_conf "$dir"
    if ! start_daemon "$action" "$dir/daemon.log" /usr/sbin/sshd -D -e -f "$dir/sshd_config" \
        -p PORT; then
        fail "$tag: start" "no listener on 127.0.0.1" "$dir/daemon.log"
        return
    fi
    o=("${SSH_OPTS[@]}" -i "$TMP/ssh/userkey")
    client "$action" "$dir/exec.log" ssh "${o[@]}" -p "$DAEMON_PORT" "$(id -un)@127.0.0.1" \
        "cat > '$dir/up'" <"$TMP/ssh/file"
    rc=$?
    ((rc == 0)) && cmp -s "$TMP/ssh/file" "$dir/up"
    check "$tag: ssh: a command's standard input arrives whole (status $rc)" $? "$dir/exec.log"
    client "$action" "$dir/scp.log" scp -q "${o[@]}" -P "$DAEMON_PORT" \
        "$(id -un)@127.0.0.1:$TMP/ssh/file" "$dir/scp"
    rc=$?
    ((rc == 0)) && cmp -s "$TMP/ssh/file" "$dir/scp"
    check "$tag: scp: the file arrives whole (status $rc)" $? "$dir/scp.log"
    client "$action" "$dir/sftp.log" sftp -q "${o[@]}" -P "$DAEMON_PORT" \
        -b - "$(id -un)@127.0.0.1" <<<"get $TMP/ssh/file $dir/sftp"
    rc=$?
    ((rc == 0)) && cmp -s "$TMP/ssh/file" "$dir/sftp"
    check "$tag: sftp: the file arrives whole (status $rc)" $? "$dir/sftp.log"
    end_run "$action" "$dir" "$tag"
}

part_sshd() {
    local action
    if [[ ! -x /usr/sbin/sshd ]] || ! command -v ssh-keygen scp sftp >/dev/null; then
        fail "sshd" "OpenSSH's server and client not installed: run tests/install-deps.sh"
        return
    fi
    if (($(id -u) != 0)); then
        skip "sshd" "sshd's privilege separation needs root"
        return
    fi
    mkdir -p /run/sshd "$TMP/ssh" # the privilege separation directory
    if ! ssh-keygen -q -t ed25519 -N '' -f "$TMP/ssh/hostkey" ||
        ! ssh-keygen -q -t ed25519 -N '' -f "$TMP/ssh/userkey" ||
        ! cp "$TMP/ssh/userkey.pub" "$TMP/ssh/authorized_keys"; then
        fail "sshd: keys" "ssh-keygen failed"
        return
    fi
    head -c 5000007 /dev/urandom >"$TMP/ssh/file"
    for action in "${DAEMON_ACTIONS[@]}"; do sshd_run "$action"; done
}

# worst_stall FILE: the largest worst_stall_ms of the audit records in
# FILE ("" if none).
worst_stall() {
    grep -h '"event":"summary"' "$1" 2>/dev/null |
        sed -n 's/.*"worst_stall_ms":\([0-9.]*\).*/\1/p' | sort -g | tail -n 1
}

# audit_found WHAT DIR RUN...: the audit run's records (DIR/audit.jsonl)
# name at least one stall of 35 ms or more in WHAT. A run may meet none:
# a reply that comes late takes the receiver out of its ping-pong mode,
# and it then ACKs at once. So up to 3 runs: RUN (the audited run again,
# which leaves its records in DIR) runs once more while none is found,
# the earlier run's DIR kept as DIR.N; its own checks are said only if
# one fails (the first run's were said and counted).
audit_found() {
    local what=$1 dir=$2 run worst out
    shift 2
    for ((run = 1; ; run++)); do
        worst=$(worst_stall "$dir/audit.jsonl")
        awk -v w="${worst:-0}" 'BEGIN {exit !(w >= 35)}' && break
        ((run < 3)) || break
        rm -rf "$dir.$run" && mv "$dir" "$dir.$run"
        out=$TMP/$what-audit-rerun$run.out
        ("$@") >"$out" 2>&1 # a subshell: its checks are not counted twice
        grep -q '^FAIL ' "$out" && fail "$what audit: run $((run + 1)) of 3" "a check failed" "$out"
    done
    [[ -n $worst ]] && awk -v w="$worst" 'BEGIN {exit !(w >= 35)}'
    check "$what audit: finds split writes that stall (worst ${worst:-none} ms, run $run of 3)" $? \
        "$dir/audit.jsonl" "no stall of 35 ms or more recorded in $run runs"
}
