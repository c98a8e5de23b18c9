#!/usr/bin/env python3
"""line_client.py: CONNS connections, one after the other, to split_server.py;
on each, ROUNDS request lines, each waiting for its answer "hello world\\n".
Prints "stalled=<k>": the rounds that took 30 ms or more (a held answer
waits for a delayed ACK, 40 ms or more; one not held takes under 5 ms),
what the server's audit log must count. A connection's first round is not
timed: nothing before it is unacknowledged, so it is never held, and it
takes the server's start on the connection (20 ms once, on a loaded
machine).
Usage: line_client.py HOST PORT ROUNDS [CONNS]
"""
import socket
import sys
import time


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    conns = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    stalled = 0
    for _ in range(conns):
        s = socket.create_connection((host, port), timeout=10)
        f = s.makefile("rb")
        for i in range(rounds):
            t0 = time.perf_counter()
            s.send(b"x\n")
            if f.readline() != b"hello world\n":
                raise SystemExit("bad answer")
            stalled += i > 0 and time.perf_counter() - t0 >= 0.030
        f.close()
        s.close()
    print("stalled=%d" % stalled)


if __name__ == "__main__":
    main()
