#!/usr/bin/env bash
# with_devlog.sh OUT CMD...: runs CMD in a private mount namespace whose
# /dev has a /dev/log datagram socket of ours (an overlay over the real
# /dev), and writes every datagram received there to OUT, one a line,
# until CMD has exited and a last datagram of its own, sent then, is read
# (what CMD sent is queued before it).
# Exits 77 if mount namespaces or overlayfs are not available.
set -u
out=$1
shift
exec unshare -m bash -c '
    set -u
    out=$1; shift
    u=$(mktemp -d) w=$(mktemp -d)
    mount -t overlay overlay -o "lowerdir=/dev,upperdir=$u,workdir=$w" /dev 2>/dev/null || exit 77
    python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(\"/dev/log\")
s.settimeout(5)
print(\"ready\", flush=True)
with open(sys.argv[1], \"wb\") as f:
    try:
        while True:
            d = s.recv(65536)
            if d == b\"with_devlog.sh: end\":
                break
            f.write(d + b\"\\n\")
            f.flush()
    except OSError:
        pass
" "$out" | {
        read -r _
        "$@"
        rc=$?
        python3 -c "
import socket
socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b\"with_devlog.sh: end\", \"/dev/log\")
"
        exit $rc
    }
' sh "$out" "$@"
