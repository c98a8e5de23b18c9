#!/usr/bin/env bash
# t_model.sh - `naglefix scan` on captures of a real round trip, written
# by the model of two TCP ends (build/tests/wire/model, tests/wire/model.c:
# this kernel has no netem). For every scenario, at every capture point
# (near the holder, near the receiver, in the middle of the path), round
# trips of 20 and 100 ms, ACK timers of 40 ms (Linux) and 200 ms (another
# stack), the model's capture is read by `naglefix scan --json` and what
# it says is held against the model's ground truth:
#   stalls  (split, split-server, think-nagle: a think shorter than the
#           ACK timer that Nagle absorbs): one row, the holder's
#           address:port as `local`, its side, the stall count, the
#           median within 10% of the truth's (the ACK timer plus a round
#           trip, S1 to S2 at the capture point)
#   nothing (the controls onewrite, nodelay, quickack, a think below the
#           ACK timer under TCP_NODELAY, a lost second piece under
#           TCP_NODELAY; the traps: think time equal to and above the ACK
#           timer that nothing holds, one-way senders whose pauses fall
#           near the ACK timer, bulk with a short tail, RTO
#           retransmissions, a zero window): no row, and the model's
#           truth says no stall either
#   counted (oneway-nagle: a one-way sender of small messages faster than
#           the ACK timer, each held until R's delayed ACK): no row, and
#           each hold counted on scan's stats line as one no answer
#           followed, as many as the truth's
# Then: piece sizes (1000-byte pieces stall; a full segment then a small
# one does not), one direction captured (stalls that cannot be seen: none
# found, the connection counted one way only), 64 connections 32 at once
# of mixed scenarios, and the capture's forms on one stalling case (IPv6,
# raw IP, pcapng, ns timestamps, big-endian pcap, snaplen 96, no
# handshake, sequence numbers that wrap, quick ACKs at the start, three
# connections), each also read whole by Wireshark's reader (capinfos: the
# file is a capture, every packet in it, read to its end without an error).
# Each trap is also read naively (the signature without its refinements):
# one of its captures at least must show it, or the trap tests nothing.
# Each check is named SCENARIO/at-WHERE/rtt-N/ack-M. T=pattern picks
# checks (tests/lib.sh). Ends with "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source=../lib.sh
source "$TOP/tests/lib.sh"
export LC_ALL=C
clean_env
MODEL=$TOP/build/tests/wire/model
NF=${NAGLEFIX_BIN:-$TOP/build/naglefix} # another build's command: NAGLEFIX_BIN
need_built "make test-wire" "$MODEL" "$NF"
scratch_dir t_model

# The comparison: truth (the model's stdout), scan's JSON lines, what is
# expected ("stall", "none", or "unseen": stalls the capture cannot show,
# none found). Prints why not on stdout, exit 1; or 0.
cat >"$TMP/cmp.py" <<'EOF'
import json, sys
truth_path, scan_path, expect = sys.argv[1:4]
truth = []
for line in open(truth_path):
    if line.startswith("truth "):
        truth.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
rows = []
for line in open(scan_path):
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        j = json.loads(line)
    except ValueError:
        print("scan wrote a line that is not JSON: %s" % line[:100]); sys.exit(1)
    if j.get("event") == "wire_stall":
        rows.append(j)
if not truth:
    print("model: no truth line"); sys.exit(1)
stalling = [t for t in truth if int(t["stalls"]) > 0]
def short(r):
    return "local=%s peer=%s side=%s stalls=%s stall_ms=%s" % (
        r.get("local"), r.get("peer"), r.get("side"), r.get("stalls"), r.get("stall_ms"))
if expect == "unseen":  # stalls the capture cannot show: none found
    if rows:
        print("scan found %d row(s) the capture cannot show: %s" % (len(rows), "; ".join(short(r) for r in rows[:3])))
        sys.exit(1)
    sys.exit(0)
if expect == "none":
    if stalling:
        print("model: its truth has stalls (%s): not a trap" % stalling[0]); sys.exit(1)
    if rows:
        print("scan found %d row(s) where nothing stalls: %s" % (len(rows), "; ".join(short(r) for r in rows[:3])))
        sys.exit(1)
    sys.exit(0)
# expect == "stall": the truth's rows as scan groups them (a client per
# server end, its port that of its first connection; a server per client
# address)
if not stalling:
    print("model: its truth has no stall"); sys.exit(1)
groups = {}
for t in stalling:
    if abs(float(t["stall_ms"]) - float(t["expected_ms"])) > 0.01 * float(t["expected_ms"]):
        print("model: stall %s ms, not the expected %s" % (t["stall_ms"], t["expected_ms"])); sys.exit(1)
    if t["side"] == "connect":
        key = ("connect", t["client"].rsplit(":", 1)[0], t["server"])
    else:
        key = ("accept", t["server"], t["client"].rsplit(":", 1)[0])
    g = groups.setdefault(key, {"local": t["holder"], "side": t["side"], "stalls": 0, "ms": [],
                                "holders": set()})
    g["stalls"] += int(t["stalls"])
    g["ms"].append(float(t["stall_ms"]))
    g["holders"].add(t["holder"])
def addr(end):
    return (end or "").rsplit(":", 1)[0]
def key_of(r):  # a row as the truth's groups are keyed
    if r.get("side") == "connect":
        return ("connect", addr(r.get("local")), r.get("peer"))
    return ("accept", r.get("local"), addr(r.get("peer")))
bad = []
if len(rows) != len(groups):
    bad.append("scan found %d row(s), the truth has %d: %s" % (len(rows), len(groups),
               "; ".join(short(r) for r in rows[:3]) or "none"))
for key, g in groups.items():
    r = [r for r in rows if key_of(r) == key]
    if not r:
        bad.append("no row for holder %s (%s, %d stalls)" % (g["local"], g["side"], g["stalls"]))
        continue
    r = r[0]
    if r.get("local") not in g["holders"]:
        bad.append("row %s: not one of the truth's holders %s" % (r.get("local"), sorted(g["holders"])))
    med = sorted(g["ms"])[len(g["ms"]) // 2]
    if r.get("side") != g["side"]:
        bad.append("holder %s: side %s, truth %s" % (g["local"], r.get("side"), g["side"]))
    if r.get("stalls") != g["stalls"]:
        bad.append("holder %s: %s stalls, truth %d" % (g["local"], r.get("stalls"), g["stalls"]))
    ms = r.get("stall_ms")
    if not isinstance(ms, (int, float)) or abs(ms - med) > 0.10 * med:
        bad.append("holder %s: median %s ms, truth %.3f" % (g["local"], ms, med))
if bad:
    print("; ".join(bad)); sys.exit(1)
EOF

# The signature read naively (no refinement: any pure ACK of R at least
# 10 ms after H's small segment S1, H's next data within 1 ms and 1.5 of
# the path's round trips after it): how many times a trap's capture shows
# it. A trap none of whose captures shows it tests nothing. Reads the
# model's default form (pcap, Ethernet, IPv4). Args: FILE RTT_MS.
cat >"$TMP/naive.py" <<'EOF'
import struct, sys
path, rtt = sys.argv[1], float(sys.argv[2]) / 1000
data = open(path, "rb").read()
magic = struct.unpack("<I", data[:4])[0]
div = 1e9 if magic == 0xa1b23c4d else 1e6
off, pkts = 24, []
while off + 16 <= len(data):
    sec, frac, caplen, _ = struct.unpack("<IIII", data[off:off + 16])
    f = data[off + 16:off + 16 + caplen]
    off += 16 + caplen
    ip = f[14:]
    ihl, tot = (ip[0] & 15) * 4, struct.unpack(">H", ip[2:4])[0]
    tcp = ip[ihl:]
    doff = (tcp[12] >> 4) * 4
    pkts.append((sec + frac / div, (ip[12:16], tcp[0:2]), tcp[13], tot - ihl - doff))
found = 0
for i, (t1, src, fl, ln) in enumerate(pkts):
    if not 0 < ln < 1460:
        continue
    j = next((k for k in range(i + 1, len(pkts)) if pkts[k][1] != src), None)
    if j is None or pkts[j][3] != 0 or pkts[j][0] - t1 < 0.010:
        continue
    k = next((k for k in range(j + 1, len(pkts)) if pkts[k][1] == src), None)
    if k is not None and pkts[k][3] > 0 and pkts[k][0] - pkts[j][0] <= 0.001 + 1.5 * rtt:
        found += 1
print(found)
EOF
declare -A LOOKS

# One python3 for every comparison and naive reading (a start costs some
# 0.1 s of CPU, and there are some 500): the checker runs cmp.py or
# naive.py on each request line (NAME, then its arguments, tab-separated)
# as `python3 NAME.py ARGS` would, and answers with one line: the status,
# a tab, what it printed (its lines joined by " / "). It also starts the
# model and scan (request "run LIMIT OUT ERR CMD..."): one process each,
# not a timeout(1) and the command (each start costs some 9 ms of CPU on
# a loaded machine, and there are some 530).
cat >"$TMP/checker.py" <<'EOF2'
import contextlib, io, subprocess, sys
def run(limit, out, err, *cmd):
    # as `timeout LIMIT CMD >OUT 2>ERR` would: CMD's status, 124 if it
    # outlived LIMIT seconds (killed), 128 + N if signal N ended it
    with open(out, "wb") as o, open(err, "wb") as e:
        try:
            rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                                timeout=float(limit)).returncode
        except subprocess.TimeoutExpired:
            return 124
        except OSError as x:
            e.write(("%s: %s\n" % (cmd[0], x.strerror)).encode())
            return 127
    return 128 - rc if rc < 0 else rc
progs = {}
for path in sys.argv[1:]:
    name = path.rsplit("/", 1)[-1][:-3]
    progs[name] = compile(open(path).read(), path, "exec")
for line in sys.stdin:
    name, *args = line.rstrip("\n").split("\t")
    out, status = io.StringIO(), 0
    if name == "run":
        sys.stdout.write("%d\t\n" % run(*args))
        sys.stdout.flush()
        continue
    sys.argv = [name + ".py"] + args
    with contextlib.redirect_stdout(out):
        try:
            exec(progs[name], {"__name__": "__main__"})
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else int(e.code is not None)
        except Exception as e:  # python3 would die with its traceback
            print("%s.py: %s: %s" % (name, type(e).__name__, e))
            status = 1
    sys.stdout.write("%d\t%s\n" % (status, out.getvalue().strip().replace("\n", " / ")))
    sys.stdout.flush()
EOF2
coproc CHECKER { exec python3 "$TMP/checker.py" "$TMP/cmp.py" "$TMP/naive.py"; }
# checker NAME ARGS...: NAME.py's status for ARGS; OUT what it printed.
checker() {
	local IFS=$'\t' st
	OUT="the checker (python3) is gone"
	{ printf '%s\n' "$*" >&"${CHECKER[1]}" && read -r st OUT <&"${CHECKER[0]}"; } 2>/dev/null || return 2
	return "$st"
}

# run_case NAME EXPECT MODEL-ARGS...: the model, scan, the comparison.
run_case() {
	local name=$1 expect=$2 rc
	shift 2
	selected "$name" || return 0
	local f=${CASE_FILE:-$TMP/case.pcap}
	if ! checker run 300 "$TMP/truth" "$TMP/model.err" "$MODEL" -o "$f" "$@"; then
		fail "$name" "the model failed: $(head -n 1 "$TMP/model.err")"
		return
	fi
	checker run 300 "$TMP/scan.json" "$TMP/scan.err" "$NF" scan --json "$f"
	rc=$?
	if ((rc != 0)); then
		fail "$name" "scan exit status $rc: $(head -n 1 "$TMP/scan.err")"
		return
	fi
	if [[ $expect == none && -n ${RTT:-} ]]; then
		local n sc=${name%%/*}
		n=0
		checker naive "$f" "$RTT" && n=$OUT
		LOOKS[$sc]=$((${LOOKS[$sc]:-0} + n))
	fi
	if [[ $expect == unanswered ]]; then
		# a one-way sender's holds: no row, each counted on the stats line
		local held truth
		held=$(sed -n 's/.* \([0-9]*\) held segments* no answer followed.*/\1/p' "$TMP/scan.err")
		truth=$(sed -n 's/^summary .* stalls=\([0-9]*\).*/\1/p' "$TMP/truth")
		if [[ -s $TMP/scan.json ]]; then
			fail "$name" "a row for a one-way sender (model $*)" "$TMP/scan.json"
		elif [[ -z $truth || $truth -eq 0 || ${held:-0} -ne $truth ]]; then
			fail "$name" "${held:-0} unanswered holds counted, truth ${truth:-?} (model $*)" "$TMP/scan.err"
		else
			pass "$name ($held holds counted, not as stalls)"
		fi
		return
	fi
	if checker cmp "$TMP/truth" "$TMP/scan.json" "$expect"; then
		pass "$name"
	else
		fail "$name" "$OUT (model $*)"
	fi
}

# scan must exist before anything here means something
if ! timeout 300 "$NF" scan --help >/dev/null 2>&1; then
	fail "scan-exists" "'naglefix scan --help' fails: no scan command"
	finish
	exit
fi

ROUNDS=10
for rtt in 20 100; do
	for ack in 40 200; do
		below=$((ack / 2))
		above=$((2 * ack + 2 * rtt))
		after_lo=$((ack + rtt + 2))
		after_hi=$((ack + rtt + ack / 2))
		common=(--rtt "$rtt" --ack-timer "$ack" --rounds "$ROUNDS")
		RTT=$rtt
		for at in holder receiver middle; do
			tag="at-$at/rtt-$rtt/ack-$ack"
			c=("${common[@]}" --at "$at" --seed "$((rtt * 1000 + ack))")
			# stalls
			run_case "split/$tag" stall --scenario split "${c[@]}"
			run_case "split-server/$tag" stall --scenario split-server "${c[@]}"
			run_case "think-nagle/$tag" stall --scenario think --think "$below" "${c[@]}"
			# a one-way sender of small messages faster than the ACK timer:
			# Nagle holds each until R's delayed ACK (a stack that delays
			# it; Linux's reader ACKs a small segment it drains at once
			# unless in pingpong mode: the model has no such rule). With
			# no answer to tie them to, the wire cannot tell these holds
			# from a sender's own pauses (oneway-after-ack below): scan
			# counts each on its stats line, not as a stall
			run_case "oneway-nagle/$tag" unanswered --scenario oneway --pause "$((ack / 4)):$((ack / 2))" \
				"${c[@]}" --rounds 30
			# controls
			run_case "onewrite/$tag" none --scenario onewrite "${c[@]}"
			run_case "nodelay/$tag" none --scenario nodelay "${c[@]}"
			run_case "quickack/$tag" none --scenario quickack "${c[@]}"
			# traps: what looks like it and is not
			run_case "think-below/$tag" none --scenario think --nodelay --think "$below" "${c[@]}"
			run_case "think-equal/$tag" none --scenario think --nodelay --think "$ack" "${c[@]}"
			run_case "think-above/$tag" none --scenario think --think "$above" "${c[@]}"
			run_case "oneway-after-ack/$tag" none --scenario oneway \
				--pause "$after_lo:$after_hi" "${c[@]}"
			run_case "oneway-nodelay/$tag" none --scenario oneway --nodelay \
				--pause "$((ack / 2)):$((ack * 3 / 2))" "${c[@]}"
			run_case "bulk-tail/$tag" none --scenario bulk --bulk-segs 16 --tail 300 \
				--gap "$((ack * 3 / 2))" "${c[@]}"
			run_case "rto/$tag" none --scenario rto --lose-every 3 "${c[@]}"
			run_case "rto-second-piece/$tag" none --scenario nodelay --lose-every 2 "${c[@]}"
			run_case "zerowin/$tag" none --scenario zerowin --w1 500 --rcvbuf 2000 \
				--pause 12 --read-pause "$((2 * ack))" "${c[@]}" --rounds 30
		done
	done
done

RTT=
# Each trap seen by the naive reading somewhere (its stalls over all its
# captures), else it tests nothing.
for sc in think-equal think-above oneway-after-ack oneway-nodelay bulk-tail rto zerowin; do
	selected "looks-like/$sc" || continue
	if ((${LOOKS[$sc]:-0} > 0)); then
		pass "looks-like/$sc (${LOOKS[$sc]} naive stalls)"
	elif [[ -z ${LOOKS[$sc]+set} ]]; then
		skip "looks-like/$sc" "none of its cases ran (T)"
	else
		fail "looks-like/$sc" "the naive signature finds nothing in any of its captures: not a trap"
	fi
done

# The capture's forms, on the plain stall (client holder, 20 ms, 40 ms)
# and on the server-side one; each file also read whole by capinfos
# (Wireshark's reader, as tshark's, without tshark's 0.7 s of CPU a start
# loading every dissector): one capinfos for all of them at the end
# (capinfos_all), each file judged on its own row.
FORM_NAMES=() FORM_FILES=() FORM_WANT=()
form_case() {
	local name=$1 line want=
	shift
	CASE_FILE=$TMP/form.${#FORM_NAMES[@]}.pcap run_case "$name" stall "$@"
	selected "$name/capinfos" || return 0
	if [[ -s $TMP/truth ]]; then
		while IFS= read -r line; do
			[[ $line =~ ^summary\ .*packets=([0-9]*) ]] && want=${BASH_REMATCH[1]}
		done <"$TMP/truth"
	fi
	FORM_FILES+=("$TMP/form.${#FORM_NAMES[@]}.pcap")
	FORM_NAMES+=("$name") FORM_WANT+=("$want")
}
# capinfos_all: the verdict "NAME/capinfos" of every form: capinfos's
# count of its file's packets, the model's. If the one capinfos fails
# (a file it cannot read to its end without an error), each file is read
# by a capinfos of its own, as the status of each then says.
capinfos_all() {
	local k n rc file count
	local -A got=()
	((${#FORM_NAMES[@]})) || return 0
	timeout 120 capinfos -T -r -c -M "${FORM_FILES[@]}" >"$TMP/capinfos.out" 2>"$TMP/capinfos.err"
	rc=$?
	if ((rc == 0)); then
		while IFS=$'\t' read -r file count; do got[$file]=$count; done <"$TMP/capinfos.out"
	fi
	for k in "${!FORM_NAMES[@]}"; do
		if ((rc == 0)); then
			n=${got[${FORM_FILES[k]}]:-no row}
		else
			n=$(timeout 60 capinfos -T -r -c -M "${FORM_FILES[k]}" 2>"$TMP/capinfos.err") &&
				n=${n##*$'\t'} || n="exit status $?: ${n##*$'\t'}"
		fi
		if [[ -n ${FORM_WANT[k]} && $n == "${FORM_WANT[k]}" ]]; then
			pass "${FORM_NAMES[k]}/capinfos"
		else
			fail "${FORM_NAMES[k]}/capinfos" "capinfos counted '${n}' packets, the model wrote '${FORM_WANT[k]}'" \
				"$TMP/capinfos.err"
		fi
	done
}
base=(--rtt 20 --ack-timer 40 --rounds "$ROUNDS")
# The sizes: pieces of 1000 bytes (R's MSS estimate grows to the first,
# so it still waits), a full segment then a small one (Minshall: the small
# one goes at once, no earlier small segment being unacknowledged)
for at in holder receiver middle; do
	run_case "big-pieces/at-$at" stall --scenario split --w1 1000 --w2 1000 --at "$at" "${base[@]}"
	run_case "big-pieces-server/at-$at" stall --scenario split-server --w1 1000 --w2 1000 --at "$at" \
		"${base[@]}"
	run_case "full-then-small/at-$at" none --scenario split --w1 1460 --w2 7 --at "$at" "${base[@]}"
	run_case "full-then-small-server/at-$at" none --scenario split-server --w1 1460 --w2 7 \
		--at "$at" "${base[@]}"
done
# One direction captured: the stalls happen but cannot be told (no ACK of
# R's, or no S2 of H's): nothing found, and scan says it saw the
# connection one way only
for only in client server; do
	for sc in split split-server; do
		name="one-direction/$sc/only-$only"
		run_case "$name" unseen --scenario "$sc" --only "$only" "${base[@]}"
		selected "$name/stats" || continue
		if grep -q '[1-9][0-9]* seen one way only' "$TMP/scan.err"; then
			pass "$name/stats"
		else
			fail "$name/stats" "scan's stats line does not count it one way only" "$TMP/scan.err"
		fi
	done
done
# many connections at once, stalling and not, interleaved
for at in holder receiver middle; do
	for rtt in 20 100; do
		run_case "mixed-concurrent/at-$at/rtt-$rtt" stall --conns 64 --concurrent 32 --gap 60 \
			--mix split:2,split-server:2,onewrite:3,nodelay:1,quickack:1,rto:1,bulk:1 \
			--bulk-segs 16 --at "$at" --rtt "$rtt" --ack-timer 40 --rounds "$ROUNDS" --seed "$rtt"
	done
done
for sc in split split-server; do
	for at in holder receiver; do
		form_case "form-ipv6/$sc/at-$at" --scenario "$sc" --at "$at" --ipv6 "${base[@]}"
		form_case "form-raw/$sc/at-$at" --scenario "$sc" --at "$at" --link raw "${base[@]}"
		form_case "form-pcapng/$sc/at-$at" --scenario "$sc" --at "$at" --format pcapng "${base[@]}"
		form_case "form-pcapng-ns-ipv6-raw/$sc/at-$at" --scenario "$sc" --at "$at" --format pcapng \
			--nsec --ipv6 --link raw "${base[@]}"
		form_case "form-pcap-ns/$sc/at-$at" --scenario "$sc" --at "$at" --nsec "${base[@]}"
		form_case "form-big-endian/$sc/at-$at" --scenario "$sc" --at "$at" --big-endian "${base[@]}"
		form_case "form-snaplen-96/$sc/at-$at" --scenario "$sc" --at "$at" --snaplen 96 --resp 1000 \
			"${base[@]}"
		form_case "form-mid-connection/$sc/at-$at" --scenario "$sc" --at "$at" --mid "${base[@]}"
		form_case "form-isn-wrap/$sc/at-$at" --scenario "$sc" --at "$at" --isn-wrap --w1 30 --w2 30 \
			--resp 200 "${base[@]}"
		form_case "form-quick-start/$sc/at-$at" --scenario "$sc" --at "$at" --quick 2 "${base[@]}"
		form_case "form-three-conns/$sc/at-$at" --scenario "$sc" --at "$at" --conns 3 "${base[@]}"
		form_case "form-rtt-100-ack-200/$sc/at-$at" --scenario "$sc" --at "$at" --rtt 100 \
			--ack-timer 200 --rounds "$ROUNDS" --format pcapng --ipv6
	done
done
capinfos_all
# the checker ends at its input's end: waited for, so that its CPU and
# its children's count in this script's
exec {CHECKER[1]}>&-
wait "$CHECKER_PID"
finish
