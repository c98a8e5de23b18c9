#!/usr/bin/env bash
# run.sh - the OCI image and the Kubernetes manifests (make test-image):
# `make image` builds the image under a name of the suite's own
# (localhost/naglefix-test<PID>), which podman (Debian's, runc: crun
# refuses hybrid cgroups) runs against this host as naglefix(1) says:
# the host's PID and network namespaces, its cgroups (/sys/fs/cgroup at
# /host/cgroup) and /run/netns mounted, --cap-drop ALL and the
# capabilities measured added. Root only; the cgroups, the network
# namespace, the containers, the pod and the image are the suite's own,
# all removed at the end, on failure too.
#
# Checks (T=name selects):
#   image-build          make image: an image of one layer (FROM scratch,
#                        --pull=never), under 4 MB, holding the command
#                        (static) and the library
#   image-library        the image's library preloaded into a host client
#                        (-m nodelay): its split writes under 5 ms
#   image-watch-pid      the container's watch names a host client's stall
#                        with its pid and its cgroup (made here)
#   image-watch-netns    ... and a client's in a network namespace made
#                        here, by the namespace's name and the client's pid
#   image-metrics        its metrics endpoint serves that client's series
#   image-attach         attach --cgroup from the container: bpftool shows
#                        the program on the host's cgroup; a static client
#                        started in it: median under 5 ms (outside: 40 ms)
#   image-detach         detach from the container: bpftool shows nothing
#   image-caps-*         each capability the run lines add is needed:
#                        without it, the command it serves fails
#   image-kube-play      the DaemonSet's pod (manifests.py pod) played by
#                        `podman kube play`, serving naglefix_ metrics on
#                        the host's loopback, with exactly its capabilities
#   image-manifests      conf/kubernetes checked (manifests.py check): the
#                        image make image names, the measured capabilities,
#                        ports, annotations, requests and limits
#   image-manifests-fails-*  the check fails on a manifest broken on purpose
#   image-doc-run-line   naglefix(1)'s run lines add the measured capabilities
# Ends with "N passed, M failed".
#
# run.sh --prepare: only the image's static command linked (make
# build/static/naglefix, niced; no check, no root needed), the one part of
# make image no check times nor names: a lane of its own may run it before
# or beside the suite (both take build/static/.lock).
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
if [[ ${1:-} == --prepare ]]; then
    nice -n 19 make -s -C "$TOP" build/static/naglefix
    exit
fi
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$HERE/../lib.sh"
clean_env
cd "$TOP" || exit 2
NF=$TOP/build/naglefix
need_built "make test-image" "$NF"
W=$TOP/build/tests/image
rm -rf "$W"
mkdir -p "$W"

# The capabilities measured (naglefix(1), CONTAINERS; the manifests):
# watch: packet sockets, /proc/PID/fd and PID 2's namespace, setns;
# attach and detach: bpf(2) and the probe cgroup attach makes.
WATCH_CAPS=NET_RAW,SYS_ADMIN,SYS_PTRACE
ATTACH_CAPS=SYS_ADMIN,DAC_OVERRIDE

if [[ $EUID -ne 0 ]]; then
    skip image "needs root (podman, cgroups, bpf)"
    finish
    exit
fi
for tool in podman runc bpftool curl ip python3; do
    command -v "$tool" >/dev/null || { fail image "no $tool: run tests/install-deps.sh"; finish; exit; }
done
python3 -c 'import yaml' 2>/dev/null || { fail image "no python3 yaml: run tests/install-deps.sh"; finish; exit; }
ROOT=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break; if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; exit } }' /proc/self/mountinfo)
[[ -n $ROOT ]] || { skip image "no cgroup2 hierarchy mounted"; finish; exit; }

IMAGE=localhost/naglefix-test$$:$(make -s image-name | sed 's/.*://')
CGW=$ROOT/nfimg$$.watch # the watched client's cgroup
CGA=$ROOT/nfimg$$.attach
NS=nfimg$$
CTR=nfimg$$-watch
POD=nfimg$$-pod
# podman's own rlimits, above this host's, would need CAP_SYS_RESOURCE; runc
export CONTAINERS_CONF=$W/containers.conf
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n[engine]\nruntime = "runc"\n' \
    >"$CONTAINERS_CONF"
PIDS=()
built=0
played=0
teardown() {
    local p d
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    pkill -KILL -P $$ -x sleep # the servers' stdin holders: wait would wait for them
    wait "${PIDS[@]}" 2>/dev/null
    podman rm -f "$CTR" >/dev/null 2>&1
    ((played)) && podman kube down "$W/pod.yaml" >/dev/null 2>&1
    ((built)) && podman rmi -f "$IMAGE" >/dev/null 2>&1
    for d in "$CGW" "$CGA"; do
        [[ -d $d ]] || continue
        "$NF" detach --cgroup "$d" >/dev/null 2>&1
        while read -r p; do echo "$p" >"$ROOT/cgroup.procs"; done <"$d/cgroup.procs" 2>/dev/null
        rmdir "$d" 2>/dev/null
    done
    ip netns del "$NS" 2>/dev/null
}
trap teardown EXIT
trap 'exit 130' INT TERM

# ---- helpers -------------------------------------------------------------

# run_ctr CAPS ARGS...: the image, run once as naglefix(1) says, with
# --cap-drop ALL and CAPS added (none if empty).
run_ctr() {
    local caps=$1
    shift
    timeout 60 podman run --rm --pid host --network host --cgroupns host \
        -v /sys/fs/cgroup:/host/cgroup -v /run/netns:/run/netns:ro,rslave \
        --cap-drop ALL ${caps:+--cap-add "$caps"} "$IMAGE" "$@"
}

# in_cg DIR CMD...: CMD in the background, in the cgroup DIR from its
# start; its pid in BG.
in_cg() {
    local dir=$1
    shift
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' in_cg "$dir" "$@" &
    BG=$!
    PIDS+=("$BG")
}

# server NAME PROGRAM [NETNS]: a server (tests/fix/echo_server.py, line
# echo; tests/programs/legacy_server.py, "ok" to 200 bytes) on 127.0.0.1
# (in NETNS), its port in PORT.
server() {
    local name=$1 prog=$2
    sleep 300 2>/dev/null | ${3:+ip netns exec "$3"} python3 "$TOP/tests/$prog" "$([[ $prog == *echo* ]] && echo 127.0.0.1 || echo 0)" 300 \
        >"$W/$name.port" 2>&1 &
    PIDS+=($!)
    wait_until 5 grep -qs '^PORT ' "$W/$name.port"
    PORT=$(sed -n 's/^PORT //p' "$W/$name.port")
}

# median_of FILE: the "median_ms=" of a client's last line, or NA.
median_of() {
    local m
    m=$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' "$1" | tail -n 1)
    echo "${m:-NA}"
}

below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a ~ /^[0-9.]+$/ && a + 0 < b) }'; }
atleast() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a ~ /^[0-9.]+$/ && a + 0 >= b) }'; }

# free_port: a TCP port free on 127.0.0.1 just now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- the image -------------------------------------------------------------

if nice -n 19 make -s image IMAGE="$IMAGE" >"$W/build.out" 2>&1 && podman image exists "$IMAGE"; then
    built=1
else
    fail image-build "make image IMAGE=$IMAGE" "$W/build.out"
    finish
    exit
fi
size=$(podman image inspect -f '{{.Size}}' "$IMAGE")
layers=$(podman image inspect -f '{{len .RootFS.Layers}}' "$IMAGE")
podman create --name "$CTR-x" "$IMAGE" >/dev/null && podman export "$CTR-x" >"$W/image.tar"
podman rm -f "$CTR-x" >/dev/null 2>&1
mkdir -p "$W/image" && tar -xf "$W/image.tar" -C "$W/image" 2>/dev/null
if selected image-build; then
    kind=$(file -b "$W/image/usr/bin/naglefix" 2>&1)
    if [[ $layers == 1 && $size -lt 4000000 && $kind == *"statically linked"* &&
        -f $W/image/usr/lib/naglefix/libnaglefix.so ]]; then
        pass "image-build: $IMAGE, $size bytes, $layers layer, the command static and the library"
    else
        fail image-build "$size bytes, $layers layers, naglefix: $kind; $(tar -tf "$W/image.tar" | tr '\n' ' ')"
    fi
fi

# the split-writing client (Nagle on, no setsockopt of its own), static
cc -static -O2 -o "$W/split_client" tests/programs/split_client.c 2>"$W/cc.err" ||
    { fail image "cc -static split_client.c" "$W/cc.err"; finish; exit; }
CLIENT=$W/split_client
server host fix/echo_server.py
PORT_HOST=$PORT
timeout 60 "$CLIENT" 127.0.0.1 "$PORT_HOST" 13 >"$W/bare-client.out" 2>&1
base_ms=$(median_of "$W/bare-client.out")
if selected image-library; then
    server legacy programs/legacy_server.py
    timeout 60 python3 tests/programs/legacy_client.py 127.0.0.1 "$PORT" 13 split >"$W/lib-bare.out" 2>&1
    LD_PRELOAD=$W/image/usr/lib/naglefix/libnaglefix.so NAGLEFIX_MODE=nodelay timeout 60 \
        python3 tests/programs/legacy_client.py 127.0.0.1 "$PORT" 13 split >"$W/lib.out" 2>&1
    lib_ms=$(median_of "$W/lib.out") lib_bare=$(median_of "$W/lib-bare.out")
    if below "$lib_ms" 5 && atleast "$lib_bare" 30; then
        pass "image-library: the image's library preloaded (-m nodelay): median $lib_ms ms (bare: $lib_bare ms)"
    else
        fail image-library "median $lib_ms ms, want < 5; bare $lib_bare ms, want >= 30" "$W/lib.out"
    fi
fi

# ---- watch in the container, a client on the host and one in a namespace
mkdir "$CGW" "$CGA"
ip netns add "$NS" && ip -n "$NS" link set lo up
server ns fix/echo_server.py "$NS"
PORT_NS=$PORT
MPORT=$(free_port)
podman run -d --name "$CTR" --pid host --network host --cgroupns host \
    -v /sys/fs/cgroup:/host/cgroup:ro -v /run/netns:/run/netns:ro,rslave \
    --cap-drop ALL --cap-add "$WATCH_CAPS" "$IMAGE" watch --json --metrics "127.0.0.1:$MPORT" \
    >"$W/ctr.id" 2>"$W/ctr.err" || fail image-watch "podman run" "$W/ctr.err"
wait_until 20 curl -sf "http://127.0.0.1:$MPORT/metrics" -o /dev/null
in_cg "$CGW" "$CLIENT" 127.0.0.1 "$PORT_HOST" 2000 >"$W/host-client.out"
CL=$BG
ip netns exec "$NS" "$CLIENT" 127.0.0.1 "$PORT_NS" 2000 >"$W/ns-client.out" &
CLN=$!
PIDS+=("$CLN")
stalls() { podman logs "$CTR" 2>/dev/null | grep '"event":"wire_stall"' >"$W/watch.log"; }
named() { stalls && grep -q "\"pid\":$CL," "$W/watch.log" && grep -q "\"pid\":$CLN," "$W/watch.log"; }
wait_until 20 named
curl -s "http://127.0.0.1:$MPORT/metrics" >"$W/metrics.out"
podman logs "$CTR" >"$W/watch.out" 2>&1
if selected image-watch-pid; then
    got=$(jq -r --argjson p "$CL" 'select(.pid == $p) | "\(.cgroup) \(.netns)"' "$W/watch.log" 2>/dev/null | sort -u)
    if [[ $got == "/${CGW##*/} host" ]]; then
        pass "image-watch-pid: the host client's stall named by the container: pid $CL, cgroup /${CGW##*/}, netns host"
    else
        fail image-watch-pid "pid $CL: '$got', want '/${CGW##*/} host'" "$W/watch.out"
    fi
fi
if selected image-watch-netns; then
    got=$(jq -r --argjson p "$CLN" 'select(.pid == $p) | .netns' "$W/watch.log" 2>/dev/null | sort -u)
    if [[ $got == "$NS" ]]; then
        pass "image-watch-netns: a client in the namespace $NS named: pid $CLN"
    else
        fail image-watch-netns "pid $CLN: netns '$got', want $NS" "$W/watch.out"
    fi
fi
if selected image-metrics; then
    if grep -qE "^naglefix_stalls_total\{.*cgroup=\"/${CGW##*/}\".*peer=\"127.0.0.1:$PORT_HOST\".*\} [1-9]" "$W/metrics.out"; then
        pass "image-metrics: naglefix_stalls_total of the host client at 127.0.0.1:$MPORT"
    else
        fail image-metrics "no naglefix_stalls_total series of cgroup /${CGW##*/}" "$W/metrics.out"
    fi
fi

# ---- attach and detach from the container, on a cgroup of the host's
run_ctr "$ATTACH_CAPS" attach -m nodelay --cgroup "${CGA##*/}" >"$W/attach.out" 2>&1
attach_rc=$?
bpftool cgroup show "$CGA" >"$W/bpftool-attached.out" 2>&1
in_cg "$CGA" "$CLIENT" 127.0.0.1 "$PORT_HOST" 13 >"$W/attached-client.out"
wait "$BG"
att_ms=$(median_of "$W/attached-client.out")
if selected image-attach; then
    if [[ $attach_rc == 0 ]] && grep -q sock_ops "$W/bpftool-attached.out" && below "$att_ms" 5 &&
        atleast "$base_ms" 30; then
        pass "image-attach: the host's cgroup ${CGA##*/} attached from the container: a static client in it $att_ms ms median (outside: $base_ms ms)"
    else
        fail image-attach "exit $attach_rc; bpftool: $(tr '\n' ' ' <"$W/bpftool-attached.out"); median $att_ms ms (want < 5), outside $base_ms ms (want >= 30)" "$W/attach.out"
    fi
fi
run_ctr "$ATTACH_CAPS" detach --cgroup "${CGA##*/}" >"$W/detach.out" 2>&1
detach_rc=$?
bpftool cgroup show "$CGA" >"$W/bpftool-detached.out" 2>&1
if selected image-detach; then
    if [[ $detach_rc == 0 && $attach_rc == 0 ]] && grep -q "taken off" "$W/detach.out" &&
        ! grep -q sock_ops "$W/bpftool-detached.out"; then
        pass "image-detach: detach from the container, bpftool shows nothing on ${CGA##*/}"
    else
        fail image-detach "exit $detach_rc; bpftool: $(tr '\n' ' ' <"$W/bpftool-detached.out")" "$W/detach.out"
    fi
fi

# ---- each capability needed: the command it serves, without it
# without CAP: the caps of SET but CAP
without() { tr ',' '\n' <<<"$2" | grep -vx "$1" | paste -sd, -; }
# watch_names CAPS WANT: watch -t 3 with CAPS; does it name pid WANT?
watch_names() {
    run_ctr "$1" watch -t 3 --json >"$W/caps-watch.out" 2>&1
    grep '"event":"wire_stall"' "$W/caps-watch.out" | grep -q "\"pid\":$2,"
}
if selected image-caps-NET_RAW; then
    run_ctr "$(without NET_RAW "$WATCH_CAPS")" watch -t 1 >"$W/caps.out" 2>&1
    rc=$?
    if [[ $rc != 0 ]] && watch_names "$WATCH_CAPS" "$CL"; then
        pass "image-caps-NET_RAW: watch without it: exit $rc; with it: names pid $CL"
    else
        fail image-caps-NET_RAW "without it: exit $rc; with it, pid $CL named?" "$W/caps.out"
    fi
fi
if selected image-caps-SYS_PTRACE; then
    if ! watch_names "$(without SYS_PTRACE "$WATCH_CAPS")" "$CL" && watch_names "$WATCH_CAPS" "$CL"; then
        pass "image-caps-SYS_PTRACE: watch without it names no pid"
    else
        fail image-caps-SYS_PTRACE "watch without it names pid $CL, or with it does not" "$W/caps-watch.out"
    fi
fi
if selected image-caps-SYS_ADMIN; then
    run_ctr "$(without SYS_ADMIN "$ATTACH_CAPS")" attach -m nodelay --cgroup "${CGA##*/}" >"$W/caps.out" 2>&1
    rc=$?
    if ! watch_names "$(without SYS_ADMIN "$WATCH_CAPS")" "$CLN" && [[ $rc == 2 ]] &&
        ! bpftool cgroup show "$CGA" | grep -q sock_ops; then
        pass "image-caps-SYS_ADMIN: without it watch misses $NS's client and attach exits 2"
    else
        fail image-caps-SYS_ADMIN "watch named pid $CLN, or attach exit $rc (want 2)" "$W/caps.out"
    fi
fi
if selected image-caps-DAC_OVERRIDE; then
    run_ctr "$(without DAC_OVERRIDE "$ATTACH_CAPS")" attach -m nodelay --cgroup "${CGA##*/}" >"$W/caps.out" 2>&1
    rc=$?
    if [[ $rc == 2 ]] && ! bpftool cgroup show "$CGA" | grep -q sock_ops; then
        pass "image-caps-DAC_OVERRIDE: attach without it exits 2, nothing attached"
    else
        fail image-caps-DAC_OVERRIDE "attach exit $rc (want 2)" "$W/caps.out"
    fi
fi
podman rm -f "$CTR" >/dev/null 2>&1

# ---- the DaemonSet's pod, played
KPORT=$(free_port)
if selected image-kube-play; then
    python3 "$HERE/manifests.py" pod conf/kubernetes/daemonset.yaml "$IMAGE" "$KPORT" "$POD" >"$W/pod.yaml"
    played=1
    timeout 120 podman kube play "$W/pod.yaml" >"$W/play.out" 2>&1
    rc=$?
    wait_until 20 curl -sf "http://127.0.0.1:$KPORT/metrics" -o "$W/pod-metrics.out"
    caps=$(podman inspect -f '{{join .EffectiveCaps ","}}' "$POD-watch" 2>/dev/null |
        tr ',' '\n' | sed 's/^CAP_//' | sort | paste -sd, -)
    # what conf/kubernetes/attach/job.yaml says of kubectl exec: attach --list in it
    timeout 30 podman exec "$POD-watch" /usr/bin/naglefix attach --list >"$W/pod-list.out" 2>&1
    list_rc=$?
    if [[ $rc == 0 ]] && grep -q '^# TYPE naglefix_' "$W/pod-metrics.out" 2>/dev/null &&
        [[ $caps == "$WATCH_CAPS" && $list_rc == 0 ]] && grep -q "under /host/cgroup" "$W/pod-list.out"; then
        pass "image-kube-play: the DaemonSet's pod serves naglefix_ metrics at 127.0.0.1:$KPORT, capabilities $caps, attach --list in it"
    else
        fail image-kube-play "exit $rc; capabilities '$caps'; attach --list exit $list_rc: $(head -n 1 "$W/pod-list.out"); metrics: $(head -c 200 "$W/pod-metrics.out" 2>/dev/null)" "$W/play.out"
    fi
    podman kube down "$W/pod.yaml" >/dev/null 2>&1 && played=0
fi

# ---- the manifests
IMG=$(make -s image-name)
check() { python3 "$HERE/manifests.py" check "$1" "$IMG" "$WATCH_CAPS" "$ATTACH_CAPS"; }
if selected image-manifests; then
    if check conf/kubernetes >"$W/manifests.out" 2>&1; then
        pass "image-manifests: conf/kubernetes: $(cat "$W/manifests.out")"
    else
        fail image-manifests "" "$W/manifests.out"
    fi
fi
# broken NAME SED: the check fails on a copy with SED applied to the DaemonSet
broken() {
    selected "image-manifests-fails-$1" || return 0
    rm -rf "$W/k8s" && cp -r conf/kubernetes "$W/k8s" && sed -i "$2" "$W/k8s/daemonset.yaml"
    if ! check "$W/k8s" >"$W/broken.out" 2>&1 && [[ -s $W/broken.out ]]; then
        pass "image-manifests-fails-$1: $(head -n 1 "$W/broken.out")"
    else
        fail "image-manifests-fails-$1" "the check passed a broken manifest" "$W/broken.out"
    fi
}
broken cap 's/"SYS_PTRACE"\]/"SYS_PTRACE", "NET_ADMIN"]/'
broken port 's/prometheus.io\/port: "9477"/prometheus.io\/port: "9478"/'
broken image 's/image: localhost\/naglefix:.*/image: localhost\/naglefix:0/'
if selected image-doc-run-line; then
    mandoc -T ascii src/man/naglefix.1 | col -b >"$W/naglefix.1.txt"
    if grep -qF -- "--cap-drop ALL --cap-add $WATCH_CAPS" "$W/naglefix.1.txt" &&
        grep -qF -- "--cap-drop ALL --cap-add $ATTACH_CAPS" "$W/naglefix.1.txt"; then
        pass "image-doc-run-line: naglefix(1) adds $WATCH_CAPS and $ATTACH_CAPS"
    else
        fail image-doc-run-line "naglefix(1) has no run line with --cap-add $WATCH_CAPS and --cap-add $ATTACH_CAPS"
    fi
fi
finish
