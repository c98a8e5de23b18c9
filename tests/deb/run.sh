#!/usr/bin/env bash
# run.sh: the Debian package (`make deb`, conf/debian/) built from this
# tree, judged by lintian and by dpkg on this machine: installed with
# dpkg -i, the library found by bare name by the loader (LD_PRELOAD and an
# /etc/ld.so.preload line, the latter in a private /etc of a mount
# namespace of the test's own) fixing a split client, the packaged command
# finding the packaged library, the man pages found by man, nothing
# enabled or started, an upgrade keeping a changed /etc/naglefix.conf, and
# a purge leaving no file. The machine is put back: the package is purged
# at the end, on failure too; /etc/ld.so.preload is never written. A
# naglefix package already installed (anyone's) is left alone: SKIP.
# Needs root. Ends with "N passed, M failed"; T=pattern picks the checks
# said and counted (every step runs: each builds on the one before).
#
# run.sh --prepare: only the two packages built (make deb, make deb
# DEB_REVISION=2) into build/tests/deb/, niced; no check, no root needed.
# No check times them: a lane of its own may run it before, or beside,
# the suite. The suite takes a package from there when make deb made it
# from the tree as it is now (make deb-inputs, the same sha256), else
# builds it; both hold build/tests/deb/lock while they build or copy.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$top/tests/lib.sh"
export LC_ALL=C
clean_env
only_selected
D=$top/build/tests/deb
ver=$(sed -n 's/^#define NF_VERSION "\(.*\)"/\1/p' "$top/include/nf_version.h")

# built REVISION: the package of revision REVISION of this tree in
# $D/REVISION/, made by make deb in $D/b (which keeps the compiled tree for
# the next revision) unless the one there was made from the same inputs.
# Its build log is $D/buildREVISION.log. Call with $D/lock held.
built() {
	local want
	want=$(make -s -C "$top" deb-inputs) || return 1
	if [ "$want" = "$(cat "$D/$1/.inputs" 2>/dev/null)" ] &&
		ls "$D/$1/naglefix_${ver}-$1_"*.deb >/dev/null 2>&1; then
		echo "the package in $D/$1 made from these inputs ($want): taken" >"$D/take$1.log"
		return 0
	fi
	rm -rf "${D:?}/$1" "$D/take$1.log"
	nice -n 19 make -s -C "$top" deb B="$D/b" DEB_REVISION="$1" >"$D/build$1.log" 2>&1 &&
		mkdir -p "$D/$1" && cp "$D/b/deb/"*"_${ver}-$1_"* "$D/$1/" &&
		cp "$D/b/deb-compiled/.inputs" "$D/$1/.inputs"
}
if [ "${1:-}" = --prepare ]; then
	mkdir -p "$D"
	(flock 9 && built 1 && built 2) 9>"$D/lock"
	exit
fi

# check NAME CMD...: NAME passes iff CMD does
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
# below LIMIT MS: MS is a number under LIMIT
below() { awk -v m="${2:-x}" -v l="$1" 'BEGIN { exit !(m ~ /^[0-9.]+$/ && m + 0 < l) }'; }
above() { awk -v m="${2:-x}" -v l="$1" 'BEGIN { exit !(m ~ /^[0-9.]+$/ && m + 0 > l) }'; }
export -f below

if [ "$(id -u)" -ne 0 ]; then
	skip "deb" "needs root (dpkg -i on this machine)"
	finish
	exit
fi
if dpkg-query -W -f='${Status}' naglefix 2>/dev/null | grep -qv "not-installed"; then
	skip "deb" "a naglefix package is already on this machine ($(dpkg-query -W \
		-f='${Version} ${Status}' naglefix)): not replaced"
	finish
	exit
fi
if [ -e /etc/naglefix.conf ]; then
	skip "deb" "/etc/naglefix.conf exists (the package's purge would remove it): not replaced"
	finish
	exit
fi
for tool in dpkg-buildpackage dh lintian fakeroot man; do
	command -v "$tool" >/dev/null || { fail "deb: $tool missing (tests/install-deps.sh)"; finish; exit; }
done

scratch_dir nf-deb
W=$TMP
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=/usr/lib/$ma/libnaglefix.so
tried=0 # set before the first dpkg -i: a naglefix package then is ours
pids=()

# dpkg_do ARGS...: dpkg, retried while another dpkg or apt (another test's
# install) holds the lock, up to 10 minutes
dpkg_do() {
	local i rc
	for ((i = 0; i < 300; i++)); do
		dpkg "$@" >"$W/dpkg.log" 2>&1
		rc=$?
		grep -q "lock" "$W/dpkg.log" && [ "$rc" -ne 0 ] || return "$rc"
		sleep 2
	done
	return "$rc"
}
# The machine put back whatever happened: the package purged, our
# processes ended, the scratch directory removed.
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	if [ "$tried" -eq 1 ] &&
		dpkg-query -W -f='${Status}' naglefix 2>/dev/null | grep -qv not-installed; then
		dpkg_do --purge naglefix || echo "run.sh: dpkg --purge naglefix failed: $(cat "$W/dpkg.log")" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# ---- built and linted ----------------------------------------------------
build() { # build REVISION: make deb's package copied to $W/bREVISION, its path on stdout
	# niced, as lintian below: no check times them, the suites beside do time
	mkdir -p "$D" "$W/b$1"
	(flock 9 && built "$1" && cp "$D/$1/"* "$W/b$1/") 9>"$D/lock" &&
		ls "$W/b$1/naglefix_${ver}-$1_"*.deb 2>/dev/null
}
deb1=$(build 1)
if [ -z "$deb1" ]; then
	fail "make deb builds naglefix_${ver}-1" "no package" "$D/build1.log"
	finish
	exit
fi
pass "make deb builds $(basename "$deb1") with dpkg-buildpackage"
changes=${deb1%.deb}.changes
nice -n 19 lintian --fail-on error,warning "$changes" >"$W/lintian.log" 2>&1
rc=$?
bad=$(grep -cE '^[EW]: ' "$W/lintian.log")
check "lintian: no error, no warning but those overridden with a reason (status $rc, $bad E/W)" \
	test "$rc" -eq 0 -a "$bad" -eq 0
if [ "$rc" -ne 0 ] || [ "$bad" -ne 0 ]; then sed 's/^/    /' "$W/lintian.log"; fi
# every override has a comment, its reason, just above it
unreasoned=$(awk '/^#/ { r = 1; next } /^[[:space:]]*$/ { r = 0; next } { if (!r) print; r = 0 }' \
	"$top/conf/debian/naglefix.lintian-overrides")
check "lintian overrides each say why${unreasoned:+ (not: $unreasoned)}" test -z "$unreasoned"
deps=$(dpkg-deb -f "$deb1" Depends)
check "depends on libc alone ($deps)" bash -c '[[ $1 =~ ^libc6(\ \([^\)]*\))?$ ]]' _ "$deps"

# ---- the machine before --------------------------------------------------
# Every path of /usr, /etc, /run and /var/lib but other tools' container
# storage and network namespaces (which other tests make while this one
# runs).
snapshot() {
	find /usr /etc /run /var/lib \( -path /var/lib/containers -o -path /run/containers \
		-o -path /run/user -o -path /run/netns \) -prune -o -print 2>/dev/null | sort
}
snapshot >"$W/before"
preload_before=$(sha256sum /etc/ld.so.preload 2>/dev/null || echo absent)

cc -O2 -o "$W/split_client" "$top/tests/attach/split_client.c" || fail "build split_client"
{ sleep 600 2>/dev/null | python3 "$top/tests/fix/echo_server.py" 127.0.0.1 600 >"$W/echo.out" 2>&1 & }
pids+=($!)
wait_until 5 grep -q '^PORT ' "$W/echo.out"
port=$(sed -n 's/^PORT //p' "$W/echo.out")
# split ROUNDS [ENV...]: the split client's median round in ms (stderr to split.err)
split() {
	local rounds=$1
	shift
	env "$@" "$W/split_client" 127.0.0.1 "${port:-0}" "$rounds" 2>"$W/split.err" |
		sed -n 's/^median_ms=\([0-9.]*\).*/\1/p'
}

ms=$(split 15)
check "bare split client stalls: ${ms:-?} ms a round > 30" above 30 "$ms"
ms=$(split 15 LD_PRELOAD=libnaglefix.so NAGLEFIX_MODE=nodelay)
check "before install the loader finds no libnaglefix.so (${ms:-?} ms)" \
	bash -c 'grep -q "cannot be preloaded" "$1" && ! ldconfig -p | grep -q libnaglefix' _ "$W/split.err"

# ---- installed -----------------------------------------------------------
tried=1
dpkg_do -i "$deb1"
rc=$?
check "dpkg -i $(basename "$deb1")" test "$rc" -eq 0
[ "$rc" -eq 0 ] || sed 's/^/    /' "$W/dpkg.log"
[ "$rc" -eq 0 ] || { finish; exit; }
# the package's whole file list, for the purge
dpkg-query -L naglefix | sort >"$W/owned"

check "naglefix in /usr/bin says version $ver" \
	bash -c '[ "$(/usr/bin/naglefix --version)" = "naglefix $1" ]' _ "$ver"
# (ldconfig names it by the first of its directories, /lib/MULTIARCH on a
# merged /usr)
check "the library in the loader's cache (ldconfig -p: $lib)" \
	bash -c 'ldconfig -p | grep -qE "^[[:space:]]*libnaglefix\.so \(.*\) => (/usr)?/lib/$1/libnaglefix\.so\$"' _ "$ma"
ms=$(split 30 LD_PRELOAD=libnaglefix.so NAGLEFIX_MODE=nodelay)
check "LD_PRELOAD=libnaglefix.so (bare name) fixes the split client: ${ms:-?} ms < 5" \
	bash -c 'below 5 "$1" && ! grep -q "cannot be preloaded" "$2"' _ "$ms" "$W/split.err"
got=$(cd / && /usr/bin/naglefix -m nodelay -- sh -c 'echo "$LD_PRELOAD"')
check "the packaged command preloads the packaged library ($got)" test "$got" = "$lib"
ms=$(cd / && /usr/bin/naglefix -m nodelay -- "$W/split_client" 127.0.0.1 "${port:-0}" 30 |
	sed -n 's/^median_ms=\([0-9.]*\).*/\1/p')
check "naglefix -m nodelay -- split client: ${ms:-?} ms < 5" below 5 "$ms"

# A line "libnaglefix.so" (no path) in /etc/ld.so.preload, and the policy
# "default nodelay", in a private copy of /etc bound over it in a mount
# namespace of this test's own: the machine's /etc is not written.
preload_line() {
	local etc=$W/etc
	cp -a /etc "$etc" 2>/dev/null
	echo "libnaglefix.so" >"$etc/ld.so.preload"
	echo "default nodelay" >"$etc/naglefix.conf"
	unshare -m sh -c 'mount --bind "$1" /etc && exec "$2" 127.0.0.1 "$3" 30' sh \
		"$etc" "$W/split_client" "${port:-0}" 2>"$W/split.err" |
		sed -n 's/^median_ms=\([0-9.]*\).*/\1/p'
}
ms=$(preload_line)
check "a line 'libnaglefix.so' in /etc/ld.so.preload (private /etc) fixes it: ${ms:-?} ms < 5" \
	bash -c 'below 5 "$1" && ! grep -q "cannot be preloaded" "$2"' _ "$ms" "$W/split.err"

for page in "1 naglefix" "5 naglefix.conf" "7 naglefix"; do
	read -r sec name <<<"$page"
	where=$(man -w "$sec" "$name" 2>/dev/null)
	check "man $sec $name found: ${where:-nothing}" test "$where" = "/usr/share/man/man$sec/$name.$sec.gz"
done
check "man naglefix renders its FILES section" \
	bash -c 'MANWIDTH=80 man -P cat naglefix 2>/dev/null | grep -q "^FILES"'

unit=/usr/lib/systemd/system/naglefix-watch.service
check "the watch unit where systemd looks, running /usr/bin/naglefix" \
	grep -q '^ExecStart=/usr/bin/naglefix watch' "$unit"
for f in naglefix-dropin.conf naglefix-attach.conf; do
	check "drop-in example $f, with the package's paths" \
		bash -c 'test -f "$1" && ! grep -q /usr/local "$1"' _ "/usr/share/doc/naglefix/examples/$f"
done
check "/etc/naglefix.conf is a conffile, the example policy" \
	bash -c 'dpkg-query -W -f="\${Conffiles}" naglefix | grep -q "^ /etc/naglefix.conf " &&
		/usr/bin/naglefix check /etc/naglefix.conf >/dev/null'
enabled=$(find /etc/systemd /var/lib/systemd -name '*naglefix*' 2>/dev/null)
check "nothing enabled (no naglefix link under /etc/systemd, no state${enabled:+: $enabled})" \
	test -z "$enabled"
running=$(for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = /usr/bin/naglefix ] && echo "${p#/proc/}"
done)
check "nothing started (no process of /usr/bin/naglefix${running:+: $running})" test -z "$running"
if [ -d /run/systemd/system ]; then
	check "systemctl: naglefix-watch disabled and inactive" bash -c \
		'[ "$(systemctl is-enabled naglefix-watch)" = disabled ] && ! systemctl is-active -q naglefix-watch'
fi

# naglefix fix on a running client, once its first round ended (200 rounds
# of 44 ms: it is still there; fixed, the rest take under a second): root's
# record in /run/naglefix, which only the purge removes. Twice at most:
# other tests on this machine use /run/naglefix too, and may empty it
# between fix and the look.
recorded() {
	local client
	"$W/split_client" 127.0.0.1 "${port:-0}" 200 each >"$W/fixed.out" 2>&1 &
	client=$!
	pids+=("$client")
	wait_until 30 grep -q '^round 1 ' "$W/fixed.out"
	/usr/bin/naglefix fix -m nodelay "$client" >"$W/fix.log" 2>&1
	[ -e "/run/naglefix/fix-$client" ] && grep -q "0 -> 1" "$W/fix.log"
	local rc=$?
	wait "$client"
	return "$rc"
}
if recorded || recorded; then
	pass "naglefix fix -m nodelay PID records in /run/naglefix"
else
	fail "naglefix fix -m nodelay PID records in /run/naglefix" "no record" "$W/fix.log"
fi

# ---- upgraded ------------------------------------------------------------
echo "# changed by tests/deb $$" >>/etc/naglefix.conf
cp /etc/naglefix.conf "$W/changed.conf"
deb2=$(build 2)
if [ -z "$deb2" ]; then
	fail "make deb DEB_REVISION=2 builds naglefix_${ver}-2" "no package" "$D/build2.log"
else
	dpkg_do -i "$deb2"
	rc=$?
	check "dpkg -i $(basename "$deb2") (upgrade)" test "$rc" -eq 0 -a \
		"$(dpkg-query -W -f='${Version}' naglefix)" = "$ver-2"
	check "upgrade keeps the changed /etc/naglefix.conf" cmp -s "$W/changed.conf" /etc/naglefix.conf
fi

# ---- purged --------------------------------------------------------------
dpkg_do --purge naglefix
rc=$?
check "dpkg --purge naglefix" test "$rc" -eq 0 -a -z "$(dpkg-query -W -f='${Status}' naglefix 2>/dev/null |
	grep -v not-installed)"
snapshot >"$W/after"
new=$(comm -13 "$W/before" "$W/after" | grep naglefix)
check "purge leaves no file: nothing new named naglefix under /usr /etc /run /var/lib${new:+: ${new//$'\n'/ }}" \
	test -z "$new"
left=$(while read -r f; do [ "$f" != /. ] && [ -e "$f" ] && ! grep -qxF "$f" "$W/before" && echo "$f"; done <"$W/owned")
check "purge leaves none of the package's files${left:+: ${left//$'\n'/ }}" test -z "$left"
check "purge removes /etc/naglefix.conf and /run/naglefix" test ! -e /etc/naglefix.conf -a ! -e /run/naglefix
check "the loader's cache forgets the library" bash -c '! ldconfig -p | grep -q libnaglefix'
check "/etc/ld.so.preload as it was" test "$(sha256sum /etc/ld.so.preload 2>/dev/null || echo absent)" = "$preload_before"

finish
