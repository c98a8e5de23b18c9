#!/usr/bin/env python3
"""pipeline.py [--slow] PORT ROOT FILE...: HTTP/1.1 pipelining against
127.0.0.1:PORT.

Sends, in one sendall, for each FILE a GET and a HEAD (the last request
with "Connection: close"), then reads to end of file and parses the
responses in order: each must be "HTTP/1.1 200 OK" with the file's size as
Content-Length, a GET's body the file's bytes (ROOT/FILE), a HEAD's none,
and nothing may follow the last. A server that sends a body before its
headers, or the bytes of two responses out of order, fails here at the
first response it breaks. --slow: a 4 KiB receive buffer, read 4 KiB at a
time with a pause of 1 ms after each, so the server's sends meet a full
socket (EAGAIN) between and inside responses. Prints "ok N responses" and exits 0, or prints
what was wrong and exits 1. Runs without the library (the caller's
environment is cleaned).
"""
import os
import socket
import sys
import time


def requests(files):
    out = []
    for i, name in enumerate(files):
        for method in ("GET", "HEAD"):
            last = i == len(files) - 1 and method == "HEAD"
            conn = "close" if last else "keep-alive"
            out.append((method, name,
                        f"{method} /{name} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        f"Connection: {conn}\r\n\r\n".encode()))
    return out


def read_all(sock, slow):
    chunks = []
    while True:
        data = sock.recv(4096 if slow else 65536)
        if not data:
            return b"".join(chunks)
        chunks.append(data)
        if slow:
            time.sleep(0.001)


def check(stream, reqs, root):
    pos = 0
    for n, (method, name, _) in enumerate(reqs):
        where = f"response {n + 1} ({method} /{name}) at byte {pos}"
        end = stream.find(b"\r\n\r\n", pos)
        if end < 0:
            return f"{where}: no end of headers; rest starts {stream[pos:pos + 60]!r}"
        head = stream[pos:end].decode("latin-1").split("\r\n")
        if head[0] != "HTTP/1.1 200 OK":
            return f"{where}: status line {head[0][:60]!r}"
        fields = dict(h.split(": ", 1) for h in head[1:] if ": " in h)
        want = os.path.getsize(os.path.join(root, name))
        if fields.get("Content-Length") != str(want):
            return f"{where}: Content-Length {fields.get('Content-Length')!r}, file has {want}"
        pos = end + 4
        if method == "GET":
            with open(os.path.join(root, name), "rb") as f:
                body = f.read()
            got = stream[pos:pos + want]
            if got != body:
                first = next((i for i in range(len(got)) if got[i] != body[i]), len(got))
                return f"{where}: body differs from byte {first} (got {len(got)} bytes)"
            pos += want
    if pos != len(stream):
        return f"{len(stream) - pos} bytes after the last response: {stream[pos:pos + 60]!r}"
    return None


def main():
    args = sys.argv[1:]
    slow = bool(args) and args[0] == "--slow"
    if slow:
        args = args[1:]
    port, root, files = int(args[0]), args[1], args[2:]
    reqs = requests(files)
    with socket.socket() as s:
        if slow:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(60)
        s.connect(("127.0.0.1", port))
        s.sendall(b"".join(r[2] for r in reqs))
        stream = read_all(s, slow)
    err = check(stream, reqs, root)
    if err:
        print(err)
        return 1
    print(f"ok {len(reqs)} responses, {len(stream)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
