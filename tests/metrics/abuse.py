#!/usr/bin/env python3
"""abuse.py: bad clients of a metrics endpoint (t_abuse.sh).

  abuse.py PORT KIND N [SECONDS]

Opens N connections to 127.0.0.1:PORT at once, each doing KIND:
  garbage   sends 2 KiB of random bytes (a TLS ClientHello's first bytes first)
  huge      sends a request line, then header bytes without end, 1 MiB each
  slow      sends "GET /metrics HTTP/1.1\\r\\n", then one header byte a second
  idle      connects and sends nothing
  noread    sends a whole GET and never reads
and watches each until the server closes it (EOF or a reset) or SECONDS
(default 15) pass. Prints one line:
  KIND=N answered=A codes=400:x,431:y,... closed=C open=O max_s=S
answered: connections that got an HTTP status line (codes: how many of
each); closed: closed by the server, answered or not; open: still open at
the end; max_s: the longest a connection lived before the server closed it.
"""
import os
import selectors
import socket
import sys
import time


def opener(kind):
    if kind == "garbage":
        return b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(2037)
    if kind == "huge":
        return b"GET /metrics HTTP/1.1\r\n"
    if kind == "slow":
        return b"GET /metrics HTTP/1.1\r\n"
    if kind == "noread":
        return b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    return b""


def main():
    port, kind, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    limit = float(sys.argv[4]) if len(sys.argv) > 4 else 15.0
    sel = selectors.DefaultSelector()
    conns = {}
    start = time.monotonic()
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        first = opener(kind)
        try:
            if first:
                s.send(first)
        except OSError:
            pass
        conns[s] = {"t0": time.monotonic(), "got": b"", "closed": None, "sent": len(first)}
        sel.register(s, selectors.EVENT_READ)
    next_tick = time.monotonic() + 1
    chunk = b"x" * 16384
    while time.monotonic() - start < limit and any(c["closed"] is None for c in conns.values()):
        for key, _ in sel.select(timeout=0.05):
            s, c = key.fileobj, conns[key.fileobj]
            if kind == "noread" and not c["got"]:
                # never reads: only looks for a reset or EOF, without taking the data
                try:
                    peek = s.recv(1, socket.MSG_PEEK)
                except ConnectionError:
                    peek = b""
                except BlockingIOError:
                    continue
                if peek:
                    c["got"] = b"(peeked)"
                    continue
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionError:
                data = b""
            if data:
                c["got"] += data[:64]
                continue
            c["closed"] = time.monotonic() - c["t0"]
            sel.unregister(s)
        now = time.monotonic()
        for s, c in conns.items():
            if c["closed"] is not None:
                continue
            try:
                if kind == "huge" and c["sent"] < 1 << 20:
                    c["sent"] += s.send(chunk)
                elif kind == "slow" and now >= next_tick:
                    s.send(b"X")
            except (BlockingIOError, ConnectionError, BrokenPipeError):
                pass
        if now >= next_tick:
            next_tick = now + 1
    codes = {}
    answered = closed = 0
    max_s = 0.0
    for s, c in conns.items():
        if c["got"].startswith(b"HTTP/1.1 "):
            answered += 1
            code = c["got"][9:12].decode("ascii", "replace")
            codes[code] = codes.get(code, 0) + 1
        if c["closed"] is not None:
            closed += 1
            max_s = max(max_s, c["closed"])
        s.close()
    print("%s=%d answered=%d codes=%s closed=%d open=%d max_s=%.1f" % (
        kind, n, answered, ",".join("%s:%d" % kv for kv in sorted(codes.items())) or "-",
        closed, n - closed, max_s))


if __name__ == "__main__":
    main()
