#!/usr/bin/env bash
# run.sh - the security tests: a program in secure-execution mode (setuid,
# or granted file capabilities) ignores NAGLEFIX_MODE, NAGLEFIX_CONF and
# NAGLEFIX_LOG, while the same program without privilege obeys them; and
# the log never writes through a symlink. `make test-security` builds the
# probe first; this only runs.
#
# The probe (build/tests/security/sec_probe) links libnaglefix.so itself
# (DT_NEEDED, RUNPATH to build/): the loader ignores LD_PRELOAD in a setuid
# program, but loads what the program needs. It prints "secure=S nodelay=N
# euid=E uid=U" and "lib=libnaglefix.so" when the library is loaded.
# Setuid and setcap copies need root; without it, those checks say SKIP.
#
# Prints PASS/FAIL/SKIP per check and ends with "N passed, M failed".
# T=pattern runs only the checks whose name it matches (tests/lib.sh).
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd -P)
LIB=${NAGLEFIX_LIB:-$TOP/build/libnaglefix.so} # for the symlink checks
PROBE="$TOP/build/tests/security/sec_probe"
LIMIT=${SECTEST_TIMEOUT:-20}
NOBODY=65534
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
FAIL_TAIL=10

scratch_dir nfsec
chmod 755 "$TMP"
clean_env
need_built "make test-security" "$LIB" "$PROBE"
note_etc_conf "secure-mode copies read it, so their checks may fail"

printf 'default nodelay\n' >"$TMP/nodelay.conf"
chmod 644 "$TMP/nodelay.conf"

# probe NAME WANT [VAR=VALUE...] CMD...: runs CMD, which prints the probe's
# lines; passes iff its output has "lib=libnaglefix.so" and every
# space-separated key=value of WANT.
probe() {
    local name=$1 want=$2 out="$TMP/$1.out" kv
    shift 2
    selected "$name" || return 0
    if ! timeout -k 5 "$LIMIT" env "$@" >"$out" 2>&1; then
        fail "$name" "the probe failed" "$out"
        return
    fi
    if ! grep -qx 'lib=libnaglefix.so' "$out"; then
        fail "$name" "the library is not loaded in the probe: the check would prove nothing" "$out"
        return
    fi
    for kv in $want; do
        if ! grep -Eq "(^| )$kv( |$)" "$out"; then
            fail "$name" "want $kv, got: $(head -n 1 "$out")" "$out"
            return
        fi
    done
    pass "$name"
}

# ---- the probe itself ----------------------------------------------------------

if ! selected probe-links-library; then
    :
elif readelf -d "$PROBE" 2>/dev/null | grep -q 'NEEDED.*\[libnaglefix\.so\]'; then
    pass probe-links-library
else
    fail probe-links-library "$PROBE has no DT_NEEDED libnaglefix.so"
fi

# ---- without privilege, the environment applies (the controls) -----------------

probe plain-no-config        "secure=0 nodelay=0" "$PROBE"
probe plain-mode-nodelay     "secure=0 nodelay=1" NAGLEFIX_MODE=nodelay "$PROBE"
probe plain-conf-nodelay     "secure=0 nodelay=1" NAGLEFIX_CONF="$TMP/nodelay.conf" "$PROBE"

# ---- setuid: the environment is ignored ------------------------------------------

setuid_copy() { # PATH: a copy of the probe, owned by nobody, mode 4755
    cp "$PROBE" "$1" && chown "$NOBODY" "$1" && chmod 4755 "$1"
}
setcap_copy() { # PATH: a copy with a file capability
    cp "$PROBE" "$1" && setcap cap_net_bind_service+ep "$1" 2>/dev/null
}

if ((EUID != 0)); then
    skip setuid "not root: cannot make a setuid copy owned by another user"
elif ! setuid_copy "$TMP/probe-setuid"; then
    fail setuid "cannot make the setuid copy"
else
    "$TMP/probe-setuid" >"$TMP/secure-check.out" 2>&1
    if ! grep -q '^secure=1 ' "$TMP/secure-check.out"; then
        skip setuid "the setuid copy does not run in secure mode ($(head -n 1 "$TMP/secure-check.out")): nosuid mount?"
    else
        probe setuid-mode-ignored    "secure=1 nodelay=0 euid=$NOBODY uid=0" \
            NAGLEFIX_MODE=nodelay "$TMP/probe-setuid"
        probe setuid-conf-ignored    "secure=1 nodelay=0 euid=$NOBODY uid=0" \
            NAGLEFIX_CONF="$TMP/nodelay.conf" "$TMP/probe-setuid"
        probe setuid-both-ignored    "secure=1 nodelay=0 euid=$NOBODY uid=0" \
            NAGLEFIX_MODE=nodelay NAGLEFIX_CONF="$TMP/nodelay.conf" "$TMP/probe-setuid"
        # NAGLEFIX_LOG is ignored too: a bad mode would log one line.
        selected setuid-log-ignored && timeout "$LIMIT" env NAGLEFIX_MODE=fastest NAGLEFIX_LOG="$TMP/secure.log" \
            "$TMP/probe-setuid" >"$TMP/setuid-log.out" 2>&1
        selected setuid-log-ignored && timeout "$LIMIT" env NAGLEFIX_MODE=fastest \
            NAGLEFIX_LOG="$TMP/plain.log" "$PROBE" >"$TMP/plain-log.out" 2>&1
        if ! selected setuid-log-ignored; then
            :
        elif [[ ! -s $TMP/plain.log ]]; then
            fail setuid-log-ignored "the control (no setuid) wrote no log: the check proves nothing"
        elif [[ -e $TMP/secure.log ]]; then
            fail setuid-log-ignored "the setuid copy wrote NAGLEFIX_LOG" "$TMP/secure.log"
        elif [[ -s $TMP/setuid-log.out ]] && grep -q "^naglefix:" "$TMP/setuid-log.out"; then
            fail setuid-log-ignored "the setuid copy read NAGLEFIX_MODE" "$TMP/setuid-log.out"
        else
            pass setuid-log-ignored
        fi
    fi
fi

# ---- file capabilities: the same, for a user that gains a capability ------------

AS_NOBODY=(setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups)
if ((EUID != 0)); then
    skip setcap "not root"
elif ! command -v setcap >/dev/null || ! command -v setpriv >/dev/null; then
    skip setcap "setcap or setpriv is not installed"
elif ! setcap_copy "$TMP/probe-setcap"; then
    skip setcap "setcap failed (no file capabilities on this file system?)"
else
    probe nobody-mode-nodelay    "secure=0 nodelay=1 euid=$NOBODY" \
        NAGLEFIX_MODE=nodelay "${AS_NOBODY[@]}" "$PROBE"
    probe setcap-mode-ignored    "secure=1 nodelay=0 euid=$NOBODY" \
        NAGLEFIX_MODE=nodelay NAGLEFIX_CONF="$TMP/nodelay.conf" "${AS_NOBODY[@]}" "$TMP/probe-setcap"
fi

# ---- the log never writes through a symlink ---------------------------------------

# log_run NAME LOGPATH: a program under the library with a bad mode, which
# logs exactly one line to LOGPATH.
log_run() {
    timeout -k 5 "$LIMIT" env LD_PRELOAD="$LIB" NAGLEFIX_MODE=fastest NAGLEFIX_LOG="$2" \
        /bin/true >"$TMP/$1.out" 2>&1
}

log_run log-regular "$TMP/regular.log"
if ! selected log-regular-file-written; then
    :
elif grep -q "NAGLEFIX_MODE: unknown action 'fastest'" "$TMP/regular.log" 2>/dev/null; then
    pass log-regular-file-written
else
    fail log-regular-file-written "no message in the log: the symlink checks would prove nothing" \
        "$TMP/log-regular.out"
fi

printf 'original\n' >"$TMP/target.log"
ln -s "$TMP/target.log" "$TMP/link.log"
log_run log-symlink "$TMP/link.log"
if ! selected log-symlink-target-unchanged; then
    :
elif [[ $(cat "$TMP/target.log") != original ]]; then
    fail log-symlink-target-unchanged "the file behind the symlink was written" "$TMP/target.log"
elif ! grep -q "cannot write log $TMP/link.log" "$TMP/log-symlink.out"; then
    fail log-symlink-target-unchanged "no 'cannot write log' on stderr" "$TMP/log-symlink.out"
else
    pass log-symlink-target-unchanged
fi

ln -s "$TMP/created.log" "$TMP/dangling.log"
log_run log-dangling "$TMP/dangling.log"
if ! selected log-dangling-symlink-not-followed; then
    :
elif [[ -e $TMP/created.log ]]; then
    fail log-dangling-symlink-not-followed "the symlink's target was created" "$TMP/created.log"
else
    pass log-dangling-symlink-not-followed
fi

finish
