#!/usr/bin/env bash
# run.sh - fuzzes the config parser, the endpoint matcher, the capture
# readers with the frame decoder, the metrics endpoint's request
# reader and the reader of the kernel's route messages (`make fuzz`).
#
# Builds the libFuzzer targets fuzz_parse.c and fuzz_match.c against
# src/common/policy.c, fuzz_cap.c against src/wire/cap.c, pcap.c, pcapng.c
# (and feed.c, held against the plain path, with the table it prepares for)
# and decode.c, fuzz_request.c against src/metrics/request.c, and
# fuzz_route.c against src/route/msg.c, with
# clang (-fsanitize=fuzzer,address,undefined, UB fatal)
# into build/fuzz/ (each source compiled once a run into build/fuzz/obj/,
# the objects shared by the targets and their canaries), then runs each for FUZZ_TIME seconds (default 60; 5 in
# `make test`, tests/run-all.sh) on top of
# its committed seed corpus tests/fuzz/corpus/TARGET/ (read only: what the
# run finds goes to build/fuzz/corpus/TARGET/, kept between runs). A target
# passes iff it ran to the end without a crash, a leak, a timeout or an
# out-of-memory; the input that broke it is build/fuzz/artifacts/TARGET-*,
# to be turned into a unit test in tests/unit/check_policy.c
# (test_policy_fuzz_WHAT) or tests/wire/check_cap.c / check_decode.c once
# the bug is understood.
#
# Before that, fuzz-canary-TARGET proves the run can fail: the same target
# built from a copy of its source (src/common/policy.c; src/wire/pcapng.c for cap;
# src/metrics/request.c for request; src/route/msg.c for route)
# with a heap overflow injected where the seed corpus reaches it must
# crash within CANARY_RUNS inputs (a count, not a time: the seeds that
# reach it are replayed first), within 600 s of wall.
#
# Prints "PASS name" or "FAIL name: why", ends with "N passed, M failed";
# exit status 0 iff nothing failed. Env: FUZZ_TIME, FUZZ_INPUT_TIMEOUT
# (seconds of wall one input may take, default 1: libFuzzer's -timeout is
# wall time, so a run kept off the CPU needs more; tests/run-all.sh gives
# 60), FUZZ_CC (clang), WERROR
# (as make's: empty, warnings are not errors; fuzz-werror-* prove it), T
# (tests/lib.sh: the checks whose name it matches, and only their builds).
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P)
cd "$TOP" || exit 2

CC=${FUZZ_CC:-clang}
TIME=${FUZZ_TIME:-60}
INPUT_TIMEOUT=${FUZZ_INPUT_TIMEOUT:-1}
CANARY_RUNS=100000
B="$TOP/build/fuzz"
# shellcheck disable=SC2054 # the commas are clang's
FLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra ${WERROR--Werror} -D_GNU_SOURCE -iquote src -Iinclude)
TARGETS=(parse match cap request route)

# defines TARGET: its own compiler flags. The capture reader's buffer is
# 64 KiB, not 4 MiB: ASan's poisoning of 4 MiB a run made the target 30
# times slower, and small inputs then reach the read-through of blocks
# longer than the buffer.
defines() {
    [[ $1 == cap ]] && echo -DNF_CAP_BUF=65536
}

# sources TARGET: the sources a target links, the one the canary copies first.
sources() {
    if [[ $1 == cap ]]; then
        echo src/wire/pcapng.c src/wire/cap.c src/wire/pcap.c src/wire/decode.c src/wire/feed.c \
            src/wire/table.c src/wire/index.c src/wire/holder.c
    elif [[ $1 == request ]]; then
        echo src/metrics/request.c
    elif [[ $1 == route ]]; then
        echo src/route/msg.c
    else
        echo src/common/policy.c
    fi
}

# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
# fail NAME WHY [LOG]: reports a failure with the report's lines of LOG.
fail() {
    echo "FAIL $1: $2"
    [[ -n ${3:-} && -s ${3:-} ]] &&
        grep -E -A12 '^==[0-9]+==ERROR|runtime error|contract broken|^SUMMARY|Test unit written' "$3" |
        head -n 40 | sed 's/^/    /'
    FAILED=$((FAILED + 1))
}

command -v "$CC" >/dev/null 2>&1 || {
    echo "run.sh: $CC is not installed: run tests/install-deps.sh" >&2
    exit 2
}
unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
mkdir -p "$B/artifacts" "$B/logs"

# fuzz NAME BINARY TARGET LIMIT: runs BINARY on the corpus found so far
# (build/fuzz/corpus/NAME/, where new inputs go) and TARGET's seeds, for
# LIMIT: SECONDS of wall, or "runs=N" inputs (within 600 s of wall); sets
# RC and LOG.
fuzz() {
    local name=$1 bin=$2 target=$3 limit=(-"$4") cap=600 work="$B/corpus/$1" dict=$HERE/policy.dict
    [[ $4 == runs=* ]] || limit=(-max_total_time="$4") cap=$(($4 + 120))
    [[ $target == cap ]] && dict=$HERE/cap.dict
    [[ $target == request ]] && dict=$HERE/request.dict
    [[ $target == route ]] && dict=$HERE/route.dict
    LOG="$B/logs/$name.log"
    mkdir -p "$work"
    rm -f "$B/artifacts/$name-"*
    # -timeout: no input may take INPUT_TIMEOUT s; -rss_limit_mb: nor eat the machine.
    timeout -k 10 "$cap" "$bin" "${limit[@]}" -timeout="$INPUT_TIMEOUT" -rss_limit_mb=2048 \
        -dict="$dict" -print_final_stats=1 -artifact_prefix="$B/artifacts/$name-" \
        "$work" "$HERE/corpus/$target" >"$LOG" 2>&1
    RC=$?
}

# The copy of src/common/policy.c with a write past a heap block where the seeds
# go: in nf_policy_parse_endpoint for a bracketed endpoint ("[::1]:80"), in
# nf_policy_match for a full-sized IPv6 address; of src/wire/pcapng.c, in
# read_epb for an enhanced packet block of a big-endian section; of
# src/metrics/request.c, in nf_req_parse for a head whose request line
# is whole; of src/route/msg.c, in nf_route_parse for a message with
# attributes.
canary_source() {
    local target=$1 fn code src
    src=$(sources "$target")
    src=${src%% *}
    if [[ $target == cap ]]; then
        fn=read_epb
        code='if (c->be) { char *volatile nf_c = __builtin_malloc(4); nf_c[4] = 1; __builtin_free(nf_c); }'
    elif [[ $target == request ]]; then
        fn=nf_req_parse
        code='if (memchr(buf, 10, len)) { char *volatile nf_c = __builtin_malloc(4); nf_c[4] = 1; __builtin_free(nf_c); }'
    elif [[ $target == route ]]; then
        fn=nf_route_parse
        code='if (len > 40) { char *volatile nf_c = __builtin_malloc(4); nf_c[4] = 1; __builtin_free(nf_c); }'
    elif [[ $target == parse ]]; then
        fn=nf_policy_parse_endpoint
        code='if (s[0] == '"'['"') { char *volatile nf_c = malloc(4); nf_c[4] = 1; free(nf_c); }'
    else
        fn=nf_policy_match
        code='if (sa && salen == (socklen_t)sizeof(struct sockaddr_in6)) { char *volatile nf_c = malloc(4); nf_c[4] = 1; free(nf_c); }'
    fi
    awk -v fn="$fn" -v code="$code" '
        !done && $0 !~ /^[ \t]/ && index($0, fn "(") > 0 && $0 !~ /;[ \t]*$/ { infn = 1 }
        { print }
        infn && !done && $0 == "{" { print code; done = 1 }
        END { exit !done }' "$src" >"$B/canary-$target.c"
}

# fuzz-werror: WERROR= (empty) takes -Werror off every compile line, as
# make's does, and without WERROR it is on. Proved on this script itself,
# run again with a compiler that only records its arguments and fails (so
# nothing is built or fuzzed): NF_FUZZ_INNER marks that run.
werror_lines() { # WITH-ARGS... : how many recorded lines, and with -Werror
    local rec=$B/cc-args stub=$B/cc-stub
    printf '#!/bin/sh\necho "$*" >>"%s"\nexit 1\n' "$rec" >"$stub" && chmod +x "$stub" || return 1
    rm -f "$rec"
    env -u T "$@" NF_FUZZ_INNER=1 FUZZ_CC="$stub" FUZZ_TIME=1 "$HERE/run.sh" >/dev/null 2>&1
    awk '{ n++; for (i = 1; i <= NF; i++) if ($i == "-Werror") { w++; break } }
         END { print n + 0, w + 0 }' "$rec" 2>/dev/null || echo "0 0"
}
if [[ -z ${NF_FUZZ_INNER:-} ]] && any_selected fuzz-werror-default fuzz-werror-empty; then
    read -r n w <<<"$(werror_lines -u WERROR)"
    if ! selected fuzz-werror-default; then
        :
    elif ((n > 0 && w == n)); then pass "fuzz-werror-default (-Werror on all $n compile lines)"
    else fail "fuzz-werror-default" "-Werror on $w of $n compile lines without WERROR"; fi
    read -r n w <<<"$(werror_lines WERROR=)"
    if ! selected fuzz-werror-empty; then
        :
    elif ((n > 0 && w == 0)); then pass "fuzz-werror-empty (WERROR=: on none of $n compile lines)"
    else fail "fuzz-werror-empty" "WERROR=: -Werror still on $w of $n compile lines"; fi
    rm -f "$B/cc-args" "$B/cc-stub"
fi

# obj SOURCE TARGET LOG [FLAG...]: compiles SOURCE with TARGET's defines
# and FLAGs into an object under build/fuzz/obj/ (once a run: a target and
# its canary, parse and match, share theirs) and sets OBJ to it. Its
# messages go to build/fuzz/logs/LOG.log.
declare -A BUILT
obj() {
    local src=$1 t=$2 log=$B/logs/$3.log defs o
    shift 3
    read -r -a defs <<<"$(defines "$t")"
    o=${defs[*]:-plain}
    o=$B/obj/${o//[^A-Za-z0-9_=.]/_}/${src#"$TOP"/}.o
    OBJ=$o
    [[ -n ${BUILT[$o]:-} ]] && return 0
    mkdir -p "${o%/*}" &&
        "$CC" "${FLAGS[@]}" "${defs[@]}" "$@" -c -o "$o" "$src" >>"$log" 2>&1 &&
        BUILT[$o]=1
}

# objs TARGET SOURCE...: the objects of SOURCEs (obj), in OBJS; status 1 if
# one did not compile.
objs() {
    local t=$1 s
    shift
    OBJS=()
    for s in "$@"; do
        obj "$s" "$t" "build-$t" || return 1
        OBJS+=("$OBJ")
    done
}

for t in "${TARGETS[@]}"; do
    any_selected "fuzz-canary-$t" "fuzz_$t" || continue
    read -r -a srcs <<<"$(sources "$t")"
    : >"$B/logs/build-$t.log"
    if ! objs "$t" "$HERE/fuzz_$t.c" "${srcs[@]}" ||
        ! "$CC" "${FLAGS[@]}" -o "$B/fuzz_$t" "${OBJS[@]}" >>"$B/logs/build-$t.log" 2>&1; then
        fail "build-fuzz_$t" "cannot build" "$B/logs/build-$t.log"
        sed 's/^/    /' "$B/logs/build-$t.log" | head -n 20
        continue
    fi
    # the canary: the harness and the same objects, but the first source's
    # copy with its fault
    harness=${OBJS[0]} rest=("${OBJS[@]:2}")
    : >"$B/logs/build-canary-$t.log"
    if ! selected "fuzz-canary-$t"; then
        :
    elif ! canary_source "$t"; then
        fail "fuzz-canary-$t" "cannot inject the fault into a copy of ${srcs[0]}"
    elif ! obj "$B/canary-$t.c" "$t" "build-canary-$t" -I"${srcs[0]%/*}" ||
        ! "$CC" "${FLAGS[@]}" -o "$B/canary_$t" "$harness" "$OBJ" "${rest[@]}" \
            >>"$B/logs/build-canary-$t.log" 2>&1; then
        fail "fuzz-canary-$t" "cannot build the canary" "$B/logs/build-canary-$t.log"
    else
        rm -rf "$B/corpus/canary-$t"
        fuzz "canary-$t" "$B/canary_$t" "$t" "runs=$CANARY_RUNS"
        if ((RC != 0)) && grep -q 'heap-buffer-overflow' "$LOG" && compgen -G "$B/artifacts/canary-$t-crash-*" >/dev/null; then
            pass "fuzz-canary-$t (the injected overflow was found)"
        else
            fail "fuzz-canary-$t" "the injected overflow went unnoticed (exit status $RC)" "$LOG"
        fi
        rm -rf "$B/corpus/canary-$t"
    fi
    selected "fuzz_$t" || continue
    fuzz "fuzz_$t" "$B/fuzz_$t" "$t" "$TIME"
    stats=$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE[[:space:]]*cov: \([0-9]*\).*corp: \([0-9]*\).*/\1 runs, coverage \2, corpus \3/p' "$LOG")
    if ((RC == 0)) && ! compgen -G "$B/artifacts/fuzz_$t-*" >/dev/null; then
        pass "fuzz_$t ($TIME s: ${stats:-no stats})"
    else
        fail "fuzz_$t" "exit status $RC; input in $(compgen -G "$B/artifacts/fuzz_$t-*" | head -n 1)" "$LOG"
    fi
done

finish
