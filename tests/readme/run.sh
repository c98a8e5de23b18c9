#!/usr/bin/env bash
# run.sh - runs the README's examples as written (`make test-readme`):
# every ```sh block of README.md, in order, each in its own bash -e, in a
# scratch directory where build/ and conf/ are this tree's and build/ is
# first on PATH, with the README's port 7000 replaced by a free one. Each
# block passes if it exits 0 and its output shows what the README says it
# does (the checks below, one per block, in order). Ends with
# "N passed, M failed". Needs root (fix, watch, tcpdump).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$TOP/tests/lib.sh"
# shellcheck source=../programs/common.sh
. "$TOP/tests/programs/common.sh"
export LC_ALL=C
clean_env NAGLEFIX_STATE_DIR
need_built make "$TOP/build/naglefix" "$TOP/build/libnaglefix.so"
compile_java || { echo "run.sh: javac failed" >&2; exit 2; }
W=$(mktemp -d /tmp/nf-readme.XXXXXX)
ln -s "$TOP/build" "$W/build"
ln -s "$TOP/conf" "$W/conf"
ln -s "$TOP/tests" "$W/tests"
# fix's undo records (the example that fixes a running program) here, not
# in /run/naglefix: a run leaves nothing on the host
export NAGLEFIX_STATE_DIR="$W/state"

# A port nothing listens on.
free_port() {
	local p
	for p in $(shuf -i 20000-30000 -n 50); do
		ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
	echo 27000
}
PORT=$(free_port)
done_readme() {
	pkill -f "EchoServer $PORT " 2>/dev/null
	rm -rf "$W"
}
trap done_readme EXIT

# The blocks, one file each: block-1.sh ...
awk -v dir="$W" -v port="$PORT" '
	/^```sh$/ { n++; f = dir "/block-" n ".sh"; inb = 1; next }
	/^```$/ && inb { inb = 0; close(f); next }
	inb { gsub(/7000/, port); print > f }
	END { print n > (dir "/count") }' "$TOP/README.md"

median() { sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' "$1" | head -n "${2:-1}" | tail -n 1; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }

# check N LOG: what block N's output must show.
check() {
	local log=$2
	case $1 in
	1) lt 30 "$(median "$log")" ;;                      # the stall, as it is
	2) lt "$(median "$log" 1)" 5 && lt "$(median "$log" 2)" 5 &&
		grep -q 'my.conf: ok, 1 rule' "$log" ;;           # nodelay, the file, check
	3) grep -q "connect 127.0.0.1:$PORT coalesce" "$log" ;; # audit's row
	4) grep -q 'TCP_NODELAY\|nodelay' "$log" && lt "$(median "$log")" 5 &&
		compgen -G "$NAGLEFIX_STATE_DIR/fix-*" >/dev/null ;; # fixed while running, its record ours
	5) grep -q "127.0.0.1:$PORT  *connect .* connect 127.0.0.1:$PORT coalesce" "$log" ;;
	6) grep -q "stall .* pid [0-9]* .*LegacyClient" "$log" &&
		grep -q "connect 127.0.0.1:$PORT coalesce" "$log" ;;
	7) grep -Eq "^naglefix_stalls_total\{holder=\"java\",(cgroup=\"[^\"]*\",)?side=\"connect\",local=\"127.0.0.1\",peer=\"127.0.0.1:$PORT\",netns=\"host\"\} [1-9]" "$log" &&
		grep -q "^naglefix_holder_fix_info{.*peer=\"127.0.0.1:$PORT\",netns=\"host\",fix=\"connect 127.0.0.1:$PORT coalesce\"} 1" "$log" ;;
	8) grep -q "naglefix attach: .*naglefix-demo.* program [0-9]* attached" "$log" &&
		lt "$(median "$log")" 5 && grep -q 'nodelay=1' "$log" &&
		grep -q "naglefix detach: .*taken off" "$log" ;; # attach: fast in its cgroup
	*) true ;;
	esac
}

names=("" "a server, and the client as it is: the stall" "fix one program: nodelay, a policy file, check"
	"audit" "fix a running program" "read a capture" "watch the host" "a fleet: the metrics" "attach: a cgroup's rules in the kernel")
count=$(cat "$W/count")
if ! selected "README has its 8 examples"; then
	:
elif ((count >= 8)); then
	pass "README has its 8 examples ($count blocks)"
else
	fail "README has its 8 examples" "$count blocks"
fi
# The blocks build on one another (the first starts the server the others
# use): a block T does not select still runs, unjudged, before one it does.
name_of() { echo "example $1: ${names[$1]:-block $1}"; }
last=0
for ((i = 1; i <= count; i++)); do
	any_selected "$(name_of "$i")" && last=$i
done
for ((i = 1; i <= last; i++)); do
	name=$(name_of "$i")
	(cd "$W" && PATH="$TOP/build:$PATH" timeout 120 bash -e "block-$i.sh") >"$W/out-$i" 2>&1
	rc=$?
	selected "$name" || continue
	if ((rc != 0)); then
		fail "$name" "exit status $rc" "$W/out-$i"
	elif ! check "$i" "$W/out-$i"; then
		fail "$name" "its output is not what the README says" "$W/out-$i"
	else
		pass "$name"
	fi
done
finish
