#!/bin/sh
# check-layers-self.sh - proves that tests/check-layers.sh can fail: it
# passes on a copy of this checkout's src/ and include/, and fails, naming
# the include or the call, on copies with one wrong line added each:
#
#   core-to-action    src/core/conn.c includes actions/coalesce/nf_coalesce.h (core -> actions/coalesce)
#   common-to-core    src/common/json.c includes core/nf_conn.h (common -> core)
#   action-to-process src/actions/auto/auto.c includes process/nf_init.h (actions/auto -> process)
#   action-to-action  src/actions/coalesce/coalesce.c includes actions/audit/nf_audit.h (peer actions)
#   wire-to-core      src/wire/decode.c includes core/nf_conn.h (the packet side -> core)
#   cli-to-action     src/cli/scan/scan.c includes actions/nf_track.h (cli/scan -> actions)
#   metrics-to-wire   src/metrics/expo.c includes wire/nf_wire.h (metrics -> wire)
#   bpf-to-wire       src/bpf/prog.c includes wire/nf_wire.h (the kernel program -> the packet side)
#   core-to-bpf       src/core/conn.c includes bpf/nf_bpf.h (the library -> the kernel program)
#   cli-to-interpose  src/cli/report/report.c includes interpose/fast_int.h (cli/report -> interpose)
#   no-such-header    src/core/clock.c includes nf_nosuch.h (found nowhere)
#   private-header    src/cli/scan/scan.c includes wire/wire_int.h (cli/scan -> wire
#                     is an arrow, but wire_int.h is src/wire's own)
#   private-sibling   src/actions/auto/auto.c includes ../coalesce/coalesce_int.h
#   unnamed-header    a new src/core/lonely.h (neither nf_NAME.h nor NAME_int.h)
#   unshared-header   a new src/core/nf_lonely.h that no other folder includes
#   private-in-shared a new include/policy_int.h
#   module-cycle      src/core/nf_clock.h includes nf_timer.h (timer.c includes nf_clock.h)
#   cli-circle        src/cli/common/util.c calls nf_cli_audit (audit.c calls nf_cli_quote)
#   command-include   src/cli/report/report.c includes cli/fix/nf_fix.h (cli/report -> cli/fix:
#                     no command calls another but watch -> fix, attach; attach -> fix)
#   command-call      src/cli/fix/fix_dir.c calls nf_cli_scan (cli/fix -> cli/scan), no include
#   command-private   src/cli/watch/watch_fix.c includes cli/fix/fix_int.h (watch -> fix is
#                     an arrow, but fix_int.h is cli/fix's own)
#   command-undeclared src/cli/attach/attach.c calls nf_fix_undo, which fix's door
#                     (nf_fix.h) does not declare (attach -> fix is an arrow)
#   command-door      a new src/cli/fix/nf_fix_more.h, which watch_fix.c includes: a
#                     second door of cli/fix
#   cli-stderr        src/cli/scan/scan.c writes a message with fprintf(stderr, ...),
#                     not through nf_cli.h's helper
#   cli-stderr-lines  src/cli/report/report.c: fputs("...",<newline> stderr), the
#                     statement over two lines, a comment naming stderr before it
#   cli-perror        src/cli/attach/attach_netns.c calls perror
#
# A FILE that does not exist is made with the LINE (and FILE2 with LINE2,
# for a case that needs two).
# Each line is "PASS name" or "FAIL name: why"; ends with "N passed, M failed".
# T=pattern picks checks by name (check-layers.sh itself runs whole here).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
sel=0
# selected NAME: does T (tests/lib.sh's name filter: unset or a shell
# pattern matched anywhere in NAME) pick the check NAME? Counts it if so.
selected() {
	case $1 in *${T:-}*) sel=$((sel + 1)) && return 0 ;; esac
	return 1
}
# finish: the counts ("SKIP T: ..." first if T picked nothing here).
finish() {
	if [ -n "${T:-}" ] && [ "$sel" -eq 0 ]; then
		echo "SKIP T: '$T' names no check of this suite"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

copy() {
	rm -rf "$tmp/t" && mkdir -p "$tmp/t" && cp -r "$top/src" "$top/include" "$tmp/t/"
}

if ! selected layers-self-real-tree; then
	:
elif copy && T='' sh "$here/check-layers.sh" "$tmp/t" >"$tmp/out" 2>&1; then
	echo "PASS layers-self-real-tree"
	passed=$((passed + 1))
else
	echo "FAIL layers-self-real-tree: check-layers.sh fails on a copy of the tree:"
	sed 's/^/    /' "$tmp/out"
	failed=$((failed + 1))
fi

# bad NAME FILE LINE EXPECT [FILE2 LINE2]: FILE (of a copy of its own)
# with LINE added at its end (and FILE2 with LINE2) must make
# check-layers.sh exit 1 with EXPECT (a fixed string) in its output. Two
# run at a time; their verdicts are said in order by said().
order=""
running=0
bad() {
	selected "layers-self-$1" || return 0
	order="$order $1"
	(
		d=$tmp/$1.tree
		mkdir -p "$d" && cp -r "$top/src" "$top/include" "$d/" && printf '%s\n' "$3" >>"$d/$2"
		[ -z "${5:-}" ] || printf '%s\n' "$6" >>"$d/$5"
		T='' sh "$here/check-layers.sh" "$d" >"$tmp/$1.out" 2>&1
		rc=$?
		if [ "$rc" -eq 1 ] && grep -qF -- "$4" "$tmp/$1.out"; then
			echo "PASS layers-self-$1"
		else
			echo "FAIL layers-self-$1: exit $rc, expected 1 and \"$4\" in:"
			sed 's/^/    /' "$tmp/$1.out"
		fi >"$tmp/$1.verdict"
		rm -rf "$d"
	) &
	running=$((running + 1))
	if [ "$running" -ge 2 ]; then
		wait
		running=0
	fi
}

# said: every bad case's verdict, in the order they were asked, counted.
said() {
	wait
	for n in $order; do
		cat "$tmp/$n.verdict"
		if grep -q '^PASS' "$tmp/$n.verdict"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
		fi
	done
}

bad core-to-action src/core/conn.c '#include "actions/coalesce/nf_coalesce.h"' \
	'src/core/conn.c includes src/actions/coalesce/nf_coalesce.h (core -> actions/coalesce'
bad common-to-core src/common/json.c '#include "core/nf_conn.h"' \
	'src/common/json.c includes src/core/nf_conn.h (common -> core'
bad action-to-process src/actions/auto/auto.c '#include "process/nf_init.h"' \
	'src/actions/auto/auto.c includes src/process/nf_init.h (actions/auto -> process'
bad action-to-action src/actions/coalesce/coalesce.c '#include "actions/audit/nf_audit.h"' \
	'(actions/coalesce -> actions/audit'
bad wire-to-core src/wire/decode.c '#include "core/nf_conn.h"' \
	'src/wire/decode.c includes src/core/nf_conn.h (wire -> core'
bad cli-to-action src/cli/scan/scan.c '#include "actions/nf_track.h"' \
	'src/cli/scan/scan.c includes src/actions/nf_track.h (cli/scan -> actions'
bad metrics-to-wire src/metrics/expo.c '#include "wire/nf_wire.h"' \
	'src/metrics/expo.c includes src/wire/nf_wire.h (metrics -> wire'
bad bpf-to-wire src/bpf/prog.c '#include "wire/nf_wire.h"' \
	'src/bpf/prog.c includes src/wire/nf_wire.h (bpf -> wire'
bad core-to-bpf src/core/conn.c '#include "bpf/nf_bpf.h"' \
	'src/core/conn.c includes src/bpf/nf_bpf.h (core -> bpf'
bad cli-to-interpose src/cli/report/report.c '#include "interpose/fast_int.h"' \
	'src/cli/report/report.c includes src/interpose/fast_int.h (cli/report -> interpose'
bad no-such-header src/core/clock.c '#include "nf_nosuch.h"' \
	'src/core/clock.c includes include/nf_nosuch.h: no such header'
bad private-header src/cli/scan/scan.c '#include "wire/wire_int.h"' \
	'src/cli/scan/scan.c includes src/wire/wire_int.h: private to wire'
bad private-sibling src/actions/auto/auto.c '#include "../coalesce/coalesce_int.h"' \
	'src/actions/auto/auto.c includes src/actions/coalesce/coalesce_int.h: private to actions/coalesce'
bad unnamed-header src/core/lonely.h '/* lonely.h */' \
	'src/core/lonely.h: neither nf_NAME.h (offered to other folders) nor NAME_int.h'
bad unshared-header src/core/nf_lonely.h '/* nf_lonely.h */' \
	'src/core/nf_lonely.h: no file of another folder includes it: name it lonely_int.h'
bad private-in-shared include/policy_int.h '/* policy_int.h */' \
	'include/policy_int.h: include/ holds what every part shares, named nf_NAME.h'
bad module-cycle src/core/nf_clock.h '#include "nf_timer.h"' \
	'clock -> timer (src/core/nf_clock.h includes src/core/nf_timer.h)'
bad cli-circle src/cli/common/util.c 'static int nf_self_test(void) { return nf_cli_audit(0, 0); }' \
	'util -> audit (util.c calls nf_cli_audit)'
bad command-include src/cli/report/report.c '#include "cli/fix/nf_fix.h"' \
	'src/cli/report/report.c includes src/cli/fix/nf_fix.h (cli/report -> cli/fix: not an arrow'
bad command-call src/cli/fix/fix_dir.c 'static int nf_self_test(void) { return nf_cli_scan(0, 0); }' \
	'fix_dir.c calls nf_cli_scan of scan.c (cli/fix -> cli/scan: not an arrow'
bad command-private src/cli/watch/watch_fix.c '#include "cli/fix/fix_int.h"' \
	'src/cli/watch/watch_fix.c includes src/cli/fix/fix_int.h: private to cli/fix'
bad command-undeclared src/cli/attach/attach.c 'static int nf_self_test(void) { return nf_fix_undo(0, 0, 0); }' \
	'attach.c calls nf_fix_undo of fix_undo.c, not in the door of cli/fix'
bad command-door src/cli/fix/nf_fix_more.h '/* nf_fix_more.h */' \
	'src/cli/fix/nf_fix_more.h: a second door of cli/fix (a command'"'"'s folder has one, nf_fix.h)' \
	src/cli/watch/watch_fix.c '#include "cli/fix/nf_fix_more.h"'
bad cli-stderr src/cli/scan/scan.c 'static void self_test(void) { fprintf(stderr, "naglefix scan: x\n"); }' \
	'src/cli/scan/scan.c:'"$(($(wc -l <"$top/src/cli/scan/scan.c") + 1))"': writes to stderr itself, not through nf_cli.h (fprintf(stderr, "")'
bad cli-stderr-lines src/cli/report/report.c '/* on stderr: */ static void self_test(void) { fputs("x",
	stderr); }' \
	'src/cli/report/report.c:'"$(($(wc -l <"$top/src/cli/report/report.c") + 1))"': writes to stderr itself, not through nf_cli.h (fputs("", stderr)'
bad cli-perror src/cli/attach/attach_netns.c 'static void self_test(void) { perror("naglefix"); }' \
	'src/cli/attach/attach_netns.c:'"$(($(wc -l <"$top/src/cli/attach/attach_netns.c") + 1))"': writes to stderr itself'

said
finish
