#!/usr/bin/env python3
"""split_server.py: a line server that answers each request line in two sends
("hello " then "world\\n"): the second is held by Nagle until the client's
delayed ACK of the first, and the server's next read waits for it (under
audit, one split_write finding an answer but the first). It prints
"PORT <n> PID <pid>", serves one connection to its end, prints "served",
and AFTER seconds later ends as END says:
  wait    waits (60 s) for whoever stops it (SIGTERM, SIGKILL)
  _exit   os._exit(0)            exec   execs /bin/true
  segv    reads address 0        abort  os.abort()
  fork    serves a second connection in a forked child, which prints
          "CHILD <pid>"; then both wait, as "wait"
Usage: split_server.py END AFTER
"""
import ctypes
import os
import socket
import sys
import time


def serve(ls):
    conn, _ = ls.accept()
    for _ in conn.makefile("rb"):
        conn.send(b"hello ")
        conn.send(b"world\n")
    conn.close()


def end_as(end):
    if end == "_exit":
        os._exit(0)
    elif end == "exec":
        os.execv("/bin/true", ["true"])
    elif end == "segv":
        ctypes.string_at(0)
    elif end == "abort":
        os.abort()
    time.sleep(60)


def main():
    end, after = sys.argv[1], float(sys.argv[2])
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(2)
    print("PORT %d PID %d" % (ls.getsockname()[1], os.getpid()), flush=True)
    serve(ls)
    if end == "fork":
        if os.fork() == 0:
            print("CHILD %d" % os.getpid(), flush=True)
            serve(ls)
            print("served", flush=True)
        time.sleep(60)
        os._exit(0)
    print("served", flush=True)
    time.sleep(after)
    end_as(end)


if __name__ == "__main__":
    main()
