#!/usr/bin/env python3
"""bound_client.py: legacy_client.py's rounds from a fixed local port.

Usage: bound_client.py HOST PORT LOCAL_PORT ROUNDS split|single [PAUSE_MS]
As tests/programs/legacy_client.py (per round 100 + 100 bytes, split in two
sends or one, then the 2-byte reply; round 1 left out of the figures),
but bound to HOST:LOCAL_PORT first, so that two runs in two network
namespaces are the same four-tuple (t_watch_netns.sh: one namespace's
127.0.0.1 is not another's), and PAUSE_MS (default 0) between rounds, not
counted in them (so a fast run lasts as long as a stalling one beside it).
Final line: median_ms=<x> rounds=<n>
"""
import socket
import sys
import time


def main():
    if len(sys.argv) not in (6, 7) or sys.argv[5] not in ("split", "single"):
        sys.exit("usage: bound_client.py HOST PORT LOCAL_PORT ROUNDS split|single [PAUSE_MS]")
    host, port, lport, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    pause = float(sys.argv[6]) / 1000 if len(sys.argv) == 7 else 0
    split = sys.argv[5] == "split"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, lport))
    sock.settimeout(10)
    sock.connect((host, port))
    times = []
    for i in range(rounds):
        t0 = time.perf_counter_ns()
        if split:
            sock.send(b"h" * 100)
            sock.send(b"b" * 100)
        else:
            sock.send(b"h" * 100 + b"b" * 100)
        got = b""
        while len(got) < 2:
            data = sock.recv(2 - len(got))
            if not data:
                sys.exit("server closed connection")
            got += data
        if i > 0:
            times.append((time.perf_counter_ns() - t0) / 1e6)
        time.sleep(pause)
    sock.close()
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    print("median_ms=%.3f rounds=%d" % (median, n))


if __name__ == "__main__":
    main()
