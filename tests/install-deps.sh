#!/usr/bin/env bash
# Installs what building and testing naglefix needs on a Debian machine:
# the C toolchain, the Check framework, strace, and the runtimes of the
# legacy harness (Java 17, Python 3, Node.js, Perl); for `make test-sanitize`
# valgrind (gcc's ASan/UBSan/TSan runtimes come with build-essential), for
# `make fuzz` clang and its runtimes (libFuzzer), for `make test-musl`
# musl-tools (musl-gcc). Needs root (or sudo).
set -eu
pkgs=(build-essential pkg-config check strace procps default-jdk-headless python3 nodejs perl
	valgrind clang libclang-rt-14-dev musl-tools libcap2-bin util-linux)
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
if [ ${#filtered[@]} -gt 0 ]; then
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${filtered[@]}"
fi
echo "test dependencies ready"
