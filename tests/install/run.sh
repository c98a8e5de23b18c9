#!/usr/bin/env bash
# run.sh: `make install` and `make uninstall` into a scratch DESTDIR: the
# files land where the command and the man pages expect them, the
# installed command preloads the installed library, an existing
# /etc/naglefix.conf is never replaced, and uninstall removes what install
# put there (but the administrator's config). Ends with "N passed, M
# failed"; T=pattern picks checks by name (tests/lib.sh).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/tests/lib.sh"
dest=$(mktemp -d)
scratch=$(mktemp -d)
trap 'rm -rf "$dest" "$scratch"' EXIT
# check NAME CMD...: NAME passes iff CMD does (T=pattern: only the names it
# matches run; the installs they judge always do)
check() {
	local name=$1
	shift
	selected "$name" || return 0
	if "$@"; then pass "$name"; else fail "$name"; fi
}

make -s -C "$top" install DESTDIR="$dest" PREFIX=/usr >/dev/null
check "library in PREFIX/lib/naglefix" test -f "$dest/usr/lib/naglefix/libnaglefix.so"
check "command in PREFIX/bin" test -x "$dest/usr/bin/naglefix"
check "naglefix(1)" test -f "$dest/usr/share/man/man1/naglefix.1"
check "naglefix.conf(5)" test -f "$dest/usr/share/man/man5/naglefix.conf.5"
check "naglefix(7)" test -f "$dest/usr/share/man/man7/naglefix.7"
check "example /etc/naglefix.conf is valid" "$dest/usr/bin/naglefix" check "$dest/etc/naglefix.conf"
preload=$(cd / && "$dest/usr/bin/naglefix" -m nodelay -- sh -c 'echo "$LD_PRELOAD"')
check "installed command preloads the installed library" \
	test "$preload" = "$dest/usr/lib/naglefix/libnaglefix.so"

# The whole-host deployment, as the README writes it: the installed
# library's path in /etc/ld.so.preload (a private copy of /etc in a mount
# namespace of this test's own) and a rule in /etc/naglefix.conf. An
# unmodified Python client, started with no LD_PRELOAD at all, is fixed.
host_wide() {
	local etc=$scratch/etc port out
	cp -a /etc "$etc" 2>/dev/null
	echo "$dest/usr/lib/naglefix/libnaglefix.so" >"$etc/ld.so.preload"
	echo "default nodelay" >"$etc/naglefix.conf"
	# the server lives while its stdin (a sleep) does, and prints its port
	{ sleep 60 2>/dev/null | timeout 70 python3 "$top/tests/programs/legacy_server.py" 0 60 >"$scratch/server.out" 2>&1 & }
	wait_until 5 grep -q '^PORT ' "$scratch/server.out"
	port=$(sed -n 's/^PORT //p' "$scratch/server.out")
	out=$(env -u LD_PRELOAD -u NAGLEFIX_MODE -u NAGLEFIX_CONF timeout 60 unshare -m sh -c \
		'mount --bind "$1" /etc && exec python3 "$2" 127.0.0.1 "$3" 13 split' sh \
		"$etc" "$top/tests/programs/legacy_client.py" "${port:-0}" 2>&1)
	echo "$out" | sed -n 's/^median_ms=\([0-9.]*\).*/\1/p'
}
if ! any_selected "whole host via /etc/ld.so.preload"; then
	:
elif [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	ms=$(host_wide)
	check "whole host via /etc/ld.so.preload: python client ${ms:-?} ms < 5" \
		awk -v m="${ms:-999}" 'BEGIN { exit !(m < 5) }'
else
	echo "SKIP whole host via /etc/ld.so.preload: needs root and mount namespaces"
fi

echo "default nodelay" >"$dest/etc/naglefix.conf"
make -s -C "$top" install DESTDIR="$dest" PREFIX=/usr >/dev/null
check "an existing config is kept" grep -qx "default nodelay" "$dest/etc/naglefix.conf"

make -s -C "$top" uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null
left=$(cd "$dest" && find . -type f | sort | tr '\n' ' ')
check "uninstall leaves only the config (left: $left)" test "$left" = "./etc/naglefix.conf "

finish
