#!/usr/bin/env python3
"""legacy_server.py: request/reply server for the Python legacy client.

Usage: legacy_server.py PORT [LIFETIME_S]   (PORT 0 = ephemeral)
Prints "PORT <n>" first. Per connection: read 200-byte requests, reply b"ok"
in one send. Exits when stdin closes or after LIFETIME_S seconds (default 60).
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


def exit_after(seconds):
    sys.stderr.write("legacy_server: lifetime expired\n")
    os._exit(0)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 60

    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(50)
    print("PORT %d" % srv.getsockname()[1], flush=True)

    threading.Thread(target=exit_on_stdin_eof, daemon=True).start()
    timer = threading.Timer(lifetime, exit_after, args=(lifetime,))
    timer.daemon = True
    timer.start()

    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
