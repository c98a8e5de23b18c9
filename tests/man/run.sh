#!/usr/bin/env bash
# run.sh [README] - the man pages (tests/run-all.sh: man): every page of src/man/
# passes `mandoc -T lint -W warning` and `groff -man -t -ww -z` with no
# message, and `man -l` renders it with its NAME; the opening and every
# "## " section of README before "## License" is in some page: its
# numbers, code spans and code lines (readme_in_man.py says which). The
# default README is readme-before-cut.md beside this script: the README
# as it was (1,397 lines) before it became a front door and its detail
# moved into the pages; so the pages keep all of it.
# Also proves the last check can fail: against a page with nothing in it
# every section is missing, and the pages without naglefix(7)'s SPEED
# section miss the README's "Speed" (if it has one). Pass an older README
# (git show REV:README.md >old.md) to check what a shorter one dropped.
# Ends with "N passed, M failed"; T=pattern selects checks (tests/lib.sh).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/tests/lib.sh"
readme=${1:-$top/tests/man/readme-before-cut.md}
here=$top/tests/man
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C.UTF-8

for tool in mandoc groff man python3; do
	command -v "$tool" >/dev/null || {
		fail "tools" "$tool not installed (tests/install-deps.sh installs it)"
		finish
		exit
	}
done
# a copy: README may be a pipe (<(git show REV:README.md)), read twice below
if ! cat "$readme" >"$tmp/README.md" 2>/dev/null || [ ! -s "$tmp/README.md" ]; then
	echo "$0: cannot read $readme" >&2
	exit 2
fi
readme=$tmp/README.md

pages=("$top"/src/man/*.[1-9])
[ -e "${pages[0]}" ] || { fail "pages" "no page in src/man"; finish; exit; }

for page in "${pages[@]}"; do
	name=${page##*/}
	if selected "mandoc-lint $name"; then
		out=$(timeout 60 mandoc -T lint -W warning "$page" 2>&1)
		rc=$?
		if [ "$rc" -eq 0 ] && [ -z "$out" ]; then pass "mandoc-lint $name"; else
			printf '%s\n' "$out" >"$tmp/log"
			fail "mandoc-lint $name" "status $rc" "$tmp/log"
		fi
	fi
	if selected "groff-warnings $name"; then
		out=$(timeout 60 groff -man -t -ww -z "$page" 2>&1)
		rc=$?
		if [ "$rc" -eq 0 ] && [ -z "$out" ]; then pass "groff-warnings $name"; else
			printf '%s\n' "$out" >"$tmp/log"
			fail "groff-warnings $name" "status $rc" "$tmp/log"
		fi
	fi
	if selected "man-l $name"; then
		# the title line names the page; NAME is its first section
		title=$(sed -n 's/^\.TH \([^ ]*\) \([^ ]*\).*/\1(\2)/p' "$page" | head -n 1)
		MANPAGER=cat MANWIDTH=80 timeout 60 man -l "$page" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && grep -q '^NAME' "$tmp/out" &&
			head -n 1 "$tmp/out" | grep -qiF "$title"; then
			pass "man-l $name ($(wc -l <"$tmp/out") lines)"
		else
			cat "$tmp/err" >>"$tmp/out"
			fail "man-l $name" "status $rc, or no NAME or title $title" "$tmp/out"
		fi
	fi
done

# judge_sections LOG: one check per line of readme_in_man.py's output.
judge_sections() {
	local state section detail
	while IFS=$'\t' read -r state section detail; do
		if [ "$state" = ok ]; then pass "readme-in-man $section: $detail"
		else fail "readme-in-man $section" "$detail"; fi
	done <"$1"
}

if selected "readme-in-man"; then
	timeout 120 python3 "$here/readme_in_man.py" "$readme" "${pages[@]}" >"$tmp/sections" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -gt 1 ] || [ ! -s "$tmp/sections" ]; then
		fail "readme-in-man" "readme_in_man.py status $rc" "$tmp/err"
	else
		judge_sections "$tmp/sections"
	fi
fi

# The controls. A page that holds nothing of the README: every section
# must be missing.
if selected "readme-in-man fails without the pages"; then
	mkdir "$tmp/stub"
	printf '.TH STUB 7 2026-12-01\n.SH NAME\nstub \\- nothing\n' >"$tmp/stub/stub.7"
	timeout 120 python3 "$here/readme_in_man.py" "$readme" "$tmp/stub/stub.7" >"$tmp/stubout" 2>&1
	rc=$?
	n=$(grep -c '' "$tmp/stubout")
	if [ "$rc" -eq 1 ] && [ "$n" -gt 0 ] && [ "$(grep -c '^missing' "$tmp/stubout")" -eq "$n" ]; then
		pass "readme-in-man fails without the pages ($n of $n sections missing)"
	else
		fail "readme-in-man fails without the pages" "status $rc; not every section missing" "$tmp/stubout"
	fi
fi

# naglefix(7) without its SPEED section (up to the next .SH): the README's
# "Speed" must be missing (while the README has one).
if selected "readme-in-man catches a dropped section"; then
	if ! grep -q '^## Speed' "$readme"; then
		skip "readme-in-man catches a dropped section" "no \"## Speed\" in the README"
	else
		mkdir "$tmp/cut"
		cp "${pages[@]}" "$tmp/cut/"
		awk '/^\.SH / { skip = ($2 == "SPEED") } !skip' "$top/src/man/naglefix.7" >"$tmp/cut/naglefix.7"
		timeout 120 python3 "$here/readme_in_man.py" "$readme" "$tmp/cut"/*.[1-9] >"$tmp/cutout" 2>&1
		rc=$?
		if [ "$rc" -eq 1 ] && grep -q $'^missing\tSpeed\t' "$tmp/cutout" &&
			! grep -q '^\.SH SPEED' "$tmp/cut/naglefix.7"; then
			pass "readme-in-man catches a dropped section ($(grep -c '^missing' "$tmp/cutout") missing)"
		else
			fail "readme-in-man catches a dropped section" "status $rc; Speed not reported missing" "$tmp/cutout"
		fi
	fi
fi

finish
