#!/usr/bin/env python3
"""http_client.py: Python's http.client, unmodified, GETting /hello.txt
ROUNDS times on one keep-alive connection, each body checked.
Usage: http_client.py PORT ROUNDS
Prints median_ms=<x> max_ms=<y> rounds=<n> (round 1, a warm-up, not counted);
exits 1 on a wrong body.
"""
import http.client
import statistics
import sys
import time


def main():
    port, rounds = int(sys.argv[1]), int(sys.argv[2])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    ms = []
    for i in range(rounds):
        t0 = time.perf_counter()
        conn.request("GET", "/hello.txt")
        body = conn.getresponse().read()
        if body != b"hello world\n":
            sys.exit("bad body %r" % body)
        if i > 0:
            ms.append((time.perf_counter() - t0) * 1000)
    conn.close()
    print("median_ms=%.3f max_ms=%.3f rounds=%d" % (statistics.median(ms), max(ms), len(ms)))


if __name__ == "__main__":
    main()
