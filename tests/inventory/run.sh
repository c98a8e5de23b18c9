#!/usr/bin/env bash
# run.sh - the inventory of entry points (issue 9): checks
# tests/inventory/entrypoints.tsv against the dynamic symbol tables of this
# machine's glibc and musl and against build/libnaglefix.so.
#
# Selection: select.rules (next to this script) picks, from each libc's
# exported functions, every name that may write, send, close, duplicate,
# spawn, exec, or end a thread or the process. glibc is libc.so.6 with
# libpthread.so.0 (a stub since 2.34) and libc_nonshared.a (what -lc links
# statically); musl is its libc.so (Debian's musl package, which
# tests/install-deps.sh installs with musl-tools).
#
# Checks, each counted once per item (a symbol, a row):
#   table      every row has five tab-separated fields, a known libc, kind
#              and how, a reason, and no (symbol, libc) twice
#   rules      every skip rule in select.rules still excludes something
#   selected   every selected symbol of each libc has a row naming that
#              libc or "both"
#   exists     every row's symbol is exported by each libc it names (a row
#              for a symbol in neither says "neither" and why)
#   hook       every "hook" row is exported by the library, and every name
#              the library exports has a "hook" row
#   via        every "via NAME" names a "hook" row
#   alias      a name at the same address as a hooked name in a libc (the
#              same code: __dup2 and dup2) is a "hook" row or a "none" one,
#              never fallback or nosocket; the unhooked ones are listed
#   atfork     "atfork" rows need the library to register fork handlers
#   destructor "destructor" rows need the library to have an ELF destructor
#   auto       every "hook" row of kind write or send has a row in
#              auto_sends.tsv (how auto notes its send), every row there is
#              such a hook, and tests/auto/test_auto_sends.c has its case
#              (tests/auto/run.sh runs one a row: a split answer under auto)
#   plt        neither libc calls a table symbol (but "nosocket" ones)
#              through its PLT: libc's internal paths never reach an
#              interposed name, which is why a function is "hook" only under
#              its own name and never "via" the function it calls
#
# Environment: GLIBC_DIR (default /lib/x86_64-linux-gnu), MUSL_LIBC (default:
# the musl dynamic loader, which is its libc.so), NAGLEFIX_LIB (default
# build/libnaglefix.so). Prints each failure and one PASS line per check,
# ends with "N passed, M failed"; exit status 0 iff nothing failed.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$TOP/tests/lib.sh"
export LC_ALL=C

TABLE=$HERE/entrypoints.tsv
RULES=$HERE/select.rules
GLIBC_DIR=${GLIBC_DIR:-/lib/x86_64-linux-gnu}
LIB=${NAGLEFIX_LIB:-$TOP/build/libnaglefix.so}

scratch_dir nfinv
need_built "make build/libnaglefix.so" "$LIB"

# check NAME TOTAL FAILFILE: one "FAIL NAME: line" per line of FAILFILE,
# the rest of TOTAL items counted as passed under one PASS line; nothing
# if T (tests/lib.sh) does not select NAME.
check() {
    local name=$1 total=$2 failures=$3 nf line
    selected "$name" || return 0
    nf=$(grep -c . "$failures")
    while IFS= read -r line; do
        fail "$name" "$line"
    done <"$failures"
    if ((total - nf > 0)); then
        echo "PASS $name ($((total - nf)) of $total)"
        PASSED=$((PASSED + total - nf))
    fi
}

# The defined functions of a shared object or archive, one a line, without
# version suffixes (compat-only versions included: old binaries call them).
functions_of() {
    case $1 in
    *.a) nm -g --defined-only "$1" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TWi]$/ { print $3 }' ;;
    *) nm -D --defined-only "$1" | awk 'NF == 3 && $2 ~ /^[TWi]$/ { sub(/@.*/, "", $3); print $3 }' ;;
    esac
}

# Names the object calls or reads through its PLT/GOT (symbol relocations).
plt_imports() {
    readelf -rW "$1" | awk '/_JUMP_SLO|_GLOB_DAT/ && NF >= 5 { sub(/@.*/, "", $5); print $5 }'
}

musl_libc() {
    local f
    if [[ -n ${MUSL_LIBC:-} ]]; then
        echo "$MUSL_LIBC"
        return
    fi
    for f in /lib/ld-musl-x86_64.so.1 /lib/ld-musl-*.so.1 /usr/lib/musl/lib/libc.so /usr/local/musl/lib/libc.so; do
        [[ -e $f ]] && { readlink -f "$f"; return; }
    done
}

# select FUNCS: the names of FUNCS that a match rule takes and no skip rule
# leaves out.
select_from() {
    grep -Ei -f "$TMP/match.re" "$1" | { grep -Eiv -f "$TMP/skip.re" || true; } | sort -u
}

# ---- the libcs -------------------------------------------------------------

glibc_objs=("$GLIBC_DIR/libc.so.6" "$GLIBC_DIR/libpthread.so.0")
for f in /usr/lib/x86_64-linux-gnu/libc_nonshared.a "$GLIBC_DIR/libc_nonshared.a"; do
    [[ -e $f ]] && { glibc_objs+=("$f"); break; }
done
if [[ ! -r $GLIBC_DIR/libc.so.6 ]]; then
    fail "glibc" "$GLIBC_DIR/libc.so.6 not found (set GLIBC_DIR)"
    finish
    exit
fi
for o in "${glibc_objs[@]}"; do
    [[ -r $o ]] && functions_of "$o"
done | sort -u >"$TMP/glibc.funcs"

MUSL=$(musl_libc)
if [[ -z $MUSL || ! -r $MUSL ]]; then
    fail "musl" "musl's libc.so not found: run tests/install-deps.sh (Debian's musl-tools), or set MUSL_LIBC"
    : >"$TMP/musl.funcs"
else
    functions_of "$MUSL" | sort -u >"$TMP/musl.funcs"
fi
echo "glibc: ${glibc_objs[*]} ($(wc -l <"$TMP/glibc.funcs") functions)"
echo "musl:  ${MUSL:-none} ($(wc -l <"$TMP/musl.funcs") functions)"

# ---- the rules and the selection ------------------------------------------

sed -n 's/^match //p' "$RULES" >"$TMP/match.re"
sed -n 's/^skip \([^ ]*\) .*/\1/p' "$RULES" >"$TMP/skip.re"
if [[ ! -s $TMP/match.re ]]; then
    fail "rules" "no match line in $RULES"
    finish
    exit
fi
cat "$TMP/glibc.funcs" "$TMP/musl.funcs" | sort -u >"$TMP/all.funcs"
: >"$TMP/f.rules"
n=0
while IFS= read -r re; do
    n=$((n + 1))
    grep -Ei -f "$TMP/match.re" "$TMP/all.funcs" | grep -Eiq -- "$re" ||
        echo "skip rule '$re' excludes no exported function: remove it" >>"$TMP/f.rules"
done <"$TMP/skip.re"
check rules "$n" "$TMP/f.rules"

select_from "$TMP/glibc.funcs" >"$TMP/glibc.sel"
select_from "$TMP/musl.funcs" >"$TMP/musl.sel"
echo "selected: $(wc -l <"$TMP/glibc.sel") glibc, $(wc -l <"$TMP/musl.sel") musl"

# ---- the table --------------------------------------------------------------

# Rows without comments and the header: symbol libc kind how reason.
grep -v '^#' "$TABLE" | grep -v '^symbol	' | grep . >"$TMP/rows"
awk -F'\t' '
    NF != 5 { printf "line \"%s\": %d fields, want 5\n", $0, NF; next }
    $2 !~ /^(glibc|musl|both|neither)$/ { printf "%s: libc \"%s\" is not glibc, musl, both or neither\n", $1, $2 }
    $3 !~ /^(write|send|close|dup|exit|thread-exit|exec|spawn|stdio|open|read|wait|sockopt|sandbox)$/ { printf "%s: unknown kind \"%s\"\n", $1, $3 }
    $4 !~ /^(hook|via [A-Za-z_][A-Za-z0-9_]*|atfork|destructor|fallback|nosocket|none)$/ { printf "%s: unknown how \"%s\"\n", $1, $4 }
    $5 !~ /[a-z]/ { printf "%s: no reason\n", $1 }
    {
        split($2 == "both" ? "glibc musl" : $2, ls, " ")
        for (i in ls) if (seen[$1 "/" ls[i]]++) printf "%s: more than one row for %s\n", $1, ls[i]
    }' "$TMP/rows" >"$TMP/f.table"
check table "$(wc -l <"$TMP/rows")" "$TMP/f.table"

# Which libc each row covers, as "symbol libc" lines.
awk -F'\t' 'NF == 5 { if ($2 == "both") { print $1, "glibc"; print $1, "musl" } else print $1, $2 }' \
    "$TMP/rows" | sort -u >"$TMP/covered"

for libc in glibc musl; do
    sed -n "s/ $libc\$//p" "$TMP/covered" | sort -u >"$TMP/$libc.rows"
    comm -23 "$TMP/$libc.sel" "$TMP/$libc.rows" |
        sed "s/\$/: exported by $libc and selected by select.rules, but no row in entrypoints.tsv names it for $libc/" \
            >"$TMP/f.sel.$libc"
    check "selected $libc" "$(wc -l <"$TMP/$libc.sel")" "$TMP/f.sel.$libc"
    [[ -s $TMP/$libc.funcs ]] || continue
    comm -23 "$TMP/$libc.rows" "$TMP/$libc.funcs" |
        sed "s/\$/: the row names $libc, which does not export it/" >"$TMP/f.exists.$libc"
    check "exists $libc" "$(wc -l <"$TMP/$libc.rows")" "$TMP/f.exists.$libc"
done
awk -F'\t' 'NF == 5 && $2 == "neither" { print $1 }' "$TMP/rows" | sort -u >"$TMP/neither"
cat "$TMP/glibc.funcs" "$TMP/musl.funcs" | sort -u | comm -12 - "$TMP/neither" |
    sed 's/$/: the row says "neither", but a libc exports it/' >"$TMP/f.neither"
check "exists neither" "$(wc -l <"$TMP/neither")" "$TMP/f.neither"

# ---- the library -----------------------------------------------------------

awk -F'\t' 'NF == 5 && $4 == "hook" { print $1 }' "$TMP/rows" | sort -u >"$TMP/hooks"
nm -D --defined-only "$LIB" | awk 'NF == 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' |
    sort -u >"$TMP/exported"
comm -23 "$TMP/hooks" "$TMP/exported" |
    sed "s|\$|: a \"hook\" row, but $(basename "$LIB") does not export it|" >"$TMP/f.hook"
comm -13 "$TMP/hooks" "$TMP/exported" |
    sed 's/$/: exported by the library, but no "hook" row in entrypoints.tsv/' >>"$TMP/f.hook"
check hook "$(sort -u "$TMP/hooks" "$TMP/exported" | wc -l)" "$TMP/f.hook"

awk -F'\t' 'NF == 5 && $4 ~ /^via / { print $1, substr($4, 5) }' "$TMP/rows" >"$TMP/via"
: >"$TMP/f.via"
while read -r sym target; do
    grep -qx -- "$target" "$TMP/hooks" ||
        echo "$sym: via $target, which is not a \"hook\" row" >>"$TMP/f.via"
done <"$TMP/via"
check via "$(wc -l <"$TMP/via")" "$TMP/f.via"

# Aliases: "address name" of each libc's functions, then every name that
# shares an address with a hook and is not itself a hook.
awk -F'\t' 'NF == 5 { print $1, $4 }' "$TMP/rows" | sort -u >"$TMP/how"
: >"$TMP/f.alias"
: >"$TMP/aliases"
for libc in glibc musl; do
    obj=$GLIBC_DIR/libc.so.6
    [[ $libc == musl ]] && obj=$MUSL
    [[ -n $obj && -r $obj ]] || continue
    nm -D --defined-only "$obj" | awk 'NF == 3 && $2 ~ /^[TWi]$/ { sub(/@.*/, "", $3); print $1, $3 }' |
        sort -u | awk -v libc="$libc" '
            FILENAME == ARGV[1] { hook[$1] = 1; next }
            { names[$1] = names[$1] " " $2; if ($2 in hook) hooked[$1] = 1 }
            END {
                for (a in hooked) {
                    n = split(names[a], w, " ")
                    for (i = 1; i <= n; i++) if (!(w[i] in hook)) print w[i], libc
                }
            }' "$TMP/hooks" - >>"$TMP/aliases"
done
sort -u "$TMP/aliases" -o "$TMP/aliases"
while read -r sym libc; do
    how=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$TMP/how")
    case $how in
    none) ;;
    "") echo "$sym: the same code as a hook in $libc, but no row" >>"$TMP/f.alias" ;;
    *) echo "$sym: the same code as a hook in $libc, but its row says $how" >>"$TMP/f.alias" ;;
    esac
done <"$TMP/aliases"
check alias "$(wc -l <"$TMP/aliases")" "$TMP/f.alias"
[[ -s $TMP/aliases ]] && echo "note: aliases of hooks that are not hooked: $(cut -d' ' -f1 "$TMP/aliases" | sort -u | tr '\n' ' ')"

# fork runs the handlers of pthread_atfork (glibc: __register_atfork).
n=$(awk -F'\t' 'NF == 5 && $4 == "atfork"' "$TMP/rows" | wc -l)
: >"$TMP/f.atfork"
if ((n > 0)) && ! nm -D --undefined-only "$LIB" | grep -Eq ' (pthread_atfork|__register_atfork)(@|$)'; then
    echo "$n \"atfork\" rows, but the library registers no fork handler" >"$TMP/f.atfork"
fi
check atfork "$((n > 0 ? 1 : 0))" "$TMP/f.atfork"

# exit() runs every object's .fini_array; the compiler's own entry is one,
# so a destructor of the library's own makes it at least two pointers long.
n=$(awk -F'\t' 'NF == 5 && $4 == "destructor"' "$TMP/rows" | wc -l)
size=$(readelf -SW "$LIB" | awk '$2 == ".fini_array" { print $6 }')
: >"$TMP/f.dtor"
if ((n > 0 && 16#${size:-0} < 16)); then
    echo "$n \"destructor\" rows, but the library's .fini_array holds no destructor of its own" >"$TMP/f.dtor"
fi
check destructor "$((n > 0 ? 1 : 0))" "$TMP/f.dtor"

# ---- every send hook noted by auto ------------------------------------------

AUTO_TABLE=$HERE/auto_sends.tsv
AUTO_TEST=$TOP/tests/auto/test_auto_sends.c
awk -F'\t' 'NF == 5 && $4 == "hook" && ($3 == "write" || $3 == "send") { print $1 }' "$TMP/rows" |
    sort -u >"$TMP/send.hooks"
grep -v '^#' "$AUTO_TABLE" | grep -v '^symbol	' | grep . |
    awk -F'\t' 'NF != 3 || $2 !~ /^(after|queued)$/ { printf "bad line in auto_sends.tsv: \"%s\"\n", $0 > "/dev/stderr"; next } { print $1 }' \
    2>"$TMP/f.auto" | sort >"$TMP/auto.rows"
sed -n 's/^[[:space:]]*{ "\([A-Za-z0-9_]*\)", by_.*/\1/p' "$AUTO_TEST" | sort -u >"$TMP/auto.cases"
uniq -d "$TMP/auto.rows" | sed 's/$/: more than one row in auto_sends.tsv/' >>"$TMP/f.auto"
comm -23 "$TMP/send.hooks" "$TMP/auto.rows" |
    sed 's/$/: a write or send hook with no row in auto_sends.tsv (does auto note its send?)/' >>"$TMP/f.auto"
sort -u "$TMP/auto.rows" | comm -13 "$TMP/send.hooks" - |
    sed 's/$/: a row in auto_sends.tsv, but no write or send "hook" row in entrypoints.tsv/' >>"$TMP/f.auto"
sort -u "$TMP/auto.rows" | comm -23 - "$TMP/auto.cases" |
    sed 's|$|: a row in auto_sends.tsv, but no case in tests/auto/test_auto_sends.c|' >>"$TMP/f.auto"
check auto "$(sort -u "$TMP/send.hooks" "$TMP/auto.rows" | wc -l)" "$TMP/f.auto"

# ---- libc's internal calls --------------------------------------------------

awk -F'\t' 'NF == 5 && $4 != "nosocket" { print $1 }' "$TMP/rows" | sort -u >"$TMP/symbols"
for libc in glibc musl; do
    obj=$GLIBC_DIR/libc.so.6
    [[ $libc == musl ]] && obj=$MUSL
    [[ -n $obj && -r $obj ]] || continue
    plt_imports "$obj" | sort -u | comm -12 - "$TMP/symbols" |
        sed "s/\$/: $libc calls it through its PLT: its internal callers reach an interposed name; review their rows/" \
            >"$TMP/f.plt.$libc"
    check "plt $libc" "$(wc -l <"$TMP/symbols")" "$TMP/f.plt.$libc"
done

awk -F'\t' 'NF == 5 { split($4, w, " "); c[w[1]]++ } END { for (k in c) printf "%s %d, ", k, c[k]; print "" }' \
    "$TMP/rows" | sed 's/, $//; s/^/rows by how: /'
finish
