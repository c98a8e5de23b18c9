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

# tshark's start costs 0.6-0.9 s of CPU, the reading of a fixture next
# to nothing: one tshark reads every capture that capdump read whole, in
# one pcapng stream (batch.py: each file in pcapng form, a marker section
# after each; the captures' own sections, blocks and byte orders kept as
# they are), its lines split at the markers into each file's; a classic
# pcap joins in pcapng form as editcap (tshark's own reader, wiretap)
# writes it. A capture capdump stops on is read by a tshark of its own:
# its verdict depends on where the file ends. If the stream's tshark
# fails or its markers are not each where they belong, every file of it
# is read by a tshark of its own as well.
cat >"$TMP/batch.py" <<'PY2'
import struct, sys
def marker(k):  # a section of one interface (LINKTYPE_USER0) and one frame at 3141592653 s + k us
    ts, data = 3141592653000000 + k, b"nf37"
    return (struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
            + struct.pack("<IIHHII", 1, 20, 147, 0, 0, 20)
            + struct.pack("<IIIIIII", 6, 36, 0, ts >> 32, ts & 0xffffffff, 4, 4) + data
            + struct.pack("<I", 36))
with open(sys.argv[1], "wb") as out:
    for k, path in enumerate(sys.argv[2:]):
        with open(path, "rb") as f:
            out.write(f.read())
        out.write(marker(k))
PY2
# split.awk: tshark's lines of the stream into $TMP/theirs.N for the
# N-th file (N from the list in members); exit 1 unless every marker
# came, in order, and no line after the last.
cat >"$TMP/split.awk" <<'AWK'
BEGIN {
    FS = "\t"
    while ((getline line < list) > 0) m[n++] = line
    k = 0; out = dir "/theirs." m[0]; printf "" > out
}
k >= n { exit 1 }
$1 == sprintf("3141592653.%06d000", k) && $(NF - 1) == "45" && $NF == "user_dlt:data" {
    close(out); k++
    if (k < n) { out = dir "/theirs." m[k]; printf "" > out }
    next
}
{ print > out }
END { exit k == n ? 0 : 1 }
AWK

theirs_args=()
for x in "${FIELDS[@]}"; do theirs_args+=(-e "$x"); done
# tshark_one N FILE: tshark's lines of FILE in $TMP/theirs.N, its status
# in theirs_rc[N].
tshark_one() {
    timeout 60 tshark -r "$2" -T fields -E occurrence=f "${theirs_args[@]}" >"$TMP/theirs.$1" 2>"$TMP/terr.$1"
    theirs_rc[$1]=$?
}

# Every capture: its check's name and path, capdump's lines in
# $TMP/ours.N (its message in $TMP/err.N, its status in ours_rc[N]).
names=() paths=() ours_rc=() theirs_rc=()
if ! public_captures >"$TMP/public" 2>"$TMP/public.err"; then
    public_missing=1
fi
while read -r f; do
    case $f in
    /usr/share/*) name=decode-vs-tshark-public-${f#/usr/share/} ;;
    *) name=decode-vs-tshark-${f##*/} ;;
    esac
    selected "$name" || continue
    n=${#names[@]}
    names+=("$name") paths+=("$f")
    timeout 300 "$DUMP" "$f" >"$TMP/ours.$n" 2>"$TMP/err.$n"
    ours_rc[n]=$?
done < <(printf '%s\n' tests/wire/fixtures/*.pcap tests/wire/fixtures/*.pcapng; cat "$TMP/public")

# The stream: every capture capdump read whole, in pcapng form.
members=() forms=()
for n in "${!names[@]}"; do
    ((ours_rc[n] == 0)) || continue
    if [[ $(head -c 4 "${paths[n]}" | od -An -tx1 | tr -d ' \n') == 0a0d0d0a ]]; then
        forms+=("${paths[n]}")
    elif timeout 300 editcap -F pcapng "${paths[n]}" "$TMP/ng.$n" >/dev/null 2>&1; then
        forms+=("$TMP/ng.$n")
    else
        continue
    fi
    members+=("$n")
done
alone=() # the captures read by a tshark of their own
if ((${#members[@]})); then
    printf '%s\n' "${members[@]}" >"$TMP/members"
    python3 "$TMP/batch.py" "$TMP/batch.pcapng" "${forms[@]}" &&
        timeout 300 tshark -r "$TMP/batch.pcapng" -T fields -E occurrence=f "${theirs_args[@]}" \
            >"$TMP/batch.out" 2>"$TMP/batch.err" &&
        awk -v dir="$TMP" -v list="$TMP/members" -f "$TMP/split.awk" "$TMP/batch.out"
    batch_rc=$?
    for n in "${members[@]}"; do theirs_rc[n]=$batch_rc; done
    if ((batch_rc != 0)); then
        echo "note: one tshark over ${#members[@]} captures failed (status $batch_rc): a tshark for each"
        alone+=("${members[@]}")
    fi
fi
for n in "${!names[@]}"; do
    [[ -n ${theirs_rc[n]:-} ]] || alone+=("$n")
done
for n in "${alone[@]}"; do tshark_one "$n" "${paths[n]}"; done

frames() { echo "$(wc -l <"$TMP/ours.$1") frames, $(awk -F'\t' 'NF > 3' "$TMP/ours.$1" | wc -l) TCP"; }

# The verdicts, in the captures' order.
for n in "${!names[@]}"; do
    name=${names[n]} f=${paths[n]}
    [[ $name == decode-vs-tshark-public-* ]] && break
    if ((ours_rc[n] != 0 || theirs_rc[n] != 0)); then
        fail "$name" "capdump or tshark failed" "$TMP/err.$n"
    elif compare "$TMP/ours.$n" "$TMP/theirs.$n" >"$TMP/diff" 2>&1; then
        pass "$name ($(frames "$n"))"
    else
        fail "$name" "differs from tshark" "$TMP/diff"
    fi
done
if ((${public_missing:-0})); then
    fail "public captures" "not installed" "$TMP/public.err"
fi
for n in "${!names[@]}"; do
    name=${names[n]} f=${paths[n]}
    [[ $name == decode-vs-tshark-public-* ]] || continue
    if ((theirs_rc[n] == 0 && ours_rc[n] != 0)); then
        fail "$name" "tshark reads it whole, capdump stopped (status ${ours_rc[n]})" "$TMP/err.$n"
    elif ((theirs_rc[n] != 0)) && { ((ours_rc[n] != 1)) || [[ $(wc -l <"$TMP/err.$n") != 1 ]] ||
        ! grep -qF "$f: offset " "$TMP/err.$n"; }; then
        fail "$name" "tshark stops (status ${theirs_rc[n]}), capdump's status ${ours_rc[n]}: not one line naming the file and an offset" \
            "$TMP/err.$n"
    elif ! compare "$TMP/ours.$n" "$TMP/theirs.$n" >"$TMP/diff" 2>&1; then
        fail "$name" "differs from tshark" "$TMP/diff"
    elif ((theirs_rc[n] == 0)); then
        pass "$name ($(frames "$n"))"
    else
        pass "$name ($(frames "$n") before: $(sed "s|^$f: ||" "$TMP/err.$n"); tshark stops there too)"
    fi
done

name=decode-pipe-same-as-file
if selected "$name"; then
    f=tests/wire/fixtures/sections.pcapng
    timeout 300 "$DUMP" "$f" >"$TMP/file" 2>&1
    # shellcheck disable=SC2002 # the point is a pipe
    cat "$f" | timeout 300 "$DUMP" - >"$TMP/pipe" 2>&1
    if [[ -s $TMP/file ]] && cmp -s "$TMP/file" "$TMP/pipe"; then
        pass "$name ($(wc -l <"$TMP/pipe") frames)"
    else
        fail "$name" "standard input read otherwise than the file" "$TMP/pipe"
    fi
fi
# compare.py's python3 ends at its input's end: waited for, so that its
# CPU counts in this script's
exec {COMPARE[1]}>&-
wait "$COMPARE_PID"
finish
