#!/usr/bin/env python3
"""exec_client.py: ROUNDS split-write rounds ("hello " + "world\\n", then the
echoed line) against a line-echo server, then exec /bin/true. Audit's
pending repeat counts and its summary must be written before the exec.
Usage: exec_client.py HOST PORT ROUNDS
"""
import os
import socket
import sys


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s = socket.create_connection((host, port), timeout=10)
    f = s.makefile("rb")
    for _ in range(rounds):
        s.send(b"hello ")
        s.send(b"world\n")
        if f.readline() != b"hello world\n":
            raise SystemExit("bad echo")
    os.execv("/bin/true", ["true"])


if __name__ == "__main__":
    main()
