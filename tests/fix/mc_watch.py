#!/usr/bin/env python3
"""mc_watch.py: how long each store takes on a memcached, seen from the
server: its "stats" cmd_set polled every millisecond on a connection of
its own, the time between two increments one store's.
Usage: mc_watch.py PORT STORES [TIMEOUT_S]
Waits for the first increment, then times the next STORES stores and
prints "median_ms=X max_ms=Y stalls=N stores=M" (a stall: >= 40 ms, the delayed-ACK minimum).
"""
import socket
import statistics
import sys
import time


def cmd_set(sock):
    sock.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        data = sock.recv(65536)
        if not data:
            sys.exit("memcached closed the connection")
        buf += data
    for line in buf.split(b"\r\n"):
        if line.startswith(b"STAT cmd_set "):
            return int(line.split()[2])
    sys.exit("no cmd_set in stats")


def main():
    port, stores = int(sys.argv[1]), int(sys.argv[2])
    deadline = time.monotonic() + (float(sys.argv[3]) if len(sys.argv) > 3 else 30)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    last = cmd_set(sock)
    while cmd_set(sock) == last:
        if time.monotonic() > deadline:
            sys.exit("no store seen")
        time.sleep(0.001)
    last = cmd_set(sock)
    t_last = time.monotonic()
    per = []
    while len(per) < stores and time.monotonic() < deadline:
        time.sleep(0.001)
        now_sets = cmd_set(sock)
        now = time.monotonic()
        if now_sets > last:
            # k stores in one interval: each took 1/k of it
            k = now_sets - last
            per.extend([(now - t_last) * 1000 / k] * k)
            last, t_last = now_sets, now
    if not per:
        sys.exit("no store timed")
    print("median_ms=%.3f max_ms=%.3f stalls=%d stores=%d"
          % (statistics.median(per), max(per), sum(1 for p in per if p >= 40), len(per)))


if __name__ == "__main__":
    main()
