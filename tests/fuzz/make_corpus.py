#!/usr/bin/env python3
"""make_corpus.py: (re)writes the seed corpora tests/fuzz/corpus/{parse,match}/.

parse/: every config file of the project (conf/, tests/unit/fixtures/,
tests/integration/conf/, tests/coalesce/conf/), as it is, plus hand-made
texts, good and broken, for what those files do not show.
match/: "ENDPOINT\\n" + a side byte + a socket address (see fuzz_match.c):
a few seed endpoints each with an IPv4, an IPv6, an IPv4-mapped IPv6 and a
truncated address, and every endpoint of those texts with one of them.
Run it from anywhere; it only adds or replaces the files it names.
"""
import glob
import os
import socket
import struct

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(TOP, "tests", "fuzz", "corpus")

SOURCES = {
    "conf": "conf/*",
    "fixture": "tests/unit/fixtures/*.conf",
    "integration": "tests/integration/conf/*.conf",
    "coalesce": "tests/coalesce/conf/*.conf",
}

HANDMADE = {
    "every-action": "default audit\n* pass\n*:1 nodelay\n*:2 coalesce\n*:3 audit\n",
    "options-bounds": "*:1 coalesce buffer=64 flush=10us\n*:2 coalesce buffer=16m flush=1s\n"
                      "*:3 coalesce buffer=16384k flush=1000000us\n",
    "options-out-of-bounds": "*:1 coalesce buffer=63\n*:2 coalesce buffer=16385k flush=9us\n",
    "huge-numbers": "*:99999999999999999999999 coalesce buffer=18446744073709551617 "
                    "flush=18446744073709551616s\n",
    "prefixes": "0.0.0.0/0 nodelay\n10.0.0.0/8 pass\n10.1.2.3/32 audit\n::/0 coalesce\n"
                "[2001:db8::/127]:443 nodelay\n[::ffff:10.0.0.0/104]:* pass\n",
    "bad-prefixes": "10.0.0.0/33 pass\n[::1/129]:80 pass\n10.0.0.0/ pass\n10.0.0.0/-1 pass\n",
    "mapped": "[::ffff:192.0.2.1]:80 nodelay\n::ffff:192.0.2.0/120 coalesce\n[::ffff:0:0/96]:* audit\n",
    "ports": "*:1-65535 nodelay\n*:65535 pass\n*:80-80 audit\n*:90-80 pass\n",
    "bad-ports": "*:0 pass\n*:65536 pass\n*:-1 pass\n*:1- pass\n*:a pass\n",
    "brackets": "[::1 pass\n[::1]x pass\n[]:80 pass\n[*]:80 pass\n]::1[ pass\n",
    "hostname": "example.com:80 nodelay\nlocalhost nodelay\n",
    "too-many-words": "* coalesce " + " ".join(["audit=1"] * 20) + "\n",
    "long-endpoint": "[" + "1:" * 70 + "1]:80 nodelay\n",
    "comments-only": "# just\n   # comments\n\t#\n",
    "crlf-and-tabs": "default nodelay\r\n*:80\tcoalesce\tflush=2ms\r\n\v\f\r\n",
    "second-default": "default pass\ndefault nodelay\n",
    "keyword-alone": "connect\naccept\ndefault\n",
    "option-errors": "* nodelay buffer=16k\n* coalesce =1\n* coalesce audit=2\n* pass audit=1\n"
                     "* coalesce flush=5\n* coalesce flush=5ns\n* coalesce buffer=1k buffer=2k\n",
    "no-newline-at-end": "accept [::1]:8080 coalesce buffer=1m",
    "nul-byte": "* nodelay\n\0* pass\n",
}

SEED_ENDPOINTS = ["*", "*:80", "*:1-1024", "10.0.0.0/8", "10.1.2.3:6379", "0.0.0.0/0:*",
                  "[::1]:8080", "::1", "[2001:db8::/32]:*", "[::ffff:10.0.0.0/104]:80",
                  "192.0.2.0/25:443-444", "[::/0]:*", "1.2.3.4/31", "[fe80::/10]:22"]


def endpoints(text):
    """The endpoint word of each rule line of a config text."""
    for line in text.splitlines():
        words = line.split("#")[0].split()
        if not words or words[0] == "default":
            continue
        if words[0] in ("connect", "accept"):
            words = words[1:]
        if words:
            yield words[0]


def addresses():
    """(name, bytes) of a few socket addresses, as the kernel lays them out."""
    in4 = struct.pack("=H", socket.AF_INET) + struct.pack("!H", 6379) + socket.inet_aton("10.1.2.3") + bytes(8)
    in6 = (struct.pack("=H", socket.AF_INET6) + struct.pack("!H", 8080) + bytes(4)
           + socket.inet_pton(socket.AF_INET6, "::1") + bytes(4))
    mapped = (struct.pack("=H", socket.AF_INET6) + struct.pack("!H", 80) + bytes(4)
              + socket.inet_pton(socket.AF_INET6, "::ffff:10.0.0.7") + bytes(4))
    return [("in4", in4), ("in6", in6), ("mapped", mapped), ("short", in6[:20])]


def write(kind, name, data):
    os.makedirs(os.path.join(OUT, kind), exist_ok=True)
    with open(os.path.join(OUT, kind, name), "wb") as f:
        f.write(data)


def main():
    eps = list(SEED_ENDPOINTS)
    for prefix, pattern in SOURCES.items():
        for path in sorted(glob.glob(os.path.join(TOP, pattern))):
            data = open(path, "rb").read()
            write("parse", prefix + "-" + os.path.basename(path), data)
            eps += endpoints(data.decode("utf-8", "replace"))
    for name, text in HANDMADE.items():
        write("parse", "hand-" + name + ".conf", text.encode())
        eps += endpoints(text)
    seen = []
    for ep in eps:
        if ep not in seen:
            seen.append(ep)
    addrs = addresses()
    for i, ep in enumerate(seen):
        # the seed endpoints with every address, the others with one in turn
        for j, (name, addr) in enumerate(addrs):
            if i < len(SEED_ENDPOINTS) or j == i % len(addrs):
                side = 3 if (i + j) % 3 == 0 else 0
                write("match", "ep%03d-side%d-%s" % (i, side, name), ep.encode() + b"\n" + bytes([side]) + addr)


if __name__ == "__main__":
    main()
