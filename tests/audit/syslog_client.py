#!/usr/bin/env python3
"""syslog_client.py: a program with its own syslog identity ("myapp",
LOG_LOCAL0) that makes split writes ("hello " + "world\\n") against a
line-echo server between two syslog lines of its own. Under
NAGLEFIX_LOG=syslog, audit's lines must not change the program's identity.
Usage: syslog_client.py HOST PORT ROUNDS
"""
import sys
import syslog

import splitreq


def main():
    host, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    syslog.openlog("myapp", 0, syslog.LOG_LOCAL0)
    syslog.syslog(syslog.LOG_INFO, "before")
    s, f = splitreq.connect(host, port)
    splitreq.rounds(s, f, rounds)
    syslog.syslog(syslog.LOG_INFO, "after")


if __name__ == "__main__":
    main()
