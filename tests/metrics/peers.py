#!/usr/bin/env python3
"""peers.py: the programs the metrics tests watch, on this namespace's loopback.

  peers.py server PORTFILE        listens on 127.0.0.1 (a port of the kernel's
                                  choice, written to PORTFILE), answers each
                                  200-byte request with b"ok"; one thread, any
                                  number of connections; exits at stdin's EOF
  peers.py split PORT ROUNDS      a client that writes each request in two
                                  pieces (Nagle on) and waits for the answer:
                                  one line per round "round_ms=X", then
                                  "stalled=N stalled_ms=SUM": the rounds of
                                  20 ms or more (a stall is ~40 ms, a round
                                  without one under 5 ms), the first round
                                  (ACKed at once: a new connection) included
  peers.py quiet PORT N           N connections, each one request in one write
                                  (no stall), all held open until the last is
                                  made, then closed; prints "quiet=N"
"""
import os
import selectors
import socket
import sys
import time

REQUEST = 200
STALL_MS = 20


def server(portfile):
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ, None)
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % lsock.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    pending = {}
    while True:
        for key, _ in sel.select():
            if key.data == "stdin":
                if not sys.stdin.buffer.read1(4096):
                    return
            elif key.data is None:
                try:
                    conn, _ = lsock.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                pending[conn] = 0
                sel.register(conn, selectors.EVENT_READ, "conn")
            else:
                conn = key.fileobj
                try:
                    data = conn.recv(65536)
                except BlockingIOError:
                    continue
                except ConnectionError:
                    data = b""
                if not data:
                    sel.unregister(conn)
                    conn.close()
                    del pending[conn]
                    continue
                pending[conn] += len(data)
                while pending[conn] >= REQUEST:
                    pending[conn] -= REQUEST
                    conn.send(b"ok")


def split(port, rounds):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
    stalled, stalled_ms = 0, 0.0
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        sock.send(b"h" * (REQUEST // 2))
        sock.send(b"b" * (REQUEST // 2))
        got = b""
        while len(got) < 2:
            data = sock.recv(2 - len(got))
            if not data:
                sys.exit("the server closed the connection")
            got += data
        ms = (time.perf_counter_ns() - t0) / 1e6
        print("round_ms=%.3f" % ms)
        if ms >= STALL_MS:
            stalled += 1
            stalled_ms += ms
    sock.close()
    print("stalled=%d stalled_ms=%.3f" % (stalled, stalled_ms))


def quiet(port, n):
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"q" * REQUEST)
        got = b""
        while len(got) < 2:
            data = s.recv(2 - len(got))
            if not data:
                sys.exit("the server closed the connection")
            got += data
        conns.append(s)
    for s in conns:
        s.close()
    print("quiet=%d" % n)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "server":
        server(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "split":
        split(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "quiet":
        quiet(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
