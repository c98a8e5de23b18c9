#!/usr/bin/env python3
"""split_client.py: THREADS threads, each on its own connection to a line-echo
server, write a request in two sends ("hello " then "world\\n") and read the
echoed line, ROUNDS times. With "nodelay" the client sets TCP_NODELAY itself
(then Nagle holds nothing). Prints median_ms=<x> rounds=<n>.
Usage: split_client.py HOST PORT ROUNDS THREADS [nodelay]
"""
import socket
import statistics
import sys
import threading
import time


def one(host, port, rounds, nodelay, out):
    s = socket.create_connection((host, port), timeout=10)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")
    for i in range(rounds):
        t0 = time.perf_counter()
        s.send(b"hello ")
        s.send(b"world\n")
        if f.readline() != b"hello world\n":
            raise SystemExit("bad echo")
        if i > 0:
            out.append((time.perf_counter() - t0) * 1000)
    f.close()
    s.close()


def main():
    host, port, rounds, nthreads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    nodelay = len(sys.argv) > 5 and sys.argv[5] == "nodelay"
    ms = []
    threads = [threading.Thread(target=one, args=(host, port, rounds, nodelay, ms))
               for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("median_ms=%.3f rounds=%d" % (statistics.median(ms), len(ms)))


if __name__ == "__main__":
    main()
