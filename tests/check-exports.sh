#!/bin/sh
# check-exports.sh LIB MAP - proves LIB exports exactly the names MAP lists.
#
# The expected names are those between 'global:' and 'local:' in the
# version script MAP; the actual ones are what `nm -D --defined-only LIB`
# shows. Any name exported but not listed, or listed but not exported, is
# printed and the script exits 1; otherwise it prints "exports ok: N symbols".
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 LIB MAP" >&2
	exit 2
fi
lib=$1
map=$2
for f in "$lib" "$map"; do
	[ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 2; }
done

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

# Defined dynamic symbols; version suffixes (name@@VER) dropped. A named
# version node shows up as an absolute (A) symbol of its own: not an export.
nm -D --defined-only "$lib" >"$tmp/nm"
awk 'NF >= 2 && $(NF-1) != "A" { sub(/@.*/, "", $NF); print $NF }' "$tmp/nm" |
	sort -u >"$tmp/exported"

comm -13 "$tmp/listed" "$tmp/exported" >"$tmp/extra"
comm -23 "$tmp/listed" "$tmp/exported" >"$tmp/missing"

status=0
if [ -s "$tmp/extra" ]; then
	echo "exported by $lib but not listed in $map:"
	sed 's/^/  + /' "$tmp/extra"
	status=1
fi
if [ -s "$tmp/missing" ]; then
	echo "listed in $map but not exported by $lib:"
	sed 's/^/  - /' "$tmp/missing"
	status=1
fi
[ "$status" -eq 0 ] && echo "exports ok: $(wc -l <"$tmp/exported" | tr -d ' ') symbols"
if [ "$status" -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit "$status"
