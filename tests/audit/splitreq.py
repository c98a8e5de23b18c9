"""splitreq.py: what the audit test clients share: a connection to a
line-echo server and the split request ("hello " + "world\\n") whose echo
Nagle and delayed ACK hold up."""
import socket


def connect(host, port):
    """The socket and a line reader on it."""
    s = socket.create_connection((host, port), timeout=10)
    return s, s.makefile("rb")


def send(s):
    """One request in two sends: the second is held while the first is unacknowledged."""
    s.send(b"hello ")
    s.send(b"world\n")


def rounds(s, f, n):
    """n requests, each waiting for its echoed line."""
    for _ in range(n):
        send(s)
        if f.readline() != b"hello world\n":
            raise SystemExit("bad echo")
