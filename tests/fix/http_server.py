#!/usr/bin/env python3
"""http_server.py: Python's http.server, unmodified (SimpleHTTPRequestHandler,
HTTP/1.1 keep-alive), serving hello.txt from a temporary directory, for
tests/fix. It writes the response header and the body with two sends.
Usage: http_server.py [LIFETIME_S]
Prints "PORT <n>" first; exits when stdin closes or after LIFETIME_S
seconds (default 120).
"""
import functools
import http.server
import os
import shutil
import sys
import tempfile
import threading


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


def main():
    lifetime = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    root = tempfile.mkdtemp()
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello world\n")
    handler = functools.partial(QuietHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print("PORT %d" % server.server_address[1], flush=True)

    def leave():
        shutil.rmtree(root, ignore_errors=True)
        os._exit(0)

    def on_eof():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except OSError:
            pass
        leave()

    threading.Thread(target=on_eof, daemon=True).start()
    timer = threading.Timer(lifetime, leave)
    timer.daemon = True
    timer.start()
    server.serve_forever()


if __name__ == "__main__":
    main()
