#!/usr/bin/env python3
"""http_rounds.py: Python's http.client GETting one path ROUNDS times on
one keep-alive connection, as the legacy clients time a round.

Usage: http_rounds.py HOST PORT ROUNDS PATH
A round is one request (http.client sends it in one write) and the whole
response read. Round 1 is a warm-up, excluded. Final line, as the legacy
clients print it: median_ms=<x> p99_ms=<y> rounds=<measured rounds>
"""
import http.client
import math
import sys
import time


def main():
    if len(sys.argv) != 5 or int(sys.argv[3]) < 2:
        sys.exit("usage: http_rounds.py HOST PORT ROUNDS(>=2) PATH")
    host, port, rounds, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    times = []
    for i in range(rounds):
        t0 = time.perf_counter_ns()
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        t1 = time.perf_counter_ns()
        if resp.status != 200 or not body:
            sys.exit("http_rounds: status %d, %d bytes" % (resp.status, len(body)))
        if resp.will_close:
            sys.exit("http_rounds: the server closes the connection (no keep-alive)")
        if i > 0:
            times.append((t1 - t0) / 1e6)
    conn.close()
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    print("median_ms=%.3f p99_ms=%.3f rounds=%d" % (median, times[math.ceil(0.99 * n) - 1], n))


if __name__ == "__main__":
    main()
