#!/usr/bin/env bash
# run.sh - the checks no process on this host can make, on a machine of the
# tests' own: a Debian kernel under qemu (software emulation: nested KVM
# is not usable here), booted with the host's root directory shared over
# 9p behind an in-RAM overlay, and the host's systemd as PID 1. There root
# has every capability, so tests/vm/inside.sh can raise RLIMIT_NOFILE
# above 65,536 and run the README's systemd drop-in deployment as written.
# Nothing of the host changes: the machine's writes die with it.
#
# Needs qemu-system-x86, a static libc (for the machine's init) and the
# kernel that tests/vm/fetch-kernel.sh caches (tests/install-deps.sh does
# both). `make test-vm` builds what the checks use first.
#
# Prints the machine's "PASS name" / "FAIL name: why" lines and ends with
# "N passed, M failed". The console is kept in build/tests/vm/console.log.
# T=pattern (tests/lib.sh) reaches the machine: it shows and counts only
# the checks T matches (every check still runs there; a failure always
# shows).
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P)
B=$TOP/build/tests/vm
CACHE=${NAGLEFIX_VM_CACHE:-/var/cache/naglefix-vm}
LIMIT=${VM_TIMEOUT:-600}

die() { echo "FAIL vm: $*"; echo "0 passed, 1 failed"; exit 1; }

if [ "$(uname -m)" != x86_64 ]; then
	echo "SKIP vm: the test machine is x86_64 only"
	echo "0 passed, 0 failed"
	exit 0
fi
command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64: run tests/install-deps.sh"
kdir=$(ls -d "$CACHE"/*/ready 2>/dev/null | sort -V | tail -n 1)
[ -n "$kdir" ] || die "no kernel in $CACHE: run tests/install-deps.sh"
kdir=${kdir%/ready}
[[ $TOP =~ ^[A-Za-z0-9/._+@-]+$ ]] ||
	die "the tests' path $TOP has characters the kernel command line cannot carry"
case $TOP in /run/* | /proc/* | /sys/* | /dev/*) die "the tests' path $TOP is hidden in the machine" ;; esac
[ -x /lib/systemd/systemd ] || die "no /lib/systemd/systemd: run tests/install-deps.sh"

# The initramfs: the static init and the modules it loads.
rm -rf "$B/initramfs"
mkdir -p "$B/initramfs"
cp -r "$kdir/modules" "$B/initramfs/modules"
cp "$B/vminit" "$B/initramfs/init" || die "$B/vminit is not built: run 'make test-vm'"
(cd "$B/initramfs" && find . | cpio -o -H newc --quiet | gzip -1) >"$B/initramfs.gz" ||
	die "cpio failed"

# What inside.sh needs from the host: python3 by absolute path (systemd's
# PATH would not find a pyenv one).
python=$(python3 -c 'import sys; print(sys.executable)') || die "no python3"
{
	echo "PYTHON=$python"
	printf 'T=%q\n' "${T:-}"
} >"$B/host.env"

rm -f "$B/console.log" "$B/results.log" "$B/results.txt"
start=$EPOCHREALTIME
timeout -k 10 "$LIMIT" qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 2 \
	-nodefaults -display none -no-reboot \
	-serial "file:$B/console.log" -serial "file:$B/results.log" \
	-kernel "$kdir/vmlinuz" -initrd "$B/initramfs.gz" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-append "console=ttyS0 quiet mitigations=off panic=-1 fstab=no systemd.show_status=false systemd.firstboot=off \
systemd.run=$TOP/tests/vm/inside.sh systemd.run_success_action=poweroff-force \
systemd.run_failure_action=poweroff-force" </dev/null >"$B/qemu.log" 2>&1
rc=$?
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')

# a serial port ends its lines with CR LF
tr -d '\r' <"$B/results.log" >"$B/results.txt" 2>/dev/null
R=$B/results.txt
grep -a -E '^(PASS|FAIL|SKIP) |^    ' "$R"
grep -a '^NFVM-INIT' "$B/console.log" 2>/dev/null
echo "machine: ${kdir##*/}, $secs s (qemu exit $rc)"
if ! grep -aqx DONE "$R"; then
	tail -n 20 "$B/console.log" 2>/dev/null | sed 's/^/    /'
	cat "$B/qemu.log"
	echo "FAIL vm: the machine did not finish (timeout $LIMIT s); console: $B/console.log"
	echo "$(grep -ac '^PASS ' "$R") passed, $(($(grep -ac '^FAIL ' "$R") + 1)) failed"
	exit 1
fi
grep -a -E '^[0-9]+ passed, [0-9]+ failed$' "$R" | tail -n 1
grep -aqx '[0-9]* passed, [1-9][0-9]* failed' "$R" && exit 1
# nothing passed: only where T named nothing (the machine said SKIP T)
grep -aqx '0 passed, 0 failed' "$R" && ! grep -aq '^SKIP T: ' "$R" && exit 1
exit 0
