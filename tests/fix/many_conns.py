#!/usr/bin/env python3
"""many_conns.py: holds CONNS idle connections to HOST PORT (for the cost of
fix --follow on a process with many sockets).
Usage: many_conns.py HOST PORT CONNS [LIFETIME_S]
Prints "pid N" then "ready CONNS"; exits after LIFETIME_S seconds
(default 60), or on a signal.
"""
import os
import socket
import sys
import time


def main():
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lifetime = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    print("pid %d" % os.getpid(), flush=True)
    socks = [socket.create_connection((host, port), timeout=10) for _ in range(n)]
    print("ready %d" % len(socks), flush=True)
    time.sleep(lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
