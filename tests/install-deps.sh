#!/usr/bin/env bash
# Installs what building and testing naglefix needs on a Debian machine:
# the C toolchain, the Check framework, strace, and the runtimes of the
# legacy harness (Java 17, Python 3, Node.js, Perl, and Debian's memccp with a
# memcached); for `make test-sanitize` valgrind (gcc's ASan/UBSan/TSan
# runtimes come with build-essential), for `make fuzz` clang and its
# runtimes (libFuzzer), for `make test-musl` musl-tools (musl-gcc), for
# `make test-vm` qemu (without its recommended GUI), cpio, systemd (the
# machine's PID 1) and Debian's kernel, unpacked into a cache by
# tests/vm/fetch-kernel.sh; for `make test-external` nginx, curl, git,
# rsync and OpenSSH (nginx and sshd installed with their services neither
# started nor enabled: the test runs its own instances, and the test machine
# boots this root with systemd; Debian installs rsync's service disabled)
# and, for Debian's own python3, its `test` package; for `make bench-real`
# (not part of `make test`) PostgreSQL's server and pgbench (its service,
# like nginx's, neither started nor enabled: the benchmark runs its own
# server) and the memcached and libmemcached-tools (memaslap) above; for
# `make test-wire` and `make bench` tcpdump and tshark (with Wireshark's
# dumpcap), whose captures scan reads and whose speed it is measured
# against, and jq and file (t_watch.sh reads watch's JSON lines, checks a
# binary is static), and the captures nobody here wrote that three Debian
# packages ship (python3-dpkt's examples, gopacket's pcap and pcapng test
# files, pcapfix's damaged examples: tests/wire/public.sh); mandoc, groff and man, which lint and render the man pages
# (tests/man); for `make test-fix`
# iproute2 (ip, in a network namespace of the test's own) and passwd (useradd,
# for a user without rights); for t_watch_cgroup.sh a real container,
# podman with runc (run from a root directory, nothing pulled; runc, as
# crun refuses hybrid cgroups), without podman's recommends; for `make
# test-attach` bpftool (Debian's, the judge of what is attached to a
# cgroup; clang above compiles the other tools' programs it loads) and
# golang-go (a Go client built offline with CGO_ENABLED=0: a static
# binary that turns TCP_NODELAY off itself after Dial); for
# `make test-metrics` Prometheus (its server and promtool) and
# node_exporter, without their recommends (the collectors' timers),
# their services neither started nor enabled: the test runs its own; for
# `make deb` and `make test-deb` Debian's packaging tools (debhelper,
# dpkg-dev's dpkg-buildpackage, fakeroot) and lintian, the package's judge; for
# `make test-image` podman and runc above, catatonit (the pause image
# `podman kube play` builds itself, nothing pulled) and python3-yaml (the
# Kubernetes manifests read and a Pod written, tests/image/manifests.py).
# Needs root (or sudo).
set -eu
pkgs=(build-essential pkg-config check strace procps default-jdk-headless python3 nodejs perl
	valgrind clang libclang-rt-14-dev musl-tools libcap2-bin util-linux cpio systemd
	libmemcached-tools memcached nginx curl postgresql git rsync openssh-server openssh-client
	tcpdump tshark jq file python3-dpkt golang-github-google-gopacket-dev pcapfix mandoc groff-base man-db iproute2 passwd bpftool golang-go
	debhelper dpkg-dev fakeroot lintian python3-yaml)
bare=(qemu-system-x86 podman runc catatonit prometheus prometheus-node-exporter) # installed without recommends
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Runtimes already on PATH (e.g. a pyenv python3, a vendor JDK) count.
want() { command -v "$1" >/dev/null 2>&1; }
filtered=()
for p in "${missing[@]}"; do
	case $p in
	default-jdk-headless) want javac && continue ;;
	python3) want python3 && continue ;;
	nodejs) want node && continue ;;
	perl) want perl && continue ;;
	esac
	filtered+=("$p")
done
# CPython's regression tests (tests/external): Debian's python3 has them
# in a package of their own; another python3 (pyenv) ships them or not.
if [ "$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null)" = /usr ] &&
	! python3 -c 'import test.support, test.test_asyncio' 2>/dev/null; then
	filtered+=("libpython$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')-testsuite")
fi
bare_missing=()
for p in "${bare[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || bare_missing+=("$p")
done
updated=0
if [ ${#filtered[@]} -gt 0 ] || [ ${#bare_missing[@]} -gt 0 ]; then
	$sudo apt-get update -qq
	updated=1
fi
# invoke-rc.d asks policy-rc.d (exit 101: no) before it starts a service
# a package installs; without one, nginx would start on port 80.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ $((${#filtered[@]} + ${#bare_missing[@]})) -gt 0 ] && [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# tests/install-deps.sh: start no service while it installs\nexit 101\n' |
		$sudo tee "$policy" >/dev/null && $sudo chmod 0755 "$policy" && own_policy=1
fi
drop_policy() { [ "$own_policy" -eq 0 ] || $sudo rm -f "$policy"; }
[ ${#filtered[@]} -eq 0 ] ||
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${filtered[@]}" ||
	{ drop_policy; exit 1; }
[ ${#bare_missing[@]} -eq 0 ] ||
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${bare_missing[@]}" ||
	{ drop_policy; exit 1; }
drop_policy
# Not enabled either (the test machine boots with systemd); quiet if it is not.
for p in "${filtered[@]}" "${bare_missing[@]}"; do
	case $p in
	nginx | postgresql | prometheus | prometheus-node-exporter)
		$sudo systemctl disable --quiet "$p.service" 2>/dev/null || true ;;
	openssh-server) $sudo systemctl disable --quiet ssh.service 2>/dev/null || true ;;
	esac
done
# podman's units neither (the test machine would start them at its boot)
for p in "${bare_missing[@]}"; do
	[ "$p" != podman ] || $sudo systemctl disable --quiet podman.socket podman.service \
		podman-restart.service podman-auto-update.timer podman-auto-update.service 2>/dev/null || true
done
# the test machine's kernel (apt's lists must be fresh to find it)
vm_cache=${NAGLEFIX_VM_CACHE:-/var/cache/naglefix-vm}
if ! NAGLEFIX_VM_CACHE="$vm_cache" "$(dirname "$0")/vm/fetch-kernel.sh" --have; then
	[ "$updated" -eq 1 ] || $sudo apt-get update -qq
	# a failed download fails `make test-vm` (it says why), not every suite
	$sudo env NAGLEFIX_VM_CACHE="$vm_cache" "$(dirname "$0")/vm/fetch-kernel.sh" ||
		echo "warning: no kernel for the test machine: make test-vm will fail" >&2
fi
echo "test dependencies ready"
