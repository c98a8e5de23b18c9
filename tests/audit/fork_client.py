#!/usr/bin/env python3
"""fork_client.py: split writes ("hello " + "world\\n") to a line-echo server;
for ROUNDS rounds the process reads the echo itself (each a finding under
audit), then it writes once more, forks, and only the child reads the echo.
The writes listed before the fork are the parent's: the child must report
no finding for them. Prints "parent=PID child=PID".
Usage: fork_client.py HOST PORT ROUNDS
"""
import os
import socket
import sys


def split_request(s):
    s.send(b"hello ")
    s.send(b"world\n")


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s = socket.create_connection((host, port), timeout=10)
    f = s.makefile("rb")
    for _ in range(rounds):
        split_request(s)
        if f.readline() != b"hello world\n":
            raise SystemExit("bad echo")
    split_request(s)
    pid = os.fork()
    if pid == 0:
        line = f.readline()
        os._exit(0 if line == b"hello world\n" else 1)
    _, status = os.waitpid(pid, 0)
    print("parent=%d child=%d" % (os.getpid(), pid))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
