#!/usr/bin/env python3
"""fork_client.py: split writes ("hello " + "world\\n") to a line-echo server;
for ROUNDS rounds the process reads the echo itself (each a finding under
audit), then it writes once more, forks, and only the child reads the echo.
The writes listed before the fork are the parent's: the child must report
no finding for them. Prints "parent=PID child=PID".
Usage: fork_client.py HOST PORT ROUNDS
"""
import os
import sys

import splitreq


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s, f = splitreq.connect(host, port)
    splitreq.rounds(s, f, rounds)
    splitreq.send(s)
    pid = os.fork()
    if pid == 0:
        line = f.readline()
        os._exit(0 if line == b"hello world\n" else 1)
    _, status = os.waitpid(pid, 0)
    print("parent=%d child=%d" % (os.getpid(), pid))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
