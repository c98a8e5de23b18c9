#!/usr/bin/env python3
"""exec_client.py: ROUNDS split-write rounds ("hello " + "world\\n", then the
echoed line) against a line-echo server, then exec /bin/true. Audit's
pending repeat counts and its summary must be written before the exec.
Usage: exec_client.py HOST PORT ROUNDS
"""
import os
import sys

import splitreq


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s, f = splitreq.connect(host, port)
    splitreq.rounds(s, f, rounds)
    os.execv("/bin/true", ["true"])


if __name__ == "__main__":
    main()
