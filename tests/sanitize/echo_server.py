#!/usr/bin/env python3
"""echo_server.py: line-echo server for the sanitizer runs (no preload).

Usage: echo_server.py [LIFETIME_S]
Listens on 127.0.0.1, an ephemeral port; prints "PORT <n>" first. Echoes
every complete line back in one send, one thread per connection. Exits
after LIFETIME_S seconds (default 120), if it is not killed before.
"""
import os
import socket
import sys
import threading


def serve(conn):
    with conn:
        buf = b""
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                conn.sendall(line + b"\n")


def main():
    lifetime = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    print("PORT", srv.getsockname()[1], flush=True)
    threading.Timer(lifetime, lambda: os._exit(0)).start()
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
