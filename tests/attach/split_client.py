#!/usr/bin/env python3
"""split_client.py: a split-writing line client in Python that never
touches TCP_NODELAY (unlike tests/programs', which turn it off themselves:
a program's own setsockopt comes after the kernel's program and wins).

Usage: split_client.py HOST PORT ROUNDS
Per round: sends b"hello I " and b"world I\\r\\n" (two sends), reads the
echoed line, checked to the byte. Prints
"median_ms=X p99_ms=Y rounds=N nodelay=V", every round counted, the first
too; exits 1 on a wrong line.
"""
import socket
import sys
import time


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sock = socket.create_connection((host, port), timeout=10)
    if sys.argv[4:] == ["off"]:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
    nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    ms = []
    for i in range(rounds):
        t0 = time.perf_counter_ns()
        sock.send(b"hello %d " % i)
        sock.send(b"world %d\r\n" % i)
        got = b""
        while not got.endswith(b"\n"):
            data = sock.recv(4096)
            if not data:
                sys.exit("BAD round %d: connection lost" % i)
            got += data
        if got != b"hello %d world %d\n" % (i, i):
            sys.exit("BAD round %d: got %r" % (i, got))
        ms.append((time.perf_counter_ns() - t0) / 1e6)
    ms.sort()
    p99 = ms[(len(ms) * 99 + 99) // 100 - 1]
    print("median_ms=%.3f p99_ms=%.3f rounds=%d nodelay=%d" % (ms[len(ms) // 2], p99, len(ms), nodelay))


if __name__ == "__main__":
    main()
