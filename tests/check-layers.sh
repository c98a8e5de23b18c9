#!/bin/sh
# check-layers.sh [TOP] - proves the layers of TOP's sources (default: this
# checkout) only point down: the graph of what includes what has no cycle,
# and no core module includes a header of the interpose layer.
#
# The graph is one of modules, read from the `#include "..."` lines of
# TOP/src and TOP/include (the command, src/cli, is a program of its own
# and left out). A header is the module of its name (include/nf_timer.h:
# timer); a .c file belongs to the module of its first quoted include, its
# own header (audit_log.c includes nf_audit.h first: audit); a .c file
# with none is a module of its own. So coalesce.c including nf_timer.h and
# timer.c including nf_coalesce.h is the cycle coalesce -> timer ->
# coalesce, though no header includes itself.
#
# The interpose layer is src/interpose/ and src/nf_hooks.h, the header of
# its nf_ twins: a module with a file there is interpose, every other one
# is core. A core module may not include an interpose header: the core is
# reached from the hooks, never the other way.
#
# Prints each cycle (its modules and the includes that close it) and each upward include, and
# ends with "N passed, M failed" over the two checks; exits 1 on a failure.
set -eu

top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[ -d "$top/src" ] || { echo "$0: no src/ in $top" >&2; exit 2; }
cd "$top"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# file<TAB>included, one line per quoted include; the included name made a
# path relative to TOP (a header is found beside the file, else in include/).
find src include -path src/cli -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort |
	while read -r f; do
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
			while read -r inc; do
				p=$(dirname "$f")/$inc
				[ -e "$p" ] || p=include/$inc
				# shellcheck disable=SC2094 # realpath only names it
				printf '%s\t%s\n' "$f" "$(realpath -m --relative-to=. "$p")"
			done
	done >"$tmp/edges"

# The module of a header: its name without nf_ and the extension.
header_module() {
	basename "$1" | sed -e 's/^nf_//' -e 's/\.[ch]$//'
}

# file<TAB>module for every file.
find src include -path src/cli -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort |
	while read -r f; do
		case $f in
		*.h) m=$(header_module "$f") ;;
		*)
			first=$(awk -F'\t' -v f="$f" '$1 == f { print $2; exit }' "$tmp/edges")
			if [ -n "$first" ]; then m=$(header_module "$first"); else m=$(header_module "$f"); fi
			;;
		esac
		printf '%s\t%s\n' "$f" "$m"
	done >"$tmp/modules"

# A module is interpose if any of its files is.
awk -F'\t' '$1 ~ /^src\/interpose\// || $1 == "src/nf_hooks.h" { print $2 }' "$tmp/modules" |
	sort -u >"$tmp/interpose"

# module -> module arrows (self arrows dropped), with the file that makes each.
awk -F'\t' 'NR == FNR { mod[$1] = $2; next }
	    ($1 in mod) && ($2 in mod) && mod[$1] != mod[$2] { print mod[$1], mod[$2], $1, $2 }' \
	"$tmp/modules" "$tmp/edges" | sort -u >"$tmp/arrows"

passed=0
failed=0

# Each set of modules that reach one another (a cycle), from the transitive
# closure of the arrows, with the arrows inside it (one file each).
awk '{ a[$1, $2] = 1; node[$1] = 1; node[$2] = 1; line[NR] = $0 }
     END {
	for (k in node) for (i in node) if (a[i, k]) for (j in node) if (a[k, j]) a[i, j] = 1
	for (i in node) {
		if (!a[i, i] || done[i]) continue
		set = ""
		for (j in node) if (a[i, j] && a[j, i]) { done[j] = 1; in_set[j] = i; set = set " " j }
		print "  cycle:" set
		for (n = 1; n <= NR; n++) {
			split(line[n], f, " ")
			if (in_set[f[1]] == i && in_set[f[2]] == i && !shown[f[1], f[2]]++)
				printf "    %s -> %s (%s includes %s)\n", f[1], f[2], f[3], f[4]
		}
	}
     }' "$tmp/arrows" >"$tmp/loops"
if [ -s "$tmp/loops" ]; then
	echo "FAIL layers-no-cycle: modules that include one another:"
	cat "$tmp/loops"
	failed=$((failed + 1))
else
	echo "PASS layers-no-cycle: $(cut -f2 "$tmp/modules" | sort -u | wc -l | tr -d ' ') modules, $(cut -d' ' -f1,2 "$tmp/arrows" | sort -u | wc -l | tr -d ' ') arrows between them"
	passed=$((passed + 1))
fi

awk 'NR == FNR { up[$1] = 1; next } !($1 in up) && ($2 in up) {
	printf "  %s includes %s (core %s -> interpose %s)\n", $3, $4, $1, $2 }' \
	"$tmp/interpose" "$tmp/arrows" >"$tmp/upward"
if [ -s "$tmp/upward" ]; then
	echo "FAIL layers-core-below-interpose: a core file includes an interpose header:"
	cat "$tmp/upward"
	failed=$((failed + 1))
else
	echo "PASS layers-core-below-interpose"
	passed=$((passed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
