#!/usr/bin/env bash
# t_scan.sh - `naglefix scan` as a command: a real capture of a split-write
# client read from a file, from standard input and from a pipe; what it
# says of bad input (not a capture, truncated, missing, usage errors),
# with the findings read up to the fault still printed; scan on one
# thread (no clone, whatever the batches: its speed must not depend on a
# second core) and under a limit on the address space: the same findings;
# `naglefix report` reading scan's JSON lines beside an audit
# log; the public captures (public.sh: nobody here wrote them, none holds
# a Nagle stall; Wireshark's http.cap has a slow-start download of full
# segments each waiting for a delayed ACK, a congestion window's wait): no
# row from any, and where one cannot be read whole, exit 1 and one line
# naming it and the offset. Ends "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$TOP/tests/lib.sh"
# shellcheck source=public.sh
. "$HERE/public.sh"
export LC_ALL=C
clean_env
NF="$TOP/build/naglefix"
MODEL="$TOP/build/tests/wire/model"
need_built make "$NF"
need_built "make test-wire" "$MODEL"
scratch_dir nf-scan

# ok NAME CMD...: pass if CMD succeeds, else fail with its output.
ok() {
	local name=$1
	shift
	selected "$name" || return 0
	if "$@" >"$TMP/ok.log" 2>&1; then pass "$name"; else fail "$name" "" "$TMP/ok.log"; fi
}

# rows FILE: the rows scan --json writes for FILE (stdin if -), as
# "side local peer stalls stall_ms" lines.
rows() {
	python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["side"], r["local"], r["peer"], r["stalls"], r["stall_ms"])'
}

# The capture: legacy_client.py (split writes, 13 rounds) against
# legacy_server.py on loopback, tcpdump writing it, in immediate mode: by
# default libpcap's ring hands packets over a block at a time, a block
# when it fills or its timer fires, and a tcpdump stopped before either
# had written none of them (2 runs in 10 here: "capture: 24 bytes").
sleep 60 2>/dev/null | timeout 60 python3 "$TOP/tests/programs/legacy_server.py" 0 60 >"$TMP/srv.out" 2>&1 &
srv=$!
wait_until 5 grep -q '^PORT' "$TMP/srv.out"
PORT=$(awk '/^PORT/ { print $2 }' "$TMP/srv.out")
timeout 30 tcpdump --immediate-mode -B 8192 -i lo -U -w "$TMP/cap.pcap" "tcp port $PORT" 2>"$TMP/td.err" &
td=$!
wait_until 5 grep -q listening "$TMP/td.err"
timeout 30 python3 "$TOP/tests/programs/legacy_client.py" 127.0.0.1 "$PORT" 13 split >"$TMP/client.out"
sleep 0.2
kill -INT "$td"
wait "$td"
kill "$srv" 2>/dev/null
measured=$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' "$TMP/client.out")

"$NF" scan --json "$TMP/cap.pcap" 2>"$TMP/scan.err" | rows >"$TMP/rows"
# the stalls a reader of the packets finds by hand (tshark): 11 or 12 of
# the 13 rounds (a Linux receiver ACKs at once at first)
truth=$(python3 "$HERE/capcheck.py" truth "$TMP/cap.pcap" | wc -l)
echo "capture: $(stat -c %s "$TMP/cap.pcap") bytes; client: $(cat "$TMP/client.out"); scan: $(tr '\n' ';' <"$TMP/rows"); the packets show $truth stalls"
ok "file: one connect row, as many stalls as the packets show ($truth)" \
	awk -v p="$PORT" -v n="$truth" 'NR == 1 && $1 == "connect" && $3 == "127.0.0.1:" p && $4 == n && n >= 10 { ok = 1 } END { exit !(ok && NR == 1) }' "$TMP/rows"
ok "file: median within 10% of the client's ($measured ms)" \
	awk -v m="$measured" '{ d = $5 - m; if (d < 0) d = -d; exit !(m > 30 && d <= m / 10) }' "$TMP/rows"
ok "file: the stats line on stderr" grep -q '^naglefix scan: [0-9]* segments, 1 connections' "$TMP/scan.err"
"$NF" scan --json - <"$TMP/cap.pcap" 2>/dev/null | rows >"$TMP/rows-stdin"
ok "standard input: the same rows" cmp "$TMP/rows" "$TMP/rows-stdin"
cat "$TMP/cap.pcap" | "$NF" scan --json - 2>/dev/null | rows >"$TMP/rows-pipe"
ok "a pipe: the same rows" cmp "$TMP/rows" "$TMP/rows-pipe"
"$NF" scan "$TMP/cap.pcap" >"$TMP/table" 2>/dev/null
ok "table: the row and its fix" grep -q "^127.0.0.1:[0-9]* *127.0.0.1:$PORT *connect *1 *$truth *100+100 .*connect 127.0.0.1:$PORT coalesce" "$TMP/table"

# A veth between two namespaces, captured at both of its ends (tcpdump -i
# in each namespace, merged by time with mergecap: a run of
# t_watch_netns.sh under load, fixtures/veth-ends-late-ack.pcapng): every
# segment twice, the second copy tens of microseconds after the first,
# but in one round the server's delayed ACK reached the client's end 1.6
# ms after it left the server's (the receiving namespace's softirq ran
# late) and the client's S2 left 16 us after it came. The client's end
# alone shows 12 stalls (capcheck.py's truth); both ends together must
# too (11 when S2 is timed from the copy at the server's end).
"$NF" scan --json "$HERE/fixtures/veth-ends-late-ack.pcapng" 2>/dev/null | rows >"$TMP/rows-veth"
ok "a veth's two ends: one connect row, 12 stalls, an ACK's copy 1.6 ms late" \
	grep -qx "connect 192.0.2.1:35074 192.0.2.2:42879 12 [0-9.]*" "$TMP/rows-veth"

# Bad input.
size=$(stat -c %s "$TMP/cap.pcap")
head -c $((size * 2 / 3)) "$TMP/cap.pcap" >"$TMP/cut.pcap"
"$NF" scan --json "$TMP/cut.pcap" >"$TMP/cut.out" 2>"$TMP/cut.err"
rc=$?
ok "truncated: exit 1" test "$rc" -eq 1
ok "truncated: one line naming the file and the offset" \
	grep -q "^naglefix scan: $TMP/cut.pcap: offset [0-9]*: " "$TMP/cut.err"
ok "truncated: the stalls read up to there still printed" \
	sh -c 'rows() { python3 -c "import json,sys; [print(json.loads(l)[\"stalls\"]) for l in sys.stdin]"; }; n=$(rows <"$1"); [ "$n" -ge 4 ] && [ "$n" -lt "$2" ]' sh "$TMP/cut.out" "$truth"
printf 'GET / HTTP/1.0\r\n\r\nnot a capture at all\n' >"$TMP/text"
"$NF" scan "$TMP/text" >"$TMP/text.out" 2>"$TMP/text.err"
rc=$?
ok "not a capture: exit 1, the file and offset 0 named" \
	sh -c '[ "$1" -eq 1 ] && grep -q "^naglefix scan: $2: offset 0: " "$3"' sh "$rc" "$TMP/text" "$TMP/text.err"
"$NF" scan "$TMP/no-such" >"$TMP/missing.out" 2>"$TMP/missing.err"
rc=$?
ok "missing file: exit 1, strerror" \
	sh -c '[ "$1" -eq 1 ] && grep -q "no-such: No such file or directory" "$2"' sh "$rc" "$TMP/missing.err"
# What could not be read gets its error and no verdict: no table, no "no
# stall found", no stats line (nothing was read to count).
"$NF" scan --json "$TMP/text" >"$TMP/text-json.out" 2>"$TMP/text-json.err"
mkdir -p "$TMP/a-dir"
"$NF" scan "$TMP/a-dir" >"$TMP/dir.out" 2>"$TMP/dir.err"
for f in text text-json missing dir; do
	ok "$f: the error alone, no verdict" sh -c '[ ! -s "$1.out" ] && [ "$(wc -l <"$2")" = 1 ] &&
		grep -q "^naglefix scan: .*'"$TMP"'/" "$2" && ! grep -q "found\|segments" "$2"' \
		sh "$TMP/$f" "$TMP/$f.err"
done
# A capture that holds no TCP connection seen both ways: nothing to judge,
# said so, not "no stall found" (exit 0: the capture was read).
tcpdump -r "$HERE/fixtures/lo-us.pcap" -w "$TMP/no-tcp.pcap" 'not tcp' 2>/dev/null
"$NF" scan "$TMP/no-tcp.pcap" >"$TMP/no-tcp.out" 2>"$TMP/no-tcp.err"
rc=$?
ok "a capture without TCP: exit 0, nothing to judge, no verdict" sh -c '[ "$1" -eq 0 ] &&
	grep -qx "naglefix: no TCP connection seen both ways: nothing to judge" "$2" &&
	! grep -q "stall found" "$2" && grep -q "^naglefix scan: 0 segments" "$3"' \
	sh "$rc" "$TMP/no-tcp.out" "$TMP/no-tcp.err"
"$NF" scan "$TMP/no-such" "$TMP/cap.pcap" >"$TMP/both.out" 2>/dev/null
rc=$?
ok "a bad capture among good ones: exit 1, the good one still read" \
	sh -c '[ "$1" -eq 1 ] && grep -q " $3 *100+100 " "$2"' sh "$rc" "$TMP/both.out" "$truth"
"$NF" scan >/dev/null 2>"$TMP/usage.err"
rc=$?
ok "no capture: usage error (125)" sh -c '[ "$1" -eq 125 ] && grep -q "no CAPTURE" "$2"' sh "$rc" "$TMP/usage.err"
"$NF" scan --bogus "$TMP/cap.pcap" >/dev/null 2>"$TMP/opt.err"
rc=$?
ok "unknown option named: usage error (125)" \
	sh -c '[ "$1" -eq 125 ] && grep -q "unknown option .--bogus." "$2"' sh "$rc" "$TMP/opt.err"

# One thread: scan reads, decodes and detects in turn (scan_feed.c), with
# no second thread to wait for (a thread off its processor while the other
# core is busy held the other up: 1.35x the quiet time), over a model
# capture of many batches of segments; and a truncated one is still named
# with its offset. strace sees no clone (fails if scan makes a thread).
"$MODEL" -o "$TMP/model.pcap" --conns 2000 --concurrent 400 --rounds 8 --gap 100 \
	--mix onewrite:90,split:5,split-server:5 --rtt 2 --seed 5 --truth summary >"$TMP/model.truth"
head -c $(($(stat -c %s "$TMP/model.pcap") / 2)) "$TMP/model.pcap" >"$TMP/model-cut.pcap"
for f in model model-cut; do
	strace -f -o "$TMP/$f.trace" -e trace=clone3,clone \
		"$NF" scan --json "$TMP/$f.pcap" >"$TMP/$f.threads" 2>&1
	echo "exit $?" >>"$TMP/$f.threads"
done
ok "one thread: no clone on a capture of many batches" sh -c '! grep -q "clone" "$1"' sh "$TMP/model.trace"
ok "one thread: no clone on a truncated capture" sh -c '! grep -q "clone" "$1"' sh "$TMP/model-cut.trace"
ok "one thread: the truncated capture named with its offset, exit 1" \
	sh -c 'grep -q "^naglefix scan: .*model-cut.pcap: offset [0-9]*: " "$1" && tail -n 1 "$1" | grep -qx "exit 1"' \
	sh "$TMP/model-cut.threads"
want=$(sed -n 's/^summary .*stalls=\([0-9]*\).*/\1/p' "$TMP/model.truth")
got=$(grep '"event":"wire_stall"' "$TMP/model.threads" | rows | awk '{ s += $4 } END { print s + 0 }')
ok "one thread: the model's $want stalls, no more, no fewer ($got)" test "$got" = "$want" -a "$want" -gt 0
# Under a limit on the address space (ulimit -v, 1 GB): the connections'
# array is reserved at once, 3.2 GB where it can be, less under a limit;
# the same findings (fails if the reservation does not give way).
(ulimit -v 1000000 && exec "$NF" scan --json "$TMP/model.pcap") >"$TMP/model.ulimit" 2>&1
echo "exit $?" >>"$TMP/model.ulimit"
ok "under ulimit -v 1 GB: the same rows, stats line and exit status" \
	cmp "$TMP/model.threads" "$TMP/model.ulimit"
ok "2>&1: the rows come out whole before the stderr lines" python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()[:-1] # less our "exit N"
n = 0
for l in lines:
    if l.startswith("{"):
        assert json.loads(l)["event"] == "wire_stall" and n == 0, l
    else:
        assert l.startswith("naglefix scan: "), l
        n += 1
assert n >= 1 and len(lines) > n + 10, (n, len(lines))' "$TMP/model.threads"

# The public captures: no row; a status of 0, or 1 with one line.
if public_captures >"$TMP/public" 2>"$TMP/public.err"; then
	: >"$TMP/public.bad"
	while read -r f; do
		"$NF" scan --json "$f" >"$TMP/pub.json" 2>"$TMP/pub.err"
		rc=$?
		errs=$(grep -vc '^naglefix scan: [0-9]* segments\|^naglefix scan: frames skipped' "$TMP/pub.err")
		if [[ -s $TMP/pub.json ]]; then
			echo "$f: $(cat "$TMP/pub.json")" >>"$TMP/public.bad"
		elif ! { ((rc == 0 && errs == 0)) || { ((rc == 1 && errs == 1)) && grep -qF "$f: offset " "$TMP/pub.err"; }; }; then
			echo "$f: status $rc, $errs lines: $(cat "$TMP/pub.err")" >>"$TMP/public.bad"
		fi
	done <"$TMP/public"
	n=$(wc -l <"$TMP/public")
	ok "public captures: no stall found in any of $n, each read whole or its fault named" \
		sh -c 'cat "$1"; test ! -s "$1" -a "$2" -ge 60' sh "$TMP/public.bad" "$n"
else
	fail "public captures" "not installed" "$TMP/public.err"
fi

# report reads scan's lines beside an audit log of another program.
"$NF" scan --json "$TMP/cap.pcap" >"$TMP/scan.json" 2>/dev/null
printf '%s\n' '{"event":"split_write","time":"2026-12-01T00:00:00.000Z","pid":1,"prog":"x","fd":3,"side":"connect","local":"10.0.0.1:5","peer":"10.9.9.9:80","writes":[6,7],"held":[1],"caller":"x+0x1","stall_ms":41.000}' >"$TMP/audit.log"
"$NF" report --json "$TMP/scan.json" "$TMP/audit.log" >"$TMP/report.json" 2>"$TMP/report.err"
ok "report: scan's row and the audit log's, each with its fix" python3 -c '
import json, sys
rows = {r["peer"]: r for r in json.load(open(sys.argv[1]))}
s = rows["127.0.0.1:" + sys.argv[2]]
a = rows["10.9.9.9:80"]
assert s["findings"] == int(sys.argv[3]) and s["fix"] == "connect 127.0.0.1:%s coalesce" % sys.argv[2], s
assert s["caller"] == "(packets: scan)", s
assert a["findings"] == 1, a' "$TMP/report.json" "$PORT" "$truth"
finish
