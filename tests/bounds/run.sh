#!/usr/bin/env bash
# run.sh - what each command costs on input of any size or kind (`make
# test-bounds`): devices, directories, FIFOs and pipes fed without end,
# a 300 MB line, logs of more rows or distinct stalls than report keeps,
# a policy file over its 1 MiB, captures with blocks longer than any
# record. Each command is run under tests/bounds/peak.c (its address
# space limited to 1 GiB, so a command that grows without bound fails
# here instead of taking the host) and judged on its exit status, its
# message (one line naming the thing) and its peak resident set (the
# kernel's getrusage count), which must stay under a small bound.
# T=pattern selects checks (tests/lib.sh). Ends "N passed, M failed".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$TOP/tests/lib.sh"
export LC_ALL=C
clean_env
NF="$TOP/build/naglefix"
PEAK="$TOP/build/tests/bounds/peak"
need_built make "$NF"
need_built "make test-bounds" "$PEAK"
scratch_dir nf-bounds
SMALL_KB=8192 # what a bounded reader may cost: its buffer and the program

# fifo_of NAME CMD...: feeds what CMD prints into the FIFO $TMP/NAME, in
# the background (its pid in WRITERS, ended by end_writers); FIFO=$TMP/NAME.
# The writer ends with the reader (SIGPIPE) or at its end.
WRITERS=()
fifo_of() {
	FIFO=$TMP/$1
	shift
	rm -f "$FIFO"
	mkfifo "$FIFO" || return 1
	"$@" >"$FIFO" 2>/dev/null &
	WRITERS+=($!)
}

# Ends the writers still there (one whose reader never came).
end_writers() {
	local p
	for p in "${WRITERS[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
}

# bounded NAME SECONDS MAX_KB RC TEXT LINES CMD...: runs CMD (stdin from
# $IN, /dev/null if unset) under peak; passes if it exits RC within
# SECONDS, its peak resident set is under MAX_KB, its stderr holds TEXT
# (fixed string; any if empty) and has LINES lines (any if empty). Its
# stdout is in $TMP/NAME.out.
bounded() {
	local name=$1 secs=$2 max=$3 want=$4 text=$5 lines=$6 rc kb n
	shift 6
	selected "$name" || return 0
	read -r rc kb < <("$PEAK" "$secs" "$TMP/$name.out" "$TMP/$name.err" "$@" <"${IN:-/dev/null}")
	n=$(wc -l <"$TMP/$name.err")
	if [[ $rc != "$want" ]]; then
		fail "$name" "exit status $rc, want $want (peak $kb kB)" "$TMP/$name.err"
	elif ((kb >= max)); then
		fail "$name" "peak resident set $kb kB, want under $max kB" "$TMP/$name.err"
	elif [[ -n $text ]] && ! grep -qF -- "$text" "$TMP/$name.err"; then
		fail "$name" "stderr lacks: $text" "$TMP/$name.err"
	elif [[ -n $lines && $n != "$lines" ]]; then
		fail "$name" "$n lines on stderr, want $lines" "$TMP/$name.err"
	else
		pass "$name (peak $kb kB)"
	fi
}

# ---- report: what is not a log, refused in one line before it is opened -------

WHY="not a log (a file, a FIFO, or - for standard input)"
bounded report-dev-zero 10 $SMALL_KB 1 "cannot report /dev/zero: a character device, $WHY" 1 \
	"$NF" report /dev/zero
bounded report-dev-urandom 10 $SMALL_KB 1 "cannot report /dev/urandom: a character device, $WHY" 1 \
	"$NF" report /dev/urandom
bounded report-directory 10 $SMALL_KB 1 "cannot report $TMP: a directory, $WHY" 1 \
	"$NF" report "$TMP"

# ---- report: a line of any length costs the 64 KiB buffer ----------------------

NOLINE="not an audit log (no line of naglefix's JSON; 1 line over 64 KiB skipped)"
if any_selected report-300M-no-newline; then
	truncate -s 300M "$TMP/noline.log" # 300 MB of NUL bytes, not one newline
	bounded report-300M-no-newline 60 $SMALL_KB 1 "cannot report $TMP/noline.log: $NOLINE" 1 \
		"$NF" report "$TMP/noline.log"
	rm -f "$TMP/noline.log"
fi
if any_selected report-fifo-300M-no-newline; then
	fifo_of zero.fifo head -c 300M /dev/zero
	bounded report-fifo-300M-no-newline 60 $SMALL_KB 1 "cannot report $FIFO: $NOLINE" 1 \
		"$NF" report "$FIFO"
fi
if any_selected report-pipe-300M-no-newline; then
	fifo_of stdin.fifo head -c 300M /dev/zero
	IN=$FIFO bounded report-pipe-300M-no-newline 60 $SMALL_KB 1 "cannot report -: $NOLINE" 1 \
		"$NF" report -
fi

LINE='{"event":"split_write","side":"connect","peer":"192.0.2.1:80","writes":[6,7],"stall_ms":40.5,"caller":"x+0x1"}'
# 2,000,000 findings through a FIFO: the table, in the memory of one
if any_selected report-fifo-2M-findings; then
	fifo_of lines.fifo sh -c 'yes "$0" | head -n 2000000' "$LINE"
	bounded report-fifo-2M-findings 120 $SMALL_KB 0 "" 0 "$NF" report "$FIFO"
	selected report-fifo-2M-findings-counted &&
		if grep -q '^192\.0\.2\.1:80  *connect  *2000000  *\[6,7\]  *40\.500 ' \
			"$TMP/report-fifo-2M-findings.out"; then
			pass report-fifo-2M-findings-counted
		else
			fail report-fifo-2M-findings-counted "want 2000000 findings, median 40.500" \
				"$TMP/report-fifo-2M-findings.out"
		fi
fi

# a line over 64 KiB among lines of ours: skipped and said; the others count
if any_selected report-long-line-skipped; then
	{
		echo "$LINE"
		head -c 100000 /dev/zero | tr '\0' x
		echo
		echo "$LINE"
	} >"$TMP/long.log"
	bounded report-long-line-skipped 10 $SMALL_KB 1 \
		"naglefix report: $TMP/long.log: 1 line over 64 KiB skipped (its other lines are reported)" 1 \
		"$NF" report "$TMP/long.log"
	selected report-long-line-skipped-rest &&
		if grep -q '^192\.0\.2\.1:80  *connect  *2 ' "$TMP/report-long-line-skipped.out"; then
			pass report-long-line-skipped-rest
		else
			fail report-long-line-skipped-rest "want the row of the 2 other lines" \
				"$TMP/report-long-line-skipped.out"
		fi
fi

# ---- report: what it keeps of the lines, at most 64 MiB --------------------------

# 200 repeat lines of a million findings each: 200 stall values, not 200 M
if any_selected report-repeat-counts; then
	python3 -c '
for i in range(200):
    print("{\"event\":\"repeat\",\"of\":\"split_write\",\"side\":\"connect\",\"peer\":\"192.0.2.2:80\","
          "\"writes\":[6,7],\"count\":1000000,\"total_stall_ms\":%d}" % ((40000 + i) * 1000000))
' >"$TMP/repeat.log"
	bounded report-repeat-counts 60 $SMALL_KB 0 "" 0 "$NF" report "$TMP/repeat.log"
	selected report-repeat-counts-median &&
		if grep -q '^192\.0\.2\.2:80  *connect  *200000000  *\[6,7\]  *40099\.500 ' \
			"$TMP/report-repeat-counts.out"; then
			pass report-repeat-counts-median
		else
			fail report-repeat-counts-median "want 200000000 findings, median 40099.500" \
				"$TMP/report-repeat-counts.out"
		fi
fi

# 300,000 peers, each with a caller of 400 bytes: rows past 64 MiB not counted
# (made by awk, cheaper than python for the same bytes)
if any_selected report-rows-bounded; then
	fifo_of rows.fifo awk 'BEGIN { c = sprintf("%400s", ""); gsub(/ /, "c", c)
		for (i = 0; i < 300000; i++)
			printf "{\"event\":\"split_write\",\"side\":\"connect\",\"peer\":\"10.%d.%d.%d:80\",\"writes\":[6,7],\"stall_ms\":40.5,\"caller\":\"%s%d\"}\n", int(i / 65536), int(i / 256) % 256, i % 256, c, i }'
	bounded report-rows-bounded 120 98304 1 "of peers past the first" 1 "$NF" report "$FIFO"
fi

# 3,000,000 distinct stalls of one peer (40.000 to 3039.999 ms, by seq,
# cheaper than awk for the same bytes): those past 64 MiB out of the median
if any_selected report-stalls-bounded; then
	fifo_of stalls.fifo seq -f '{"event":"split_write","side":"connect","peer":"192.0.2.3:80","writes":[6,7],"stall_ms":%.3f}' \
		40 0.001 3039.999
	bounded report-stalls-bounded 120 98304 0 "stalls left out of the medians" 1 "$NF" report "$FIFO"
fi

# ---- audit: the child's log, read as report reads it ------------------------------

# the audited command writes 300 MB without a newline into the log
if any_selected audit-log-300M-line; then
	bounded audit-log-300M-line 60 $SMALL_KB 0 "1 line over 64 KiB skipped" "" \
		"$NF" audit -l "$TMP/audit.log" -- sh -c 'head -c 300M /dev/zero >>"$0"' "$TMP/audit.log"
	rm -f "$TMP/audit.log"
fi

# ---- check: a policy file is a regular file of at most 1 MiB ----------------------

bounded check-dev-zero 10 $SMALL_KB 1 "naglefix: /dev/zero: not a regular file" 1 "$NF" check /dev/zero
if any_selected check-fifo-endless; then
	fifo_of check.fifo cat /dev/zero
	bounded check-fifo-endless 10 $SMALL_KB 1 "naglefix: $FIFO: not a regular file" 1 "$NF" check "$FIFO"
fi
if any_selected check-300M-file; then
	truncate -s 300M "$TMP/300m.conf"
	bounded check-300M-file 10 $SMALL_KB 1 \
		"naglefix: $TMP/300m.conf: larger than 1 MiB, the most a policy file may hold" 1 \
		"$NF" check "$TMP/300m.conf"
	rm -f "$TMP/300m.conf"
fi

# ---- scan: what is not a capture refused; a record or block of any length -------

WHYCAP="not a capture (a file, a FIFO, or - for standard input)"
bounded scan-dev-zero 10 $SMALL_KB 1 "naglefix scan: /dev/zero: a character device, $WHYCAP" 1 \
	"$NF" scan /dev/zero
bounded scan-directory 10 $SMALL_KB 1 "naglefix scan: $TMP: a directory, $WHYCAP" 1 "$NF" scan "$TMP"
if any_selected scan-pipe-300M-zeros; then
	fifo_of scan-zero.fifo head -c 300M /dev/zero
	IN=$FIFO bounded scan-pipe-300M-zeros 30 $SMALL_KB 1 \
		"naglefix scan: -: offset 0: not a pcap or pcapng capture" 1 "$NF" scan -
fi

# capture CMD...: a pcapng section (little-endian) with one Ethernet
# interface, then what python3 prints of the expression given (bytes).
pcapng() {
	python3 -c '
import struct, sys
out = sys.stdout.buffer
shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
idb = struct.pack("<IIHHI", 1, 20, 1, 0, 0) + struct.pack("<I", 20)
out.write(shb + idb)
exec(sys.argv[1])
' "$1"
}
# a block that carries no packet, of 4 GiB less 4 bytes: read through, never
# held; the 300 MB given are read and the block said truncated
if any_selected scan-pcapng-4g-block; then
	fifo_of block.fifo pcapng '
out.write(struct.pack("<II", 0x00000BAD, 0xFFFFFFFC))
chunk = bytes(1 << 20)
for _ in range(300):
    out.write(chunk)
'
	bounded scan-pcapng-4g-block 60 $SMALL_KB 1 "offset 48: truncated block (the file ends at byte 314572856)" "" \
		"$NF" scan "$FIFO"
fi
# a packet block (read whole) longer than the longest record: refused at its
# length, before a byte of it is read
if any_selected scan-pcapng-64m-packet-block; then
	fifo_of epb.fifo pcapng '
out.write(struct.pack("<II", 6, 64 << 20))
chunk = bytes(1 << 20)
for _ in range(64):
    out.write(chunk)
'
	bounded scan-pcapng-64m-packet-block 30 $SMALL_KB 1 \
		"offset 48: block of 67108864 bytes, beyond the longest read (1048576)" "" "$NF" scan "$FIFO"
fi
# a pcap record of 2 GiB: refused at its header
if any_selected scan-pcap-2g-record; then
	python3 -c '
import struct, sys
sys.stdout.buffer.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 0, 1) +
                        struct.pack("<IIII", 0, 0, 0x7FFFFFFF, 0x7FFFFFFF) + bytes(1 << 20))
' >"$TMP/record.pcap"
	bounded scan-pcap-2g-record 30 $SMALL_KB 1 "offset 24: record of 2147483647 bytes, beyond the" "" \
		"$NF" scan "$TMP/record.pcap"
fi

# ---- fix --undo: a record of any length costs one entry a descriptor -------------

# a --follow of days: 1,000,000 lines over 50 descriptor numbers reused
if any_selected fix-undo-long-record; then
	sleep 600 &
	sleeper=$!
	start=$(awk '{ print $22 }' "/proc/$sleeper/stat")
	mkdir -p "$TMP/state"
	awk -v pid="$sleeper" -v st="$start" 'BEGIN { for (i = 0; i < 1000000; i++)
		printf "%d %s %d %d\n", pid, st, 3 + i % 50, 1000000 + i }' >"$TMP/state/fix-$sleeper"
	NAGLEFIX_STATE_DIR=$TMP/state bounded fix-undo-long-record 20 $SMALL_KB 0 "" 0 \
		"$NF" fix --undo --dry-run "$sleeper"
	selected fix-undo-long-record-rows &&
		if [[ $(grep -c '^ *'"$sleeper"' ' "$TMP/fix-undo-long-record.out") == 50 ]]; then
			pass fix-undo-long-record-rows
		else
			fail fix-undo-long-record-rows "want one row for each of the 50 descriptors" \
				"$TMP/fix-undo-long-record.out"
		fi
	kill "$sleeper"
fi

end_writers
finish
