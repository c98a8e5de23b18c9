#!/usr/bin/env python3
"""legacy_server.py: request/reply server for the Python legacy client.

Usage: legacy_server.py PORT [LIFETIME_S [ADDRESS]]   (PORT 0 = ephemeral)
Listens on ADDRESS (default 127.0.0.1; ::1 or any other, IPv6 too) and
prints "PORT <n>" first (what tests/programs/common.sh's start_server waits
for). Per connection: reads 200-byte requests (legacy_client.py's two sends
of 100 bytes, or its one of 200) and answers each with b"ok" in one send.
Exits when stdin closes or after LIFETIME_S seconds (default 60).
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
    if len(sys.argv) > 4:
        sys.exit("usage: legacy_server.py PORT [LIFETIME_S [ADDRESS]]")
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    addr = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"

    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
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
