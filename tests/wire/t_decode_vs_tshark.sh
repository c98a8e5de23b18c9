#!/usr/bin/env bash
# t_decode_vs_tshark.sh - every frame of every capture fixture
# (tests/wire/fixtures/*.pcap, *.pcapng: real tcpdump, dumpcap and editcap
# files, see make-fixtures.sh) read by the packet side's capture reader
# and decoder (capdump.c, built here against build/libnfwire.a) and by
# tshark, field by field: time (ns), direction, addresses, ports, raw
# sequence and ACK numbers, payload length, flags, window, a SYN's MSS
# and window scale; a frame tshark finds no TCP in must be one the
# decoder skips; a record tshark shows that holds no packet (a pcapng
# custom block) is not a frame, and one without a time (a simple packet
# block) takes its section's last time from the reader; TCP inside a UDP
# tunnel (L2TP) is not decoded (the outer packet is UDP). One check per fixture, and one that a
# fixture read from a pipe gives the same lines as from the file. Then the
# same for every public capture (public.sh: files nobody here wrote, the
# pcapng test suite among them): where tshark cannot read one whole, the
# reader must stop too (exit 1, one line naming the file and the byte
# offset), with the same frames before it. Ends "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
cd "$TOP" || exit 2
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
# shellcheck source=public.sh
. "$HERE/public.sh"
export LC_ALL=C
need_built "make" build/libnfwire.a
command -v tshark >/dev/null || { echo "t_decode_vs_tshark.sh: tshark is not installed: run tests/install-deps.sh" >&2; exit 2; }
scratch_dir nf-tshark
DUMP=build/tests/wire/capdump
mkdir -p build/tests/wire
if ! ${CC:-cc} -D_GNU_SOURCE -iquote src -Iinclude -O2 -std=gnu11 -Wall -Wextra ${WERROR--Werror} \
    -o "$DUMP" tests/wire/capdump.c build/libnfwire.a >"$TMP/cc.log" 2>&1; then
    fail "build capdump" "cannot build" "$TMP/cc.log"
    finish
    exit
fi

FIELDS=(frame.time_epoch sll.pkttype frame.packet_flags_direction ip.src ip.dst ipv6.src
    ipv6.dst tcp.srcport tcp.dstport tcp.seq_raw tcp.ack_raw tcp.len tcp.flags
    tcp.window_size_value tcp.options.mss_val tcp.options.wscale.shift frame.encap_type frame.protocols)

# The comparison of OURS with THEIRS (argv): prints the first
# differences; status 0 iff none. One python3 runs it for every file (a
# start costs 0.1 s of CPU): compare below.
cat >"$TMP/compare.py" <<'PY'
import sys
ours = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
theirs = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
theirs = [t for t in theirs if t[-2] != ""]  # a record with no packet is no frame
bad = 0
if len(ours) != len(theirs):
    print(f"{len(ours)} frames read, tshark {len(theirs)}")
    bad += 1
for n, (o, t) in enumerate(zip(ours, theirs), 1):
    (ts, pkttype, pflags, s4, d4, s6, d6, sp, dp, seq, ack, ln, fl, win, mss, ws, encap, protos) = t
    d = {"4": "2", "": "0"}.get(pkttype, "1") if pkttype else str(int(pflags, 16) if pflags else 0)
    if ts == "" and o:  # a record with no time (a pcapng simple packet block):
        ts = o[0]       # the reader gives it its section's last
    # TCP inside a UDP tunnel (L2TP...): the decoder reads the outer packet only
    tunnelled = ":udp:" in protos and ":tcp" in protos.split(":udp:", 1)[1]
    if not sp or tunnelled:
        want = [ts, d]  # no TCP: our line is time, dir, the skip's name
        got = o[:2]
        ok = got == want and len(o) == 3 and o[2] != "TCP"
    else:
        want = [ts, d, s4 or s6, d4 or d6, sp, dp, seq, ack, ln, str(int(fl, 16) & 0xff), win,
                mss or "0", ws or "-1"]
        got = o[:9] + [str(int(o[9], 16)) if len(o) > 9 else "?"] + o[10:]
        ok = got == want
    if not ok:
        bad += 1
        if bad <= 5:
            print(f"frame {n}: read {o}\n         tshark {want}")
sys.exit(1 if bad else 0)
PY
# The server: for each line OURS<tab>THEIRS, compare.py's status, a tab,
# what it printed (its newlines sent as \x1f).
cat >"$TMP/server.py" <<'PY'
import contextlib, io, sys
prog = compile(open(sys.argv[1]).read(), sys.argv[1], "exec")
for line in sys.stdin:
    out, status = io.StringIO(), 0
    sys.argv = ["compare.py"] + line.rstrip("\n").split("\t")
    with contextlib.redirect_stdout(out):
        try:
            exec(prog, {"__name__": "__main__"})
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else int(e.code is not None)
        except Exception as e:  # python3 would die with its traceback
            print("compare.py: %s: %s" % (type(e).__name__, e))
            status = 1
    sys.stdout.write("%d\t%s\n" % (status, out.getvalue().strip().replace("\n", "\x1f")))
    sys.stdout.flush()
PY
coproc COMPARE { exec python3 "$TMP/server.py" "$TMP/compare.py"; }

# compare OURS THEIRS: prints the first differences; status 0 iff none.
compare() {
    local st out="the comparison's python3 is gone"
    { printf '%s\t%s\n' "$1" "$2" >&"${COMPARE[1]}" && IFS=$'\t' read -r st out <&"${COMPARE[0]}"; } 2>/dev/null ||
        st=2
    printf '%s\n' "${out//$'\x1f'/$'\n'}"
    return "$st"
}

# read FILE: capdump's lines in $TMP/ours (its message in $TMP/err, its
# status in $ours_rc), tshark's in $TMP/theirs (its status in $theirs_rc).
read_both() {
    local args=() x
    timeout 20 "$DUMP" "$1" >"$TMP/ours" 2>"$TMP/err"
    ours_rc=$?
    for x in "${FIELDS[@]}"; do args+=(-e "$x"); done
    timeout 60 tshark -r "$1" -T fields -E occurrence=f "${args[@]}" >"$TMP/theirs" 2>"$TMP/terr"
    theirs_rc=$?
}

frames() { echo "$(wc -l <"$TMP/ours") frames, $(awk -F'\t' 'NF > 3' "$TMP/ours" | wc -l) TCP"; }

for f in tests/wire/fixtures/*.pcap tests/wire/fixtures/*.pcapng; do
    name=decode-vs-tshark-${f##*/}
    selected "$name" || continue
    read_both "$f"
    if ((ours_rc != 0 || theirs_rc != 0)); then
        fail "$name" "capdump or tshark failed" "$TMP/err"
    elif compare "$TMP/ours" "$TMP/theirs" >"$TMP/diff" 2>&1; then
        pass "$name ($(frames))"
    else
        fail "$name" "differs from tshark" "$TMP/diff"
    fi
done

if ! public_captures >"$TMP/public" 2>"$TMP/public.err"; then
    fail "public captures" "not installed" "$TMP/public.err"
fi
while read -r f; do
    name=decode-vs-tshark-public-${f#/usr/share/}
    selected "$name" || continue
    read_both "$f"
    if ((theirs_rc == 0 && ours_rc != 0)); then
        fail "$name" "tshark reads it whole, capdump stopped (status $ours_rc)" "$TMP/err"
    elif ((theirs_rc != 0)) && { ((ours_rc != 1)) || [[ $(wc -l <"$TMP/err") != 1 ]] ||
        ! grep -qF "$f: offset " "$TMP/err"; }; then
        fail "$name" "tshark stops (status $theirs_rc), capdump's status $ours_rc: not one line naming the file and an offset" \
            "$TMP/err"
    elif ! compare "$TMP/ours" "$TMP/theirs" >"$TMP/diff" 2>&1; then
        fail "$name" "differs from tshark" "$TMP/diff"
    elif ((theirs_rc == 0)); then
        pass "$name ($(frames))"
    else
        pass "$name ($(frames) before: $(sed "s|^$f: ||" "$TMP/err"); tshark stops there too)"
    fi
done <"$TMP/public"

name=decode-pipe-same-as-file
if selected "$name"; then
    f=tests/wire/fixtures/sections.pcapng
    timeout 20 "$DUMP" "$f" >"$TMP/file" 2>&1
    # shellcheck disable=SC2002 # the point is a pipe
    cat "$f" | timeout 20 "$DUMP" - >"$TMP/pipe" 2>&1
    if [[ -s $TMP/file ]] && cmp -s "$TMP/file" "$TMP/pipe"; then
        pass "$name ($(wc -l <"$TMP/pipe") frames)"
    else
        fail "$name" "standard input read otherwise than the file" "$TMP/pipe"
    fi
fi
finish
