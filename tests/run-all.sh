#!/usr/bin/env bash
# Runs every test suite of naglefix (what `make test` calls) and ends with
# one line "N passed, M failed" summing them all. Exits non-zero on any
# failure, or if a suite could not run at all. Each suite's closing line
# "== NAME: N passed, M failed in S s" and the line "== all: S s" before
# the last say where the run's time went.
#
# The suites run in lanes side by side, each lane one suite after another:
#   timed  the suites that judge a time somewhere (a stall of 40 ms against
#          under 5 ms, a flush 20 ms after the writes), at the caller's
#          priority, TIMED1 then TIMED2;
#   plain  the suites that judge none (external: CPython's tests and the
#          daemons' runs judged against the same run bare; cli: the
#          command's functions but watch's stream (cli-timed, a timed
#          suite); wire-plain: wire's programs and its captures on file;
#          sanitize-plain: sanitize's untimed checks), in two lanes
#          (PLAIN1, PLAIN2) under SCHED_IDLE and the lowest best-effort
#          I/O priority, so a timed check keeps its CPU. PLAIN1 first
#          runs the --prepare of the timed suites in PREPARE: their
#          builds, which judge no time.
# Everything the suites' make targets need is built first, once (two makes
# building one file at once would collide); a suite that builds more
# builds into a directory of its own (build/asan, build/musl, build/fuzz,
# a scratch directory), under a lock where a prepare builds it too. A
# suite's output is held until it ends, then printed whole with its
# closing line and "== cpu NAME: U s user, S s sys" (its processes' CPU
# time): lanes never interleave. LANES=2 (the default) runs the plain
# suites in one lane, PLAIN1 then PLAIN2; LANES=3 the three lanes above
# (no faster: the timed lane, the longer here, is not split; and its
# load failed checks judged on a host's worst moments);
# LANES=1 every suite in one lane at the caller's priority, the plain ones
# first. tests/README.md says how long each takes here.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
unset T SUITE CASE # a filter is for one suite (tests/README.md): here every test runs
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top/tests/lib.sh"
start_all=$EPOCHREALTIME

# The lanes. Two things tie suites to one lane: tests/programs/common.sh's
# servers keep their files in build/legacy by name (legacy's and audit's
# java-echo, legacy's and watch's memcached), where its javac writes too
# (legacy, audit, watch, readme); and watch --fix's whole-host check
# (t_watch_fix.sh) fails on any socket whose TCP_NODELAY changes while it
# runs, as fix's and attach's clients' do.
TIMED1=(legacy audit wire watch cli-timed fix attach readme)
TIMED2=(integration coalesce auto stress metrics install image deb musl sanitize vm)
# The plain suites in two lanes, of about equal length here.
PLAIN1=(exports layers inventory unit cli man bounds security sanitize-plain difftest)
PLAIN2=(external wire-plain fuzz)
[[ -d tests/watch ]] || TIMED1=("${TIMED1[@]/watch/}")
# Builds of timed suites that judge no time, made first in the plain lane
# (tests/README.md: a suite's --prepare): when the timed lane reaches the
# suite, its own build finds them made (or waits on their lock).
PREPARE=(image deb musl)

# suite NAME: runs suite NAME's command.
suite() {
    case $1 in
    legacy) tests/legacy/run.sh nodelay coalesce auto quickack ;;
    install) tests/install/run.sh ;;
    difftest) make -s difftest ;;
    # wire's programs and its scripts of captures on file or modelled judge
    # no time (tests/wire/run.sh's WIRE_PART)
    wire) WIRE_PART=timed make -s test-wire ;;
    wire-plain) WIRE_PART=plain tests/wire/run.sh ;;
    # the command's functions but watch's stream, whose hold is a time
    # (tests/cli/run.sh's CLI_PART)
    cli) CLI_PART=plain make -s test-cli ;;
    cli-timed) CLI_PART=timed make -s test-cli ;;
    # sanitize's checks that judge a time (tests/sanitize/run.sh)
    sanitize) SANITIZE_PART=timed make -s test-sanitize ;;
    sanitize-plain) SANITIZE_PART=plain make -s test-sanitize ;;
    # Fuzzing here is a regression check, 5 s a target (FUZZ_TIME, if set,
    # wins): each target replays its committed seed corpus and what earlier
    # runs found (well under a second) and then searches on for some
    # ten thousand inputs (59,000-692,000 here), and its canary proves the run can fail. The
    # search itself, 60 s a target, is `make fuzz` (tests/README.md). An
    # input may take 60 s of wall, not make fuzz's 1 s: libFuzzer's limit
    # is wall time, and this lane may wait seconds for a CPU.
    fuzz) FUZZ_TIME="${FUZZ_TIME:-5}" FUZZ_INPUT_TIMEOUT="${FUZZ_INPUT_TIMEOUT:-60}" make -s fuzz ;;
    *) make -s "test-$1" ;;
    esac
}

# run_prepare NAME: runs suite NAME's --prepare, its output kept in a file
# and shown only if it failed (the suite's own build then says why again).
run_prepare() {
    local start=$EPOCHREALTIME out=$WORK/prepare-$1.out
    if tests/"$1"/run.sh --prepare >"$out" 2>&1 </dev/null; then
        echo "== prepare $1: $(elapsed "$start") s" >"$out"
    else
        echo "== prepare $1: failed in $(elapsed "$start") s" >>"$out"
    fi
    flock "$WORK/counts" cat "$out"
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/nfall.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# A python3 on PATH that is a version manager's shim (pyenv's: a bash
# script running `pyenv exec`, 0.5 s of CPU and a dozen processes a start
# here, and the suites start python3 thousands of times) is passed by:
# python3 and python, for the suites, are links to the interpreter the
# shim runs (the same version, the same packages), first on PATH.
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [[ -n $py && -x $py && $(type -P python3) != "$py" ]]; then
    mkdir -p "$WORK/bin" && ln -s "$py" "$WORK/bin/python3" && ln -s "$py" "$WORK/bin/python" &&
        PATH=$WORK/bin:$PATH
fi

# run_suite NAME: runs suite NAME as a part (lib.sh), its output held in a
# file; then prints that whole, and its closing line with its counts and
# seconds, while no other lane prints; its counts go to $WORK/counts.
run_suite() {
    local name=$1 start=$EPOCHREALTIME out=$WORK/$1.out before
    children_cpu
    before=$CPU
    part "$name" suite "$name" >"$out" 2>&1 </dev/null
    echo "== $name: $TALLY_PASSED passed, $TALLY_FAILED failed in $(elapsed "$start") s" >>"$out"
    children_cpu
    LC_ALL=C awk -v b="$before" -v a="$CPU" -v n="$name" 'BEGIN { split(b, x, " "); split(a, y, " ")
        printf "== cpu %s: %.1f s user, %.1f s sys\n", n, y[1] - x[1], y[2] - x[2] }' >>"$out"
    echo "$name $TALLY_PASSED $TALLY_FAILED" >>"$WORK/counts"
    flock "$WORK/counts" cat "$out"
}

# children_cpu: sets CPU to the user and system seconds ("U S") of this
# shell's children that ended (bash's times: in this shell, not in $()).
children_cpu() {
    local f=$WORK/times.$BASHPID
    times >"$f"
    CPU=$(LC_ALL=C awk 'NR == 2 { split($0, f, /[ms]+/); print f[1] * 60 + f[2], f[3] * 60 + f[4] }' "$f")
}

# lane NAME...: the suites NAME, one after another ("" is none).
lane() {
    local name
    for name in "$@"; do
        [[ -z $name ]] || run_suite "$name"
    done
}

# prerequisites: what the Makefile's test targets need built (their
# prerequisites, read from make's database, test targets left out).
prerequisites() {
    make -pq __nf_no_such_target__ 2>/dev/null |
        sed -n 's/^\(test-[a-z-]*\|difftest\|fuzz\): *\([^|]*\).*/\2/p' | tr ' ' '\n' |
        grep -v '^$\|^test-\|^difftest$\|^fuzz$\|^check$' | sort -u
}

lanes=${LANES:-2}
mapfile -t built < <(prerequisites)
start=$EPOCHREALTIME
if ! make -s -j"$(nproc 2>/dev/null || echo 2)" "${built[@]}" >"$WORK/build.out" 2>&1; then
    cat "$WORK/build.out"
    echo "note: the build failed: every suite in one lane, each building what it needs"
    lanes=1
fi
echo "== build: $(elapsed "$start") s"

# lower: this (sub)shell and what it starts under SCHED_IDLE (a task of
# any other policy that wakes takes the CPU from it at once; nice 19, if
# chrt cannot set it) and the lowest best-effort I/O priority; its Check
# programs' per-test timeouts (caps on a hang, 30-120 s) 4 times as long
# (CK_TIMEOUT_MULTIPLIER, if not set): such a lane may wait seconds for
# a CPU.
lower() {
    chrt -i -p 0 "$BASHPID" >/dev/null 2>&1 || renice -n 19 -p "$BASHPID" >/dev/null
    ionice -c 2 -n 7 -p "$BASHPID" 2>/dev/null
    export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-4}
    return 0
}

if ((lanes == 1)); then
    lane "${PLAIN1[@]}" "${PLAIN2[@]}" "${TIMED1[@]}" "${TIMED2[@]}"
else
    plain=("${PLAIN1[@]}")
    ((lanes == 2)) && plain+=("${PLAIN2[@]}")
    (
        lower
        for name in "${PREPARE[@]}"; do run_prepare "$name"; done
        lane "${plain[@]}"
    ) &
    others=("$!")
    if ((lanes > 2)); then
        (lower && lane "${PLAIN2[@]}") &
        others+=("$!")
    fi
    # in a subshell too: a suite's CPU is its shell's children's, which
    # would count a plain lane's subshell that ended meanwhile
    (lane "${TIMED1[@]}" "${TIMED2[@]}") &
    others+=("$!")
    wait "${others[@]}"
fi

# The totals are the suites' counts in $WORK/counts, each once (a lane
# run in this shell has added its own to PASSED and FAILED as it went).
PASSED=0 FAILED=0
for name in "${PLAIN1[@]}" "${PLAIN2[@]}" "${TIMED1[@]}" "${TIMED2[@]}"; do
    [[ -n $name ]] || continue
    if read -r _ p f < <(grep "^$name " "$WORK/counts" 2>/dev/null); then
        PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
    else
        fail "$name" "the suite did not run to its end"
    fi
done
children_cpu
LC_ALL=C awk -v a="$CPU" 'BEGIN { split(a, y, " "); printf "== cpu all: %.1f s user, %.1f s sys\n", y[1], y[2] }'
echo "== all: $(elapsed "$start_all") s"
finish
