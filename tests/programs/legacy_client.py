#!/usr/bin/env python3
"""legacy_client.py: raw-socket write-write-read client (Nagle + delayed ACK).

Usage: legacy_client.py HOST PORT ROUNDS split|single
Per round: send 100 b"h" and 100 b"b" (split: two sends, single: one), then
recv until the 2-byte reply. Round 1 is a warm-up, excluded from the stats.
Final line: median_ms=<x> p99_ms=<y> rounds=<measured rounds>
"""
import math
import socket
import sys
import time


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("split", "single"):
        sys.exit("usage: legacy_client.py HOST PORT ROUNDS split|single")
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    split = sys.argv[4] == "split"
    if rounds < 11:
        sys.exit("need ROUNDS >= 11")

    sock = socket.create_connection((host, port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)  # Nagle on

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
        t1 = time.perf_counter_ns()
        if i > 0:
            times.append((t1 - t0) / 1e6)
    sock.close()

    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    p99 = times[math.ceil(0.99 * n) - 1]  # nearest rank
    print("median_ms=%.3f p99_ms=%.3f rounds=%d" % (median, p99, n))


if __name__ == "__main__":
    main()
