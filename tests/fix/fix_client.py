#!/usr/bin/env python3
"""fix_client.py: raw-socket split-write line client for tests/fix, in
the manner of tests/programs/legacy_client.py, printing every round.

Usage: fix_client.py HOST PORT ROUNDS [--own-nodelay] [--off-when FILE]
       fix_client.py HOST PORT CONNS --newconn GOFILE
Prints "pid N", then per round "round I MS": sends b"hello I " and
b"world I\\r\\n" in two sends (Nagle on), reads the echoed line and checks
it is b"hello I world I\\n" to the byte ("BAD ..." and exit 1 if not).
--own-nodelay: also holds a second connection with TCP_NODELAY 1 set by
the program itself (printed "own_nodelay_port P").
--off-when FILE: once FILE exists, the program sets TCP_NODELAY 0 itself
(printed "nodelay_off I"), reads it back (printed "nodelay_read V": 1
where a kernel program keeps it on) and goes on; with --own-nodelay, on
the second connection too (printed "own_nodelay_read V").
--newconn GOFILE: waits for GOFILE, then CONNS times: a new connection,
its own TCP_NODELAY read every millisecond until it is 1 (at most 1 s),
3 split rounds, closed; prints "conn I fixed_ms X max_round_ms Y" (X -1:
never fixed), then "done CONNS".
"""
import os
import socket
import sys
import time


def dial(host, port):
    sock = socket.create_connection((host, port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)  # Nagle on
    return sock


def one_round(sock, i):
    t0 = time.perf_counter_ns()
    sock.send(b"hello %d " % i)
    sock.send(b"world %d\r\n" % i)
    want = b"hello %d world %d\n" % (i, i)
    got = b""
    while not got.endswith(b"\n"):
        data = sock.recv(4096)
        if not data:
            print("BAD round %d: connection lost" % i, flush=True)
            sys.exit(1)
        got += data
    if got != want:
        print("BAD round %d: got %r" % (i, got), flush=True)
        sys.exit(1)
    return (time.perf_counter_ns() - t0) / 1e6


def newconn(host, port, conns, gofile):
    while not os.path.exists(gofile):
        time.sleep(0.01)
    for c in range(conns):
        sock = dial(host, port)
        t0 = time.perf_counter()
        fixed = -1.0
        while time.perf_counter() - t0 < 1.0:
            if sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY):
                fixed = (time.perf_counter() - t0) * 1000
                break
            time.sleep(0.001)
        worst = max(one_round(sock, c * 3 + k) for k in range(3))
        sock.close()
        print("conn %d fixed_ms %.1f max_round_ms %.3f" % (c, fixed, worst), flush=True)
    print("done %d" % conns, flush=True)


def main():
    args = sys.argv[1:]
    host, port, count = args[0], int(args[1]), int(args[2])
    print("pid %d" % os.getpid(), flush=True)
    if "--newconn" in args:
        newconn(host, port, count, args[args.index("--newconn") + 1])
        return
    off_when = args[args.index("--off-when") + 1] if "--off-when" in args else None
    keep = None
    if "--own-nodelay" in args:
        keep = dial(host, port)
        keep.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        print("own_nodelay_port %d" % keep.getsockname()[1], flush=True)
    sock = dial(host, port)
    for i in range(count):
        if off_when and os.path.exists(off_when):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
            print("nodelay_off %d" % i, flush=True)
            print("nodelay_read %d" % sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY),
                  flush=True)
            if keep:
                keep.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
                print("own_nodelay_read %d"
                      % keep.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), flush=True)
            off_when = None
        print("round %d %.3f" % (i, one_round(sock, i)), flush=True)
    print("done %d" % count, flush=True)


if __name__ == "__main__":
    main()
