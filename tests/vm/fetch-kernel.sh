#!/usr/bin/env bash
# fetch-kernel.sh [--have] - puts Debian's current amd64 kernel, and the
# few modules the test machine needs (virtio, 9p, overlay; inet_diag and
# tcp_diag, the socket table's lookup that naglefix watch names a holder
# with), in the cache tests/vm/run.sh reads:
# ${NAGLEFIX_VM_CACHE:-/var/cache/naglefix-vm}/VERSION/{vmlinuz,modules/}.
# The package is downloaded and unpacked, not installed: the host's /boot
# and /lib/modules are not touched. Does nothing if the cache has it with
# every module (a cache made before a module was added here is made
# again). --have: exits 0 if some cached kernel has every module, 1 if
# none, asking nothing of apt (tests/install-deps.sh asks it first).
# Needs apt (Debian's registry) and dpkg-deb; called by tests/install-deps.sh.
set -eu
cache=${NAGLEFIX_VM_CACHE:-/var/cache/naglefix-vm}
MODULES="virtio virtio_ring virtio_pci virtio_pci_legacy_dev virtio_pci_modern_dev
	netfs fscache 9pnet 9pnet_virtio 9p overlay inet_diag tcp_diag"

# complete DIR: DIR holds a kernel and every module (its ready mark last)
complete() {
	[ -e "$1/ready" ] || return 1
	for m in $MODULES; do
		[ -e "$1/modules/$m.ko" ] || return 1
	done
}
if [ "${1:-}" = --have ]; then
	for d in "$cache"/*/; do
		complete "$d" && exit 0
	done
	exit 1
fi

if [ "$(dpkg --print-architecture)" != amd64 ]; then
	echo "fetch-kernel: not amd64: the test machine is not available here" >&2
	exit 0
fi
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
if [ -z "$pkg" ]; then
	echo "fetch-kernel: apt knows no linux-image-amd64 (run apt-get update)" >&2
	exit 1
fi
version=${pkg#linux-image-}
dest=$cache/$version
complete "$dest" && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -qq -o APT::Sandbox::User=root "$pkg")
dpkg-deb -x "$work"/*.deb "$work/root"
rm -rf "$dest"
mkdir -p "$dest/modules"
cp "$work/root/boot/vmlinuz-$version" "$dest/vmlinuz"
for m in $MODULES; do
	f=$(find "$work/root/lib/modules/$version" -name "$m.ko*" | head -n 1)
	case $f in
	*.ko) cp "$f" "$dest/modules/$m.ko" ;;
	*.ko.xz) xz -dc "$f" >"$dest/modules/$m.ko" ;;
	*.ko.zst) zstd -qdc "$f" >"$dest/modules/$m.ko" ;;
	"") echo "fetch-kernel: $pkg has no module $m" >&2; exit 1 ;;
	*) echo "fetch-kernel: cannot unpack $f" >&2; exit 1 ;;
	esac
	echo "$m.ko" >>"$dest/modules/order"
done
touch "$dest/ready"
echo "fetch-kernel: $pkg in $dest"
