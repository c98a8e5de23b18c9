#!/usr/bin/env python3
"""exec_client.py: ROUNDS split-write rounds ("hello " + "world\\n", then the
echoed line) against a line-echo server, then prints "stalled=<k>" (the
rounds that stalled: splitreq.rounds) and execs /bin/true. Audit's pending
repeat counts and its summary must be written before the exec: its log
must count exactly the k stalls.
Usage: exec_client.py HOST PORT ROUNDS
"""
import os
import sys

import splitreq


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s, f = splitreq.connect(host, port)
    print("stalled=%d" % splitreq.rounds(s, f, rounds), flush=True)
    os.execv("/bin/true", ["true"])


if __name__ == "__main__":
    main()
