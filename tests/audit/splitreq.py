"""splitreq.py: what the audit test clients share: a connection to a
line-echo server and the split request ("hello " + "world\\n") whose echo
Nagle and delayed ACK hold up."""
import socket
import time


def connect(host, port):
    """The socket and a line reader on it."""
    s = socket.create_connection((host, port), timeout=10)
    return s, s.makefile("rb")


def send(s):
    """One request in two sends: the second is held while the first is unacknowledged."""
    s.send(b"hello ")
    s.send(b"world\n")


def rounds(s, f, n):
    """n requests, each waiting for its echoed line. Returns how many of
    them after the first took 30 ms or more: the rounds that stalled (a
    held piece waits for a delayed ACK, 40 ms or more; one not held takes
    under 5 ms; the first round is never held, nothing before it being
    unacknowledged). A round whose two sends a loaded host parted by more
    than the delayed ACK is not held, and not counted."""
    stalled = 0
    for i in range(n):
        t0 = time.perf_counter()
        send(s)
        if f.readline() != b"hello world\n":
            raise SystemExit("bad echo")
        stalled += i > 0 and time.perf_counter() - t0 >= 0.030
    return stalled
