#!/usr/bin/env bash
# run.sh: `make install` and `make uninstall` into a scratch DESTDIR: the
# files land where the command and the man pages expect them, the
# installed command preloads the installed library, an existing
# /etc/naglefix.conf is never replaced, and uninstall removes what install
# put there (but the administrator's config).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else ko "$name"; fi; }

make -s -C "$top" install DESTDIR="$dest" PREFIX=/usr >/dev/null
check "library in PREFIX/lib/naglefix" test -f "$dest/usr/lib/naglefix/libnaglefix.so"
check "command in PREFIX/bin" test -x "$dest/usr/bin/naglefix"
check "naglefix(1)" test -f "$dest/usr/share/man/man1/naglefix.1"
check "naglefix.conf(5)" test -f "$dest/usr/share/man/man5/naglefix.conf.5"
check "example /etc/naglefix.conf is valid" "$dest/usr/bin/naglefix" check "$dest/etc/naglefix.conf"
preload=$(cd / && "$dest/usr/bin/naglefix" -m nodelay -- sh -c 'echo "$LD_PRELOAD"')
check "installed command preloads the installed library" \
	test "$preload" = "$dest/usr/lib/naglefix/libnaglefix.so"

echo "default nodelay" >"$dest/etc/naglefix.conf"
make -s -C "$top" install DESTDIR="$dest" PREFIX=/usr >/dev/null
check "an existing config is kept" grep -qx "default nodelay" "$dest/etc/naglefix.conf"

make -s -C "$top" uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null
left=$(cd "$dest" && find . -type f | sort | tr '\n' ' ')
check "uninstall leaves only the config (left: $left)" test "$left" = "./etc/naglefix.conf "

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
