#!/usr/bin/env bash
# run.sh: tests of the audit action, `naglefix audit` and `naglefix report`.
# Unmodified programs only: the Java client of tests/programs against its echo
# server (the client audited, then the server), Python's http.server
# answering http.client, a Python client with 8 threads. Ends with "N passed, M failed"; exit status 0 iff M == 0.
# Env: ROUNDS (default 13), SERVER_LIFETIME. T=pattern reports only the
# checks whose name it matches (tests/lib.sh); the audited programs run
# anyway. No check of a log passes on an empty one (check_log.py).
set -u
# The echo server serves the whole suite, which on a loaded machine lasts
# longer than common.sh's default 120 s; it is stopped at the end
# (common.sh's cleanup).
SERVER_LIFETIME=${SERVER_LIFETIME:-400}
# shellcheck source-path=SCRIPTDIR source=../programs/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../programs/common.sh"

AUDIT_DIR="$TOP/tests/audit"
WORK="$TOP/build/audit"
ROUNDS=${ROUNDS:-13}
CHECK=(python3 "$AUDIT_DIR/check_log.py")
H=127.0.0.1
rm -rf "$WORK"
mkdir -p "$WORK"

# ok NAME CMD...: pass if CMD succeeds, else fail with its output.
ok() {
    local name=$1 out
    shift
    selected "$name" || return 0
    if out=$("$@" 2>&1); then pass "$name${out:+ ($out)}"; else fail "$name" "$out"; fi
}

# audit_run NAME LOGARG CMD...: `naglefix audit` CMD with a timeout; stdout,
# stderr and exit status in $WORK/NAME.{out,err,rc}.
audit_run() {
    local name=$1 log=$2
    shift 2
    timeout -k 5 "$CLIENT_TIMEOUT" "$NAGLEFIX" audit ${log:+-l "$log"} -- "$@" \
        >"$WORK/$name.out" 2>"$WORK/$name.err"
    echo $? >"$WORK/$name.rc"
}

median_of() { sed -n 's/^median_ms=\([0-9.]*\) .*/\1/p' "$1"; }

compile_java || fail "compile Java sources"
start_server java-echo java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME" || exit 1
PORT=$SERVER_PORT
JAVA=(java -cp "$LEGACY_BUILD" LegacyClient "$H" "$PORT" "$ROUNDS")

# --- the Java client, split writes: named, with its writes and its stall -----
audit_run java-split "$WORK/java-split.log" "${JAVA[@]}" split
ok "java split: exit status 0" test "$(cat "$WORK/java-split.rc")" = 0
ok "java split: log is JSON lines" "${CHECK[@]}" valid "$WORK/java-split.log"
ok "java split: every stall >= 30 ms" "${CHECK[@]}" stalls "$WORK/java-split.log" 30
ok "java split: summaries add up" "${CHECK[@]}" summary "$WORK/java-split.log"
"$NAGLEFIX" report --json "$WORK/java-split.log" >"$WORK/java-split.json"
ok "java split: report names $H:$PORT, [6,7], median >= 30 ms" \
    "${CHECK[@]}" group "$WORK/java-split.json" connect "$H:$PORT" "[6,7]" $((ROUNDS / 2)) 30
ok "java split: table printed with the fix" \
    grep -q "^$H:$PORT .*\[6,7\].*connect $H:$PORT coalesce" "$WORK/java-split.err"
audited=$(median_of "$WORK/java-split.out")
plain=$(run_client none "${JAVA[@]}" split)
n="java split under audit still stalls (audit fixes nothing)"
selected "$n" && assert_ms_ge "$n" "$audited" 30
if [[ $audited =~ ^[0-9.]+$ && $plain =~ ^[0-9.]+$ ]]; then
    ok "java split: audit median $audited ms within 5 ms of plain $plain ms" \
        python3 -c "import sys; sys.exit(abs($audited - $plain) >= 5)"
else
    fail "java split: audited vs plain median" "no measurement ($audited, $plain)"
fi

# --json is output for a machine: on stdout, after the client's own; stderr
# keeps only the "log kept" line (no -l: the log is a temporary file)
TMPDIR="$WORK" timeout -k 5 "$CLIENT_TIMEOUT" "$NAGLEFIX" audit --json -- \
    "${JAVA[@]}" split >"$WORK/java-json.out" 2>"$WORK/java-json.err"
ok "java split: audit --json prints on stdout a JSON array naming the peer" python3 -c '
import json, sys
lines = open(sys.argv[1]).read().split("\n")
groups = json.loads("\n".join(lines[lines.index("["):]))
sys.exit(not any(g["peer"] == sys.argv[2] and g["writes"] == [6, 7] for g in groups))
' "$WORK/java-json.out" "$H:$PORT"
ok "java split: audit --json: on stderr only the log-kept line" \
    bash -c "[[ \$(wc -l <'$WORK/java-json.err') == 1 ]] && grep -q '^naglefix audit: log kept in ' '$WORK/java-json.err'"

# --- the receiving side: the echo server audited, the Java split client bare --
# The client's Nagle holds "world\r\n" until the server's delayed ACK of
# "hello ": the audited server reads 6 bytes, then 7 one delayed ACK later
# (recv_split), fixed by quickack on its accept side. Before the client, on
# the same server, a sender pausing 100 ms between pieces that waits for no
# answer: gaps of its own, which the tcpi_ato check must not take for pieces
# held until a delayed ACK.
if start_server echo-audited "$NAGLEFIX" audit -l "$WORK/server.log" -- \
    java -cp "$LEGACY_BUILD" EchoServer 0 "$SERVER_LIFETIME"; then
    SPORT=$SERVER_PORT
    timeout -k 5 "$CLIENT_TIMEOUT" python3 "$AUDIT_DIR/oneway_client.py" "$H" "$SPORT" 12 100 \
        >"$WORK/oneway.out" 2>&1
    ok "one-way sender to the audited server: 12 pieces 100 ms apart, echoed" \
        grep -q '^pieces=12 period_ms=100$' "$WORK/oneway.out"
    oneway=$(sed -n 's/^local=//p' "$WORK/oneway.out")
    served=$(run_client none java -cp "$LEGACY_BUILD" LegacyClient "$H" "$SPORT" "$ROUNDS" split)
    n="java split client, bare, to the audited server still stalls"
    selected "$n" && assert_ms_ge "$n" "$served" 30
    stop_server echo-audited
    ok "audited server: exits at the end of its stdin" test $? = 0
    # the lines naming the one-way sender (none held: see the check below)
    grep -F "\"peer\":\"${oneway:-none}\"" "$WORK/server.log" >"$WORK/oneway.log"
    ok "audited server: log is JSON lines" "${CHECK[@]}" valid "$WORK/server.log"
    ok "audited server: summaries add up" "${CHECK[@]}" summary "$WORK/server.log"
    "$NAGLEFIX" report --json "$WORK/server.log" >"$WORK/server.json"
    ok "audited server, bare java split client: report proposes accept $H:$SPORT quickack, median >= 30 ms" \
        "${CHECK[@]}" fix "$WORK/server.json" accept "$H:$SPORT" "accept $H:$SPORT quickack" \
        $((ROUNDS / 2)) 30
    ok "audited server: naglefix audit's table at its exit shows [6,7] and the quickack line" \
        grep -q "^$H:$SPORT .*accept .*\[6,7\].*accept $H:$SPORT quickack" "$LEGACY_BUILD/echo-audited.err"
    # The rule sees when each read returned, not when its piece came: a
    # read of one piece that a loaded host ran 45-65 ms late leaves a gap
    # to the next in the delayed ACK's window, which nothing the kernel
    # reports tells from a held piece (audit_recv.c). So: no finding of a
    # gap over 60 ms (the window ends at 55 here, the pauses are 100),
    # and 2 at most of the 11 gaps (then each is a line naming the sender:
    # a repeat line, naming no peer, would begin at the 4th). Without the
    # rule, all 11 gaps are findings.
    ok "one-way sender, 100 ms pauses: no recv_split of a pause, 2 at most cut short (the split client's, same server, has)" \
        "${CHECK[@]}" pauses "$WORK/oneway.log" "$WORK/server.log" 2 60
    ok "java split (client audited): no recv_split, so no quickack (the audited server's log has)" \
        "${CHECK[@]}" norecv "$WORK/java-split.log" "$WORK/server.log"
else
    fail "audited echo server" "did not start (see $LEGACY_BUILD/echo-audited.err)"
fi

# --- nothing to find: one write, or the program's own TCP_NODELAY ------------
audit_run java-single "$WORK/java-single.log" "${JAVA[@]}" single
ok "java single: no finding (java split has)" \
    "${CHECK[@]}" nofinding "$WORK/java-single.log" "$WORK/java-split.log"
ok "java single: table says so" grep -q "no split-write stall found" "$WORK/java-single.err"
audit_run py-nodelay "$WORK/py-nodelay.log" \
    python3 "$AUDIT_DIR/split_client.py" "$H" "$PORT" "$ROUNDS" 1 nodelay
ok "python split with its own TCP_NODELAY: exit 0" test "$(cat "$WORK/py-nodelay.rc")" = 0

# --- what the library cannot enter: no verdict where nothing was seen ---------
# A static client and a set-user-ID Python stall as the others do, and the
# library sees none of it: audit says so, before and after, with what to
# use instead, and never "no split-write stall found".
STATIC="$TOP/build/tests/static_client"
NOVERDICT="naglefix audit: no verdict: nothing was seen"
INSTEAD='`naglefix watch` sees every connection of this host'
# held MIN NAME: the median of NAME's "round I MS" lines after the first is >= MIN ms
held() {
    python3 -c '
import statistics, sys
ms = [float(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("round ")][1:]
sys.exit(not (len(ms) >= 4 and statistics.median(ms) >= float(sys.argv[1])))' "$1" "$WORK/$2.out"
}
audit_run static "" "$STATIC" "$H" "$PORT" 8
ok "static client: ran to its end, its rounds held (median >= 30 ms)" \
    bash -c "[[ \$(cat '$WORK/static.rc') == 0 ]] && grep -q '^done 8' '$WORK/static.out'"
ok "static client: its rounds held (median >= 30 ms): there was something to find" held 30 static
ok "static client: said before it ran, no verdict after, with what to use instead; no all-clear" \
    bash -c "[[ \$(wc -l <'$WORK/static.err') == 2 ]] &&
        head -n 1 '$WORK/static.err' | grep -qx 'naglefix audit: the library cannot enter $STATIC (statically linked): none of its sockets will be seen' &&
        tail -n 1 '$WORK/static.err' | grep -qF '$NOVERDICT, the library entered no process of $STATIC (statically linked); $INSTEAD' &&
        ! grep -q 'stall found' '$WORK/static.err'"
TMPDIR="$WORK" timeout -k 5 "$CLIENT_TIMEOUT" "$NAGLEFIX" audit --json -- "$STATIC" "$H" "$PORT" 4 \
    >"$WORK/static-json.out" 2>"$WORK/static-json.err"
ok "static client, --json: no array on stdout (an empty one would be an all-clear)" \
    bash -c "! grep -q '^\[' '$WORK/static-json.out' && grep -q '^done 4' '$WORK/static-json.out' &&
        grep -qF '$NOVERDICT' '$WORK/static-json.err'"
# the interpreter itself (python3 may be a shim script), set-user-ID to
# nobody: a secure exec for root
SUID_PY="$WORK/suid_python"
PY_BIN=$(python3 -c 'import sys; print(sys.executable)')
[[ -x /usr/bin/python3 ]] && PY_BIN=$(readlink -f /usr/bin/python3)
if [[ $(id -u) == 0 ]] && cp "$PY_BIN" "$SUID_PY" && chown 65534 "$SUID_PY" && chmod 4755 "$SUID_PY" &&
    "$SUID_PY" -c pass 2>/dev/null && [[ $("$SUID_PY" -c 'import os; print(os.geteuid())') == 65534 ]]; then
    audit_run suid "" "$SUID_PY" "$AUDIT_DIR/split_client.py" "$H" "$PORT" "$ROUNDS" 1
    ok "set-user-ID python: it stalled as the others do (median >= 30 ms)" \
        python3 -c 'import re, sys; sys.exit(float(re.search(r"median_ms=([0-9.]+)", open(sys.argv[1]).read()).group(1)) < 30)' \
        "$WORK/suid.out"
    ok "set-user-ID python: no verdict, the library entered none of it" \
        bash -c "grep -qF '$NOVERDICT, the library entered no process of $SUID_PY (set-user-ID)' '$WORK/suid.err' &&
            ! grep -q 'stall found' '$WORK/suid.err'"
    rm -f "$SUID_PY"
else
    skip "set-user-ID python: no verdict" "not root, a set-user-ID copy of $PY_BIN does not run, or runs as root (a nosuid mount)"
fi
audit_run missing "" "$WORK/no/such/program"
ok "a program that does not exist: 127, its error alone, no verdict" \
    bash -c "[[ \$(cat '$WORK/missing.rc') == 127 && \$(wc -l <'$WORK/missing.err') == 1 ]] &&
        grep -qx 'naglefix audit: $WORK/no/such/program: No such file or directory' '$WORK/missing.err'"
audit_run no-tcp "" sh -c 'echo hello'
ok "a program with no TCP socket: no verdict, said so" \
    bash -c "grep -qF 'naglefix audit: no verdict: no TCP socket of sh went through the library, so nothing was seen' '$WORK/no-tcp.err' &&
        ! grep -q 'stall found' '$WORK/no-tcp.err'"
# A TCP socket made before the program drops to a user who cannot write
# the command's files (as a server makes its listener as root): seen.
audit_run drops "" python3 -c '
import os, socket, sys
s = socket.socket()
os.setgid(65534); os.setuid(65534)
s.connect((sys.argv[1], int(sys.argv[2]))); s.close()' "$H" "$PORT"
ok "a socket made before the program drops privileges: seen (no 'no TCP socket')" \
    bash -c "[[ \$(cat '$WORK/drops.rc') == 0 ]] && ! grep -q 'no TCP socket' '$WORK/drops.err'"
# -l LOG that already holds findings (an earlier run's): its table, and
# the note that nothing of this run was seen, without "no verdict".
cp "$WORK/java-split.log" "$WORK/appended.log"
audit_run appended "$WORK/appended.log" "$STATIC" "$H" "$PORT" 4
ok "static client, -l LOG of an earlier run: LOG's table, and nothing of this run seen" \
    bash -c "grep -q '^$H:$PORT .*connect .*\[6,7\]' '$WORK/appended.err' &&
        grep -qF 'naglefix audit: nothing was seen, the library entered no process of $STATIC (statically linked)' '$WORK/appended.err' &&
        ! grep -q 'no verdict' '$WORK/appended.err'"
# A shell the library enters starts the static client, then a Python split
# client: the table of what was seen (the Python client's), and the static
# one named as not seen, with its pid.
# shellcheck disable=SC2016 # for the inner shell to expand
audit_run wrapper "$WORK/wrapper.log" sh -c '"$0" "$1" "$2" 6; exec python3 "$3" "$1" "$2" "$4" 1' \
    "$STATIC" "$H" "$PORT" "$AUDIT_DIR/split_client.py" "$ROUNDS"
ok "static client under a shell: the table of what was seen, the static client named as not seen" \
    bash -c "grep -q '^$H:$PORT .*connect .*\[6,6\]' '$WORK/wrapper.err' &&
        grep -Eq '^naglefix audit: not seen: pid [0-9]+ ran $STATIC, which the library cannot enter \(statically linked\)$' '$WORK/wrapper.err' &&
        tail -n 2 '$WORK/wrapper.err' | grep -qF '$INSTEAD'"

# --- audit sets nothing: no TCP_NODELAY=1 reaches the kernel ------------------
if command -v strace >/dev/null; then
    timeout 60 strace -f -qq -e trace=setsockopt -o "$WORK/strace.txt" \
        "$NAGLEFIX" audit -l "$WORK/strace.log" -- "${JAVA[@]}" split >/dev/null 2>&1
    ok "java split under audit: no setsockopt(TCP_NODELAY, 1)" \
        bash -c "! grep -q 'TCP_NODELAY, \[1\]' '$WORK/strace.txt'"
fi

# --- a program that writes each message once costs no TCP_INFO per message ---
# (the first send after a read is asked about 1 time in 16 once 16 in a row
# were not held: README "Cost"). 320 messages: at most 16 + 320/16 + 4 = 40
# (the client's own 4) queries; one per message would be 320.
if command -v strace >/dev/null && [ -x "$TOP/build/tests/bench" ]; then
    timeout 60 strace -f -qq -e trace=getsockopt -o "$WORK/strace-one.txt" \
        "$NAGLEFIX" audit -l "$WORK/one.log" -- "$TOP/build/tests/bench" split single 320 >/dev/null 2>&1
    n=$(grep -c 'TCP_INFO' "$WORK/strace-one.txt")
    ok "one write a message under audit: at most 60 TCP_INFO queries for 320 messages" \
        bash -c "echo $n queries; test $n -le 60"
fi

# --- Python http.server answering http.client: the server side is found ------
audit_run http "$WORK/http.log" python3 "$AUDIT_DIR/http_pair.py" "$ROUNDS"
ok "http.server: exit 0" test "$(cat "$WORK/http.rc")" = 0
"$NAGLEFIX" report --json "$WORK/http.log" >"$WORK/http.json"
ok "http.server: accept-side finding, stall >= 30 ms" \
    "${CHECK[@]}" group "$WORK/http.json" accept "*" "*" $((ROUNDS / 2)) 30
ok "http.client (one write per request): no connect-side split_write group" \
    "${CHECK[@]}" nogroup "$WORK/http.json" connect split_write
ok "http.client waits for the split response: connect-side recv_split -> connect ... quickack" \
    "${CHECK[@]}" fix "$WORK/http.json" connect "*" "connect * quickack" $((ROUNDS / 2)) 30

# --- 8 threads on 8 connections: every line stays whole ----------------------
audit_run threads "$WORK/threads.log" python3 "$AUDIT_DIR/split_client.py" "$H" "$PORT" 40 8
ok "8 threads: exit 0" test "$(cat "$WORK/threads.rc")" = 0
ok "8 threads: every line is valid JSON" "${CHECK[@]}" valid "$WORK/threads.log"
"$NAGLEFIX" report --json "$WORK/threads.log" >"$WORK/threads.json"
ok "8 threads: findings of all 8 connections (8 x 39 rounds, >= 8 x 30)" \
    "${CHECK[@]}" group "$WORK/threads.json" connect "$H:$PORT" "[6,6]" 240 30
full=$("${CHECK[@]}" count "$WORK/threads.log" split_write)
ok "8 threads: one pattern, 1 to 3 lines in full ($full), the rest counted" \
    test "$full" -ge 1 -a "$full" -le 3
ok "8 threads: summaries add up" "${CHECK[@]}" summary "$WORK/threads.log"
# (the same client as py-nodelay above, without its TCP_NODELAY: the control)
ok "python split with its own TCP_NODELAY: no finding (without it: findings)" \
    "${CHECK[@]}" nofinding "$WORK/py-nodelay.log" "$WORK/threads.log"

# --- naglefix audit audits every socket, whatever a config file says -------
printf 'connect %s nodelay\n' "$H" >"$WORK/rule.conf"
NAGLEFIX_CONF="$WORK/rule.conf" audit_run java-rule "$WORK/java-rule.log" "${JAVA[@]}" split
ok "audit: a config rule for the peer does not hide its stalls" \
    grep -q '"event":"split_write"' "$WORK/java-rule.log"

# --- exec: repeat counts and the summary are written before the image goes -
audit_run exec "$WORK/exec.log" python3 "$AUDIT_DIR/exec_client.py" "$H" "$PORT" 10
ok "exec: a summary is written before exec" grep -q '"event":"summary"' "$WORK/exec.log"
# (every finding the library made, as its summary counts them, not a fixed
# 9 of the client's 10 rounds: a loaded host may part a round's two sends
# by more than the delayed ACK, and that round is neither held nor a
# finding; without the flush before exec the log holds the first 3 of
# the pattern and the summary all of them)
"$NAGLEFIX" report --json "$WORK/exec.log" >"$WORK/exec.json"
made=$(python3 -c '
import json, sys
print(sum(o["findings"] for o in (json.loads(l) for l in open(sys.argv[1]) if l.strip())
          if o["event"] == "summary"))' \
    "$WORK/exec.log" 2>/dev/null)
ok "exec: every finding is in the log before exec (as its summary counts, 5 at least)" \
    "${CHECK[@]}" findings "$WORK/exec.json" "${made:-0}" 5

# --- fork: the writes listed before it are the parent's, not the child's ------
audit_run fork "$WORK/fork.log" python3 "$AUDIT_DIR/fork_client.py" "$H" "$PORT" 4
read -r parent child < <(sed -n 's/^parent=\([0-9]*\) child=\([0-9]*\)$/\1 \2/p' "$WORK/fork.out")
ok "fork: the parent's own reads are findings" \
    test "$(grep -c "\"event\":\"split_write\".*\"pid\":${parent:-x}[,}]" "$WORK/fork.log")" -ge 1
ok "fork: the child reports none of the parent's writes (the parent's are there)" \
    test "$(grep -c "\"event\":\"split_write\".*\"pid\":${parent:-x}[,}]" "$WORK/fork.log")" -ge 1 -a \
    "$(grep -c "\"event\":\"split_write\".*\"pid\":${child:-x}[,}]" "$WORK/fork.log")" = 0

# --- whatever ends the process, every finding is in the log ------------------
# An audited server answers ENDED_ROUNDS requests with two sends each (a
# finding per held answer; past the third of a pattern, counted into
# repeat lines) and is ended: a second after its last stall by a signal's
# default action from outside (SIGTERM, SIGKILL) or by a crash of its own
# (the timer has written the counts within half a second: no hook runs);
# 0.2 s after it by _exit or exec (the hooks write what is still counted).
# Its log must count exactly the stalls the client saw (a repeat line and
# the findings it counts are not counted twice). Without the timer's
# flush, the signals and crashes left the 3 findings logged in full;
# without the hooks', _exit and exec did.
ENDED_ROUNDS=20

# ended NAME END AFTER [SIGNAL]: runs split_server.py END AFTER under audit
# and its client; then, if given, SIGNAL to the server (and its forked
# child) AFTER seconds later. The report in $WORK/ended-NAME.json, the
# client's stalls in $WORK/ended-NAME.client.
ended() {
    local name=$1 end=$2 after=$3 sig=${4:-} out="$WORK/ended-$1.out" conns=1 port="" pid=""
    local srv
    [[ $end == fork ]] && conns=2
    rm -f "$WORK/ended-$name.log"
    : >"$out" # no port of an earlier run
    (
        ulimit -c 0 # the crash leaves no core
        exec timeout -k 5 60 "$NAGLEFIX" audit -l "$WORK/ended-$name.log" -- \
            python3 "$AUDIT_DIR/split_server.py" "$end" "$after"
    ) >"$out" 2>"$WORK/ended-$name.err" &
    srv=$!
    wait_until 15 grep -q '^PORT ' "$out"
    read -r _ port _ pid < <(grep '^PORT ' "$out")
    timeout 60 python3 "$AUDIT_DIR/line_client.py" "$H" "${port:-1}" "$ENDED_ROUNDS" "$conns" \
        >"$WORK/ended-$name.client" 2>&1
    if [[ -n $sig ]]; then
        sleep "$after"
        # shellcheck disable=SC2046 # the child's pid, if any
        kill -"$sig" "${pid:-0}" $(sed -n 's/^CHILD //p' "$out")
    fi
    wait "$srv"
    "$NAGLEFIX" report --json "$WORK/ended-$name.log" >"$WORK/ended-$name.json" 2>&1
}

for how in "SIGTERM:wait:1:TERM" "SIGKILL:wait:1:KILL" "SIGSEGV:segv:1" "abort:abort:1" \
    "a forked child and its parent, SIGTERM:fork:1:TERM" "_exit:_exit:0.2" "exec:exec:0.2"; do
    IFS=: read -r what end after sig <<<"$how"
    name="ended by $what $after s after the last stall: every stall the client saw is one finding (report, table)"
    any_selected "$name" || continue
    ended "$end$sig" "$end" "$after" "$sig"
    seen=$(sed -n 's/^stalled=//p' "$WORK/ended-$end$sig.client")
    least=$((ENDED_ROUNDS / 2))
    [[ $end == fork ]] && least=$((least * 2))
    ok "$name" "${CHECK[@]}" findings "$WORK/ended-$end$sig.json" "${seen:-0}" "$least" \
        "$WORK/ended-$end$sig.err"
done

# --- report reads hostile logs safely: no crash, valid JSON, no escapes ----
cat >"$WORK/hostile.log" <<'LOG'
{"event":"repeat","side":"connect","peer":"1.2.3.4:80","count":2305843009213693952,"total_stall_ms":1}
{"event":"repeat","side":"connect","peer":"1.2.3.4:80","count":nan,"total_stall_ms":1}
{"event":"split_write","side":"connect","peer":"1.2.3.4:80","stall_ms":nan}
{"event":"split_write","side":"connect","peer":"1.2.3.5:80","writes":["a\",1}, {"x":1],"stall_ms":5}
{"event":"split_write","side":"connect","peer":"\u001b]0;pwned\u0007\u000aFAKE ROW","writes":[6,7],"stall_ms":40}
{"event":"split_write","side":"connect","peer":"1.2.3.6:80","writes":[6,7],"stall_ms":"\u12"}
LOG
timeout 20 "$NAGLEFIX" report "$WORK/hostile.log" >"$WORK/hostile.out" 2>&1
ok "report: a hostile log does not crash it" test $? -le 1
ok "report: no control character from the log reaches the table" \
    sh -c '! LC_ALL=C grep -q -e "[[:cntrl:]]" -e "^FAKE ROW" "$1"' sh "$WORK/hostile.out"
ok "report --json: valid JSON from a hostile log" \
    sh -c 'timeout 20 "$1" report --json "$2" | python3 -m json.tool >/dev/null' sh "$NAGLEFIX" "$WORK/hostile.log"

# --- report scales: 100,000 distinct peers, each twice (a linear search
# took 19 s; twice, so a lookup that never finds a group shows) ------------
python3 -c '
import sys
line = ("{\"event\":\"split_write\",\"time\":\"2026-11-30T00:00:00.000Z\",\"pid\":1,"
        "\"prog\":\"x\",\"fd\":3,\"side\":\"connect\",\"peer\":\"10.%d.%d.%d:80\","
        "\"writes\":[6,7],\"stall_ms\":40.5,\"caller\":\"x+0x1\"}\n")
with open(sys.argv[1], "w") as f:
    for _ in range(2):
        for i in range(100000):
            f.write(line % (i >> 16, (i >> 8) & 255, i & 255))
' "$WORK/peers.log"
timeout 5 "$NAGLEFIX" report "$WORK/peers.log" >"$WORK/peers.out" 2>&1
rc=$?
ok "report: 100,000 distinct peers twice, one row each with 2 findings, within 5 s" \
    test "$rc" = 0 -a "$(grep -c ' connect  *2 ' "$WORK/peers.out")" = 100000
rm -f "$WORK/peers.log" "$WORK/peers.out"

# --- FIX column: a bulk writer (more than 16 writes, or more than 16 KiB
# before the read) is better fixed by auto; a two-piece request by coalesce
printf '%s\n' \
    '{"event":"split_write","side":"connect","peer":"192.0.2.9:11211","writes":[10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10],"more_writes":1984,"held":[1],"stall_ms":40.5,"caller":"x+0x1"}' \
    '{"event":"split_write","side":"connect","peer":"192.0.2.10:80","writes":[8192,8192,1024],"held":[1,2],"stall_ms":41.0,"caller":"x+0x1"}' \
    '{"event":"split_write","side":"accept","local":"192.0.2.11:8000","writes":[6,7],"held":[1],"stall_ms":40.0,"caller":"x+0x1"}' \
    >"$WORK/bulk.log"
"$NAGLEFIX" report "$WORK/bulk.log" >"$WORK/bulk.out" 2>&1
ok "report: many writes before the read -> auto" grep -q "connect 192.0.2.9:11211 auto" "$WORK/bulk.out"
ok "report: over 16 KiB before the read -> auto" grep -q "connect 192.0.2.10:80 auto" "$WORK/bulk.out"
ok "report: a two-piece response on the accept side -> nodelay" \
    grep -q "accept 192.0.2.11:8000 nodelay" "$WORK/bulk.out"

# --- FIX column: the peer's split writes met by our delayed ACK (recv_split)
# -> quickack on this side, in a group of their own beside the same
# address's split_write group; a repeat says what it counts ("of"), one
# without "of" (an older library's) counts split writes
printf '%s\n' \
    '{"event":"recv_split","side":"accept","local":"192.0.2.12:8000","peer":"192.0.2.99:5000","pieces":[6,7],"caller":"x+0x1","stall_ms":43.9,"ato_ms":40.000}' \
    '{"event":"repeat","of":"recv_split","side":"accept","local":"192.0.2.12:8000","pieces":[6,7],"caller":"x+0x1","count":4,"total_stall_ms":176.0,"worst_stall_ms":44.1}' \
    '{"event":"recv_split","side":"connect","local":"192.0.2.99:5001","peer":"192.0.2.13:80","pieces":[186,12],"caller":"x+0x1","stall_ms":43.7,"ato_ms":40.000}' \
    '{"event":"split_write","side":"accept","local":"192.0.2.12:8000","writes":[6,7],"held":[1],"stall_ms":40.0,"caller":"x+0x1"}' \
    '{"event":"repeat","side":"accept","local":"192.0.2.12:8000","writes":[6,7],"held":[1],"caller":"x+0x1","count":2,"total_stall_ms":80.0,"worst_stall_ms":40.0}' \
    >"$WORK/recv.log"
"$NAGLEFIX" report --json "$WORK/recv.log" >"$WORK/recv.json"
"$NAGLEFIX" report "$WORK/recv.log" >"$WORK/recv.out" 2>&1
ok "report: recv_split on the accept side -> accept ADDR quickack, its repeat counted" \
    "${CHECK[@]}" fix "$WORK/recv.json" accept 192.0.2.12:8000 "accept 192.0.2.12:8000 quickack" 5 43
ok "report: recv_split on the connect side -> connect ADDR quickack" \
    "${CHECK[@]}" fix "$WORK/recv.json" connect 192.0.2.13:80 "connect 192.0.2.13:80 quickack" 1 43
ok "report: the same address's split writes stay a group of their own (3 findings, nodelay)" \
    python3 -c '
import json, sys
g = [x for x in json.load(open(sys.argv[1])) if x["peer"] == "192.0.2.12:8000"]
sys.exit(sorted((x["finding"], x["findings"], x["fix"]) for x in g) !=
         [("recv_split", 5, "accept 192.0.2.12:8000 quickack"),
          ("split_write", 3, "accept 192.0.2.12:8000 nodelay")])' "$WORK/recv.json"
ok "report: table rows with quickack, and the legend saying when" bash -c "
    grep -q '^192.0.2.12:8000 .*accept .*\[6,7\].*accept 192.0.2.12:8000 quickack' '$WORK/recv.out' &&
    grep -q '^192.0.2.13:80 .*connect .*\[186,12\].*connect 192.0.2.13:80 quickack' '$WORK/recv.out' &&
    grep -q '^quickack: the peer wrote in pieces' '$WORK/recv.out'"
ok "report: no quickack legend without a recv_split row" bash -c "! grep -q '^quickack:' '$WORK/bulk.out'"

# --- audit=1 on a fix: what it prevented, with no stall ----------------------
for fix in nodelay coalesce auto; do
    any_selected "$fix audit=1: still fixed" "$fix audit=1: prevented findings, stall null" \
        "$fix audit=1: report shows them with no stall" || continue
    printf 'default %s audit=1\n' "$fix" >"$WORK/$fix.conf"
    rm -f "$WORK/$fix-audit.log"
    fast=$(timeout 60 "$NAGLEFIX" -c "$WORK/$fix.conf" -l "$WORK/$fix-audit.log" -- \
        "${JAVA[@]}" split 2>>"$WORK/$fix-audit.err" | sed -n 's/^median_ms=\([0-9.]*\) .*/\1/p')
    selected "$fix audit=1: still fixed" && assert_ms_lt "$fix audit=1: still fixed" "${fast:-NA}" 5
    ok "$fix audit=1: prevented findings, stall null" "${CHECK[@]}" prevented "$WORK/$fix-audit.log"
    "$NAGLEFIX" report --json "$WORK/$fix-audit.log" >"$WORK/$fix-audit.json"
    ok "$fix audit=1: report shows them with no stall" \
        "${CHECK[@]}" group "$WORK/$fix-audit.json" connect "$H:$PORT" "[6,7]" $((ROUNDS / 2)) null
done

# --- report over several logs: sorted by total stall -------------------------
"$NAGLEFIX" report "$WORK/java-split.log" "$WORK/threads.log" >"$WORK/report.txt" 2>&1
ok "report of two logs: one group, all findings" \
    test "$(grep -c "^$H:$PORT " "$WORK/report.txt")" = 1
"$NAGLEFIX" report "$WORK/http.log" "$WORK/threads.log" >"$WORK/report2.txt" 2>&1
ok "report of two logs: the larger total (8 threads) first" \
    bash -c "sed -n 2p '$WORK/report2.txt' | grep -q ' connect '"

# --- report of what is no log: one line saying why, exit 1 -------------------
mkdir -p "$WORK/a-dir"
: >"$WORK/empty.log"
printf 'hello\n' >"$WORK/text.log"
for bad in "no-such.log:No such file or directory" "a-dir:a directory, not a log" \
    "empty.log:empty file" "text.log:not an audit log"; do
    name=${bad%%:*} why=${bad#*:}
    "$NAGLEFIX" report "$WORK/$name" >"$WORK/report3.txt" 2>&1
    rc=$?
    ok "report of $name: exit 1, one line: $why" bash -c "[[ $rc == 1 &&
        \$(wc -l <'$WORK/report3.txt') == 1 ]] && grep -q 'cannot report $WORK/$name: $why' '$WORK/report3.txt'"
done
"$NAGLEFIX" report "$WORK/java-split.log" "$WORK/text.log" >"$WORK/report4.out" 2>"$WORK/report4.err"
rc=$?
ok "report of a log and a text file: exit 1, the table of the log, one line on the other" \
    bash -c "[[ $rc == 1 && \$(wc -l <'$WORK/report4.err') == 1 ]] &&
        grep -q 'text.log: not an audit log' '$WORK/report4.err' && grep -q '^$H:$PORT ' '$WORK/report4.out'"

# --- bad log paths: one message, output and exit status intact --------------
# (the six runs judge no time: they run side by side, each with files of
# its own, then are judged in order)
mkdir -p "$WORK/a-directory"
ln -sf "$WORK/symlink-target" "$WORK/a-symlink"
BAD=("$WORK/a-directory" "$WORK/a-symlink" "$WORK/missing-dir/x.log")
# bad_run N BAD HOW: the Java client ended by exit 3, under a log it
# cannot write, BAD, given by HOW (cli: -l; lib: NAGLEFIX_LOG); its output,
# errors and status in $WORK/bad-N.{out,err,rc}
bad_run() {
    local cmd
    if [[ $3 == cli ]]; then
        cmd=("$NAGLEFIX" audit -l "$2" --)
    else
        cmd=(env NAGLEFIX_LOG="$2" "$NAGLEFIX" -m audit --)
    fi
    timeout 60 "${cmd[@]}" sh -c '"$@"; exit 3' sh "${JAVA[@]}" split \
        >"$WORK/bad-$1.out" 2>"$WORK/bad-$1.err"
    echo $? >"$WORK/bad-$1.rc"
}
i=0 runs=()
for bad in "${BAD[@]}"; do
    for how in cli lib; do
        bad_run "$i" "$bad" "$how" &
        runs+=($!) i=$((i + 1))
    done
done
wait "${runs[@]}"
i=0
for bad in "${BAD[@]}"; do
    what=${bad##*/}
    for how in cli lib; do
        rc=$(cat "$WORK/bad-$i.rc")
        ok "bad log ($what, $how): exit status 3 kept" test "$rc" = 3
        ok "bad log ($what, $how): output intact" grep -q '^median_ms=' "$WORK/bad-$i.out"
        ok "bad log ($what, $how): one message" \
            test "$(grep -c 'naglefix\( audit\)\?: cannot write log' "$WORK/bad-$i.err")" = 1 -a \
            "$(wc -l <"$WORK/bad-$i.err")" = 1
        i=$((i + 1))
    done
done
ok "the symlink was not followed" test ! -e "$WORK/symlink-target"

# --- the audit command's exit status is COMMAND's ----------------------------
"$NAGLEFIX" audit -- sh -c 'exit 7' 2>/dev/null
ok "audit: exit status of COMMAND (7)" test $? = 7
"$NAGLEFIX" audit -- /nonexistent/command 2>/dev/null
ok "audit: command not found is 127" test $? = 127
"$NAGLEFIX" audit -l '/tmp/x.%p' -- true 2>/dev/null
ok "audit: -l with %p is a usage error (125)" test $? = 125

# --- a usage error names what is wrong: status 125, nothing on stdout --------
for bad in "unknown option '--bogus'|--bogus -- true" "option '-l' needs a LOG|-l" \
    "no COMMAND|--json --" "LOG is one file|-l stderr true"; do
    IFS='|' read -r why args <<<"$bad"
    # shellcheck disable=SC2086 # args are words
    "$NAGLEFIX" audit $args >"$WORK/usage.out" 2>"$WORK/usage.err"
    rc=$?
    ok "audit $args: usage error (125) naming it: $why" bash -c "[[ $rc == 125 && ! -s '$WORK/usage.out' ]] &&
        head -n 1 '$WORK/usage.err' | grep -qF \"naglefix audit: $why\""
done
"$NAGLEFIX" audit --help >"$WORK/usage.out" 2>&1
rc=$?
ok "audit --help: the usage on stdout, status 0" bash -c "[[ $rc == 0 ]] && grep -q '^usage: naglefix audit' '$WORK/usage.out'"
# audit's and report's --help and usage errors (tests/usage.sh)
part t_usage.sh bash "$AUDIT_DIR/t_usage.sh"

# --- syslog: our lines in syslog's format, the program's identity untouched -
if [ "$(id -u)" -eq 0 ]; then
    NAGLEFIX_LOG=syslog timeout 60 "$AUDIT_DIR/with_devlog.sh" "$WORK/devlog.out" \
        "$NAGLEFIX" -m audit -- python3 "$AUDIT_DIR/syslog_client.py" "$H" "$PORT" 5
    rc=$?
    if [ "$rc" -eq 77 ]; then
        skip "syslog lines" "no mount namespace or overlayfs"
    else
        ok "syslog: audit lines arrive as <14>... naglefix[pid]: {split_write}" \
            grep -q '^<14>.* naglefix\[[0-9]*\]: {"event":"split_write"' "$WORK/devlog.out"
        ok "syslog: the program's own ident and facility survive our lines" \
            grep -q '^<134>.* myapp: after' "$WORK/devlog.out"
    fi
fi

# --- syslog: the program runs on ---------------------------------------------
NAGLEFIX_LOG=syslog timeout 60 "$NAGLEFIX" -m audit -- sh -c '"$@"; exit 5' sh \
    "${JAVA[@]}" split >"$WORK/syslog.out" 2>"$WORK/syslog.err"
rc=$?
ok "NAGLEFIX_LOG=syslog: exit status and output intact" \
    bash -c "[[ $rc == 5 ]] && grep -q '^median_ms=' '$WORK/syslog.out' && [[ ! -s '$WORK/syslog.err' ]]"

finish
