#!/usr/bin/env python3
"""oneway_client.py: a sender that never waits for an answer, to a line-echo
server: COUNT pieces of 4 bytes ("tick"), one send each, PERIOD_MS apart,
then "\\n"; only then does it read (the echoed line, to know the server has
read everything). Nagle holds nothing (each piece leaves after the last was
acknowledged): the gaps the server sees are the sender's own pauses, which
audit must not take for a piece held until its delayed ACK (recv_split).
Prints pieces=<n> period_ms=<p>, then local=<its address:port> (the peer
the server's log names it by).
Usage: oneway_client.py HOST PORT COUNT PERIOD_MS
"""
import socket
import sys
import time


def main():
    host, port, count, period = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    s = socket.create_connection((host, port), timeout=10)
    for i in range(count):
        if i:
            time.sleep(period / 1000)
        s.send(b"tick")
    s.send(b"\n")
    if s.makefile("rb").readline() != b"tick" * count + b"\n":
        raise SystemExit("bad echo")
    local = s.getsockname()
    s.close()
    print("pieces=%d period_ms=%d" % (count, period))
    print("local=%s:%d" % local[:2])


if __name__ == "__main__":
    main()
