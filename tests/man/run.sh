#!/usr/bin/env bash
# run.sh - the documents (tests/run-all.sh: man). Every page of src/man/
# passes `mandoc -T lint -W warning` and `groff -man -t -ww -z` with no
# message, and `man -l` renders it with its NAME; a page holds no date
# but its title's (a reference, not a diary), and naglefix(7) stays a
# reference of at most MAX7 lines (1,200: the contributors' map is
# src/README.md, the benchmarks' notebook tests/bench/README.md).
# What the documents say of the tree is checked against it
# (doc_check.py): src/README.md's source tree names every file of src/
# and nothing that is not there, its arrows are those
# tests/check-layers.sh enforces, every folder of src/ has a README.md,
# and every path of the tree (src/..., tests/..., conf/..., include/...)
# named by a page, README.md, src/README.md, tests/README.md,
# tests/bench/README.md or a folder's README.md (src/*/, include/)
# exists; every path (from the top, or from the README's folder up) and
# every make target a README names in backquotes is there (doc_check.py
# maps: README.md, src/, tests/, include/, conf/'s READMEs).
# A file added, moved or renamed without its documents fails here.
# Also proves each of those checks can fail: on a copy of src/ with a file
# added and one removed, on the map with an arrow gone and one too many,
# on a document naming a path that is not there, on a README naming a
# path and a target that are not, on a page with a date.
# Ends with "N passed, M failed"; T=pattern selects checks (tests/lib.sh).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/tests/lib.sh"
here=$top/tests/man
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C.UTF-8
MAX7=${MAX7:-1200}

for tool in mandoc groff man python3; do
	command -v "$tool" >/dev/null || {
		fail "tools" "$tool not installed (tests/install-deps.sh installs it)"
		finish
		exit
	}
done

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

# verdicts LOG: one check per line of doc_check.py's output
# ("ok|fail<TAB>NAME<TAB>detail"), those T selects.
verdicts() {
	local state name detail
	while IFS=$'\t' read -r state name detail; do
		selected "$name" || continue
		if [ "$state" = ok ]; then pass "$name: $detail"
		else fail "$name" "$detail"; fi
	done <"$1"
}

# doc_check ARGS...: runs doc_check.py, its verdicts counted; a run that
# prints nothing, or fails otherwise than by a failed check, fails.
doc_check() {
	timeout 120 python3 "$here/doc_check.py" "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ "$rc" -gt 1 ] || [ ! -s "$tmp/out" ]; then
		fail "doc_check $1" "doc_check.py status $rc" "$tmp/err"
	else
		verdicts "$tmp/out"
	fi
}

for page in "${pages[@]}"; do
	doc_check dates "$page"
done

if selected "length naglefix.7"; then
	n=$(wc -l <"$top/src/man/naglefix.7")
	if [ "$n" -le "$MAX7" ]; then pass "length naglefix.7: $n lines (at most $MAX7)"
	else fail "length naglefix.7" "$n lines, more than $MAX7: a reference, not a notebook"; fi
fi

doc_check tree "$top/src/README.md" "$top/src"
doc_check arrows "$top/src/README.md" "$top/tests/check-layers.sh"

docs=("${pages[@]}" "$top/README.md" "$top/src/README.md" "$top/tests/README.md" "$top/tests/bench/README.md")
while IFS= read -r f; do docs+=("$f"); done < <(
	{ find "$top/src" -mindepth 2 -name README.md; find "$top/include" -name README.md; } | sort)
doc_check paths "$top" "${docs[@]}"

# The maps: what each README names in backquotes (a path, a make target)
# is in the tree and in the Makefile.
maps=("$top/README.md" "$top/src/README.md" "$top/tests/README.md" "$top/include/README.md")
while IFS= read -r f; do maps+=("$f"); done < <(
	{ find "$top/src" "$top/tests" -mindepth 2 -name README.md; find "$top/conf" -maxdepth 1 -name 'README*'; } | sort)
doc_check maps "$top" "${maps[@]}"

# The controls: each check above fails where it should.
# A copy of src/ with a file no line names, and without a file a line
# names: both found, by name.
if selected "src-tree catches a file added and one gone"; then
	cp -r "$top/src" "$tmp/src"
	: >"$tmp/src/core/unlisted.c"
	rm "$tmp/src/core/clock.c"
	python3 "$here/doc_check.py" tree "$top/src/README.md" "$tmp/src" >"$tmp/ctl" 2>&1
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q $'^fail\tsrc-tree lists every file\t.*src/core/unlisted.c' "$tmp/ctl" &&
		grep -q $'^fail\tsrc-tree names only what exists\t.*src/core/clock.c' "$tmp/ctl"; then
		pass "src-tree catches a file added and one gone"
	else
		fail "src-tree catches a file added and one gone" "status $rc" "$tmp/ctl"
	fi
fi

# The map's arrows with one line gone, and with an arrow too many.
if selected "arrows catches a map the layer check does not enforce"; then
	grep -v '^    core  *-> common$' "$top/src/README.md" >"$tmp/gone.md"
	sed 's/^\(    wire, metrics, bpf -> common\)$/\1, core/' "$top/src/README.md" >"$tmp/more.md"
	python3 "$here/doc_check.py" arrows "$tmp/gone.md" "$top/tests/check-layers.sh" >"$tmp/ctl" 2>&1
	rc1=$?
	python3 "$here/doc_check.py" arrows "$tmp/more.md" "$top/tests/check-layers.sh" >>"$tmp/ctl" 2>&1
	rc2=$?
	if [ "$rc1" -eq 1 ] && [ "$rc2" -eq 1 ] && grep -q 'missing: core->common' "$tmp/ctl" &&
		grep -q 'not allowed there: .*wire->core' "$tmp/ctl"; then
		pass "arrows catches a map the layer check does not enforce"
	else
		fail "arrows catches a map the layer check does not enforce" "status $rc1, $rc2" "$tmp/ctl"
	fi
fi

# A document naming a path that is not in the tree, beside one that is.
if selected "paths catches a path that is not there"; then
	# shellcheck disable=SC2016 # backquotes as markdown writes them
	printf 'See `tests/man/run.sh` and `tests/nosuch/run.sh`.\n' >"$tmp/doc.md"
	python3 "$here/doc_check.py" paths "$top" "$tmp/doc.md" >"$tmp/ctl" 2>&1
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q 'tests/nosuch/run.sh' "$tmp/ctl" && ! grep -q 'tests/man/run.sh' "$tmp/ctl"; then
		pass "paths catches a path that is not there"
	else
		fail "paths catches a path that is not there" "status $rc" "$tmp/ctl"
	fi
fi

# A README naming a path and a target that are not there, beside ones
# that are: both found, by name, and only they.
if selected "maps catches a path and a target that are not there"; then
	mkdir -p "$tmp/map/src/part"
	# shellcheck disable=SC2016 # backquotes as markdown writes them
	printf 'See `tests/man/run.sh`, `run.sh`, `part/nosuch.c` and `tests/nosuch/`.\nRun `make test-man`, then `make test-nosuch`; `test-layers`.\n' >"$tmp/map/src/part/README.md"
	python3 "$here/doc_check.py" maps "$top" "$tmp/map/src/part/README.md" >"$tmp/ctl" 2>&1
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q $'paths\t2 named but not in the tree: part/nosuch.c tests/nosuch/$' "$tmp/ctl" &&
		grep -q $'targets\t1 named but not targets of the Makefile: test-nosuch$' "$tmp/ctl"; then
		pass "maps catches a path and a target that are not there"
	else
		fail "maps catches a path and a target that are not there" "status $rc" "$tmp/ctl"
	fi
fi

# A page with a date in its text.
if selected "no dates catches a date"; then
	printf '.TH STUB 7 2026-12-01\n.SH NAME\nstub \\- measured on 2026-12-01\n' >"$tmp/stub.7"
	python3 "$here/doc_check.py" dates "$tmp/stub.7" >"$tmp/ctl" 2>&1
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q '3: 2026-12-01' "$tmp/ctl"; then
		pass "no dates catches a date"
	else
		fail "no dates catches a date" "status $rc" "$tmp/ctl"
	fi
fi

finish
