#!/bin/sh
# check-exports.sh LIB MAP LIST [OBJ...] - proves that the hooks are listed
# in one place: LIB exports exactly the names the version script MAP lists,
# and MAP lists exactly the hooks of LIST (src/core/nf_hook_list.h).
#
# The listed names are those between 'global:' and 'local:' in MAP; the
# hooks are the names in LIST's NF_HOOKS_REAL and NF_HOOKS_ALIAS rows, as
# the C preprocessor ($CC, default cc) expands them; the exported ones are
# what `nm -D --defined-only LIB` shows. Each OBJ given (the library's
# objects) must define no exported (default-visibility) function that LIST
# lacks: a hook written in src/interpose/ but listed nowhere, which the
# version script would hide. Every difference is printed and the script
# exits 1; otherwise it prints "exports ok: N symbols". T=pattern: the
# check is named "exports".
set -eu

if [ $# -lt 3 ]; then
	echo "usage: $0 LIB MAP LIST [OBJ...]" >&2
	exit 2
fi
lib=$1
map=$2
list=$3
shift 3
for f in "$lib" "$map" "$list" "$@"; do
	[ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 2; }
done
# T (tests/lib.sh's name filter) picks this one check, "exports", or none.
case exports in
*${T:-}*) ;;
*)
	echo "SKIP T: '$T' names no check of this suite"
	echo "0 passed, 0 failed"
	exit 0
	;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Names in the global: section, one a line: comments dropped, split on ';'.
sed 's/#.*//' "$map" | tr '\n' ' ' |
	sed 's,/\*\([^*]\|\*[^/]\)*\*/,,g' |
	sed -n 's/.*global:\(.*\)local:.*/\1/p' |
	tr ';' '\n' |
	sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' |
	sort -u >"$tmp/listed"

if [ ! -s "$tmp/listed" ]; then
	echo "$0: no names between 'global:' and 'local:' in $map" >&2
	exit 2
fi
if grep -q '[][*?{}]' "$tmp/listed"; then
	echo "$0: $map uses patterns, which this check cannot compare:" >&2
	grep '[][*?{}]' "$tmp/listed" >&2
	exit 2
fi

# The hooks of LIST, one a line: each row's name followed by ';'.
{
	echo '#define NF_ROW_NAME(name, ...) name;'
	echo '#define NF_ALIAS_NAME(name) name;'
	echo 'NF_HOOKS_REAL(NF_ROW_NAME) NF_HOOKS_ALIAS(NF_ALIAS_NAME)'
} >"$tmp/names.c"
${CC:-cc} -E -P -include "$list" "$tmp/names.c" >"$tmp/names.i"
tr ';' '\n' <"$tmp/names.i" |
	sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' |
	sort >"$tmp/hooks"
if [ ! -s "$tmp/hooks" ]; then
	echo "$0: no hooks in $list" >&2
	exit 2
fi
sort -u "$tmp/hooks" >"$tmp/hooks.u"
if ! cmp -s "$tmp/hooks" "$tmp/hooks.u"; then
	echo "$0: hooks in $list more than once:" >&2
	uniq -d "$tmp/hooks" >&2
	exit 2
fi

# Defined dynamic symbols; version suffixes (name@@VER) dropped. A named
# version node shows up as an absolute (A) symbol of its own: not an export.
nm -D --defined-only "$lib" >"$tmp/nm"
awk 'NF >= 2 && $(NF-1) != "A" { sub(/@.*/, "", $NF); print $NF }' "$tmp/nm" |
	sort -u >"$tmp/exported"

comm -13 "$tmp/listed" "$tmp/exported" >"$tmp/extra"
comm -23 "$tmp/listed" "$tmp/exported" >"$tmp/missing"

# Functions the objects define with default visibility (NF_EXPORT).
: >"$tmp/objexports"
for o in "$@"; do
	readelf -sW "$o" |
		awk '$4 == "FUNC" && ($5 == "GLOBAL" || $5 == "WEAK") &&
			$6 == "DEFAULT" && $7 != "UND" { sub(/@.*/, "", $8); print $8 }'
done | sort -u >"$tmp/objexports"

comm -23 "$tmp/hooks.u" "$tmp/listed" >"$tmp/unmapped"
comm -13 "$tmp/hooks.u" "$tmp/listed" >"$tmp/unlisted"
comm -13 "$tmp/hooks.u" "$tmp/objexports" >"$tmp/hidden"

status=0
# complain FILE MARK WHAT: lists FILE's names under WHAT if it has any.
complain() {
	[ -s "$1" ] || return 0
	echo "$3:"
	sed "s/^/  $2 /" "$1"
	status=1
}
complain "$tmp/unmapped" - "hooks in $list but not in $map"
complain "$tmp/unlisted" + "listed in $map but not a hook in $list"
complain "$tmp/hidden" + "exported (NF_EXPORT) by an object but not a hook in $list"
complain "$tmp/extra" + "exported by $lib but not listed in $map"
complain "$tmp/missing" - "listed in $map but not exported by $lib"
[ "$status" -eq 0 ] && echo "exports ok: $(wc -l <"$tmp/exported" | tr -d ' ') symbols"
if [ "$status" -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit "$status"
