#!/usr/bin/env python3
"""mc_watch.py: how long each store takes on a memcached, seen from the
server: its "stats" cmd_set polled every millisecond on a connection of
its own, the time between two increments one store's.
Usage: mc_watch.py PORT STORES [TIMEOUT_S] [--ready FILE] [--end N]
                   [--until N]
Waits for the first increment, then times the next STORES stores and
prints "median_ms=X max_ms=Y stalls=N stores=M" (a stall: >= 40 ms, the
delayed-ACK minimum); M may be short of STORES when TIMEOUT_S (default
30) ends first. --ready FILE: FILE is created once the first count is
read (a client started after it has none of its stores missed). --end
N: stops once N stores were made since that first count (a client's
all; those the first increment saw at once are untimed). --until N:
stops early at the N-th stall (M the stores timed until then).
Exit 1 with a message if no store was timed.
"""
import argparse
import socket
import statistics
import sys
import time

STALL_MS = 40.0


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


def parse():
    ap = argparse.ArgumentParser(prog="mc_watch.py")
    ap.add_argument("port", type=int)
    ap.add_argument("stores", type=int)
    ap.add_argument("timeout", type=float, nargs="?", default=30.0)
    ap.add_argument("--ready")
    ap.add_argument("--end", type=int)
    ap.add_argument("--until", type=int)
    return ap.parse_args()


def main():
    a = parse()
    deadline = time.monotonic() + a.timeout
    sock = socket.create_connection(("127.0.0.1", a.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    last = cmd_set(sock)
    end = last + a.end if a.end is not None else None
    if a.ready:
        open(a.ready, "w").close()
    while cmd_set(sock) == last:
        if time.monotonic() > deadline:
            sys.exit("no store seen")
        time.sleep(0.001)
    last = cmd_set(sock)
    t_last = time.monotonic()
    per = []
    stalls = 0
    while len(per) < a.stores and time.monotonic() < deadline:
        if (a.until is not None and stalls >= a.until) or (end is not None and last >= end):
            break
        time.sleep(0.001)
        now_sets = cmd_set(sock)
        now = time.monotonic()
        if now_sets > last:
            # k stores in one interval: each took 1/k of it
            ms = (now - t_last) * 1000 / (now_sets - last)
            k = min(now_sets - last, a.stores - len(per))
            per.extend([ms] * k)
            stalls += k if ms >= STALL_MS else 0
            last, t_last = now_sets, now
    if not per:
        sys.exit("no store timed")
    print("median_ms=%.3f max_ms=%.3f stalls=%d stores=%d"
          % (statistics.median(per), max(per), stalls, len(per)))


if __name__ == "__main__":
    main()
