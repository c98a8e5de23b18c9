#!/usr/bin/env python3
"""http_pair.py: Python's http.server answering http.client, both unmodified,
in one process: a SimpleHTTPRequestHandler (HTTP/1.1, keep-alive) serves a
small file from a temporary directory; the client GETs it ROUNDS times on one
connection. The server writes the response header and the body with two
sends, so the body waits for the ACK of the header (Nagle) while the client
delays that ACK waiting for the body. Prints median_ms=<x> rounds=<n>.
Usage: http_pair.py [ROUNDS]
"""
import functools
import http.client
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server would

    def log_message(self, *args):
        pass


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "hello.txt"), "w") as f:
            f.write("hello world\n")
        handler = functools.partial(QuietHandler, directory=root)
        server = http.server.HTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        ms = []
        for i in range(rounds):
            t0 = time.perf_counter()
            conn.request("GET", "/hello.txt")
            body = conn.getresponse().read()
            if body != b"hello world\n":
                raise SystemExit("bad body %r" % body)
            if i > 0:
                ms.append((time.perf_counter() - t0) * 1000)
        conn.close()
        server.shutdown()
        server.server_close()
    print("median_ms=%.3f rounds=%d" % (statistics.median(ms), len(ms)))


if __name__ == "__main__":
    main()
