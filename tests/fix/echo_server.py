#!/usr/bin/env python3
"""echo_server.py: line-echo server for tests/fix (IPv4 or IPv6).

Usage: echo_server.py HOST [LIFETIME_S]
Prints "PORT <n>" first. Per connection: each line read (ending "\\r\\n" or
"\\n") is sent back without its ending plus "\\n", in one send, as the
legacy harness's EchoServer does. Exits when stdin closes or after
LIFETIME_S seconds (default 120).
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
                conn.sendall(line.rstrip(b"\r") + b"\n")


def main():
    host = sys.argv[1]
    lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    srv = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, 0))
    # a long queue: many_conns.py connects 1,000 times at once, and a SYN
    # that finds the queue full waits a second to be sent again
    srv.listen(1024)
    print("PORT %d" % srv.getsockname()[1], flush=True)

    def on_eof():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except OSError:
            pass
        os._exit(0)

    threading.Thread(target=on_eof, daemon=True).start()
    timer = threading.Timer(lifetime, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
