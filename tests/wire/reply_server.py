#!/usr/bin/env python3
"""reply_server.py: legacy_server.py's protocol on any address (IPv6 too).

Usage: reply_server.py ADDRESS [LIFETIME_S]
Listens on ADDRESS (127.0.0.1, ::1, ...) on a free port, prints "PORT <n>"
(what tests/legacy/common.sh's start_server waits for). Per connection:
reads 200-byte requests (legacy_client.py's two sends of 100 bytes, or its
one of 200) and answers each with b"ok" in one send. Exits when stdin
closes or after LIFETIME_S seconds (default 60).
"""
import os
import socket
import sys
import threading

REQUEST_SIZE = 200


def serve(conn):
    with conn:
        buf = b""
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while len(buf) >= REQUEST_SIZE:
                buf = buf[REQUEST_SIZE:]
                conn.sendall(b"ok")


def exit_on_stdin_eof():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    os._exit(0)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: reply_server.py ADDRESS [LIFETIME_S]")
    addr = sys.argv[1]
    lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, 0))
    srv.listen(50)
    print("PORT %d" % srv.getsockname()[1], flush=True)
    threading.Thread(target=exit_on_stdin_eof, daemon=True).start()
    timer = threading.Timer(lifetime, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
