#!/usr/bin/env python3
"""make_corpus_cap.py: (re)writes the seed corpus tests/fuzz/corpus/cap/
of fuzz_cap.c: a few real captures of tests/wire/fixtures/ as they are
(tcpdump, dumpcap, editcap: pcap µs and ns, cooked v1 and v2, raw IP,
pcapng with two interfaces and two sections), and hand-made files for
what they do not show: big-endian pcap and pcapng, PPPoE, if_tsresol and
if_tsoffset, SPB and OPB, epb_flags, BSD loopback links, IPv4 options
and fragments, IPv6 extension headers, SYN options, and broken lengths.
Run it from anywhere; it only adds or replaces the files it names.
"""
import os
import shutil
import struct

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(TOP, "tests", "fuzz", "corpus", "cap")
FIX = os.path.join(TOP, "tests", "wire", "fixtures")
REAL = ["lo-s96.pcap", "lo-ns.pcap", "any-sll.pcap", "veth-sll2.pcap", "raw6.pcap",
        "qinq.pcap", "two-ifaces.pcapng", "to-ng.pcapng"]


def tcp(v6=False, payload=10, flags=0x18, opts=b"", ipopts=b"", ext=b"", first=6, frag=0):
    th = struct.pack(">HHIIBBHHH", 40000, 80, 1000, 2000, (20 + len(opts)) // 4 << 4, flags,
                     512, 0, 0) + opts
    body = th + bytes(payload)
    if v6:
        return (struct.pack(">IHBB", 0x60000000, len(ext) + len(body), first, 64) +
                bytes(15) + b"\x01" + bytes(15) + b"\x02" + ext + body)
    ihl = 5 + len(ipopts) // 4
    return (struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(body), 1, frag, 64, 6, 0,
                        bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + ipopts + body)


def eth(ip, v6=False, tags=()):
    h = b"\xaa" * 12
    for t in tags:
        h += struct.pack(">HH", t, 20)
    return h + struct.pack(">H", 0x86DD if v6 else 0x0800) + ip


def pppoe(ip, v6=False, tags=(), proto=None):
    """A PPPoE session frame carrying ip (PPP protocol proto, else IP's)."""
    h = b"\xaa" * 12
    for t in tags:
        h += struct.pack(">HH", t, 20)
    ppp = proto if proto is not None else (0x0057 if v6 else 0x0021)
    return h + struct.pack(">HBBHHH", 0x8864, 0x11, 0, 0x1234, len(ip) + 2, ppp) + ip


def pcap(frames, link, be=False, ns=False, snap=65535):
    e = ">" if be else "<"
    out = struct.pack(e + "IHHiIII", 0xA1B23C4D if ns else 0xA1B2C3D4, 2, 4, 0, 0, snap, link)
    for i, f in enumerate(frames):
        out += struct.pack(e + "IIII", 1700000000 + i, i * 1000, len(f), len(f)) + f
    return out


def block(e, btype, body):
    body += bytes(-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def opt(e, code, val):
    return struct.pack(e + "HH", code, len(val)) + val + bytes(-len(val) % 4)


def pcapng(be, blocks):
    e = ">" if be else "<"
    shb = block(e, 0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    return shb + b"".join(fn(e) for fn in blocks)


def idb(link, snap=0, opts=None):
    def f(e):
        return block(e, 1, struct.pack(e + "HHI", link, 0, snap) + (opts(e) if opts else b""))
    return f


def epb(ifid, ts, frame, flags=None):
    def f(e):
        o = (opt(e, 2, struct.pack(e + "I", flags)) + bytes(4)) if flags is not None else b""
        return block(e, 6, struct.pack(e + "IIIII", ifid, ts >> 32, ts & 0xFFFFFFFF, len(frame),
                                       len(frame)) + frame + bytes(-len(frame) % 4) + o)
    return f


def handmade():
    syn = tcp(flags=0x02, payload=0, opts=b"\x02\x04\x05\xb4\x01\x03\x03\x07\x04\x02\x00\x00")
    # hop-by-hop -> destination options -> AH (12 bytes) -> TCP
    ext6 = tcp(v6=True, first=0, ext=bytes([60, 0, 1, 4, 0, 0, 0, 0, 51, 0, 1, 4, 0, 0, 0, 0,
                                            6, 1] + [0] * 10))
    frag6 = tcp(v6=True, first=44, ext=bytes([6, 0, 0, 1, 0, 0, 0, 9]))
    v4opts = tcp(ipopts=b"\x01\x01\x01\x00")
    v4frag = tcp(frag=0x2000)
    files = {
        "pcap-be-us-ethernet": pcap([eth(syn), eth(tcp()), eth(tcp(v6=True), True)], 1, be=True),
        "pcap-le-ns-vlan": pcap([eth(tcp(), tags=(0x8100,)), eth(v4opts, tags=(0x88A8, 0x8100)),
                                 eth(v4frag)], 1, ns=True),
        "pcap-pppoe": pcap([pppoe(syn), pppoe(tcp(v6=True), True, tags=(0x8100,)),
                            pppoe(tcp(), proto=0xC021), pppoe(tcp())[:18]], 1),
        "pcap-be-ns-raw": pcap([tcp(), ext6, frag6, syn], 101, be=True, ns=True),
        "pcap-null-le": pcap([b"\x02\x00\x00\x00" + tcp(), b"\x1e\x00\x00\x00" + ext6], 0),
        "pcap-null-be": pcap([b"\x00\x00\x00\x02" + tcp(), b"\x00\x00\x00\x1c" + tcp(v6=True)], 0,
                             be=True),
        "pcap-loop": pcap([b"\x00\x00\x00\x02" + syn, b"\x00\x00\x00\x18" + ext6], 108),
        "pcap-ipv4-ipv6-links": pcap([tcp(), v4frag], 228),
        "pcap-sll2": pcap([struct.pack(">HHIHBB8s", 0x0800, 0, 1, 1, 4, 6, bytes(8)) + tcp()], 276),
        "pcap-snaplen-cut": pcap([eth(tcp(payload=1000))[:60]], 1, snap=60),
        "pcap-caplen-beyond-snaplen": pcap([eth(tcp(payload=100))], 1, snap=60),
        "pcap-truncated": pcap([eth(tcp())] * 3, 1)[:-7],
        "pcapng-le-flags": pcapng(False, [idb(1), epb(0, 1700000000000000, eth(syn), 1),
                                          epb(0, 1700000000000001, eth(tcp()), 2)]),
        "pcapng-be-tsresol": pcapng(True, [
            idb(101, 0, lambda e: opt(e, 9, b"\x09") + opt(e, 14, struct.pack(e + "q", 5)) +
                bytes(4)),
            idb(1, 0, lambda e: opt(e, 9, b"\x8a") + bytes(4)),
            epb(0, 1700000000000000000, ext6), epb(1, 12345, eth(tcp()), 1)]),
        "pcapng-spb-opb-others": pcapng(False, [
            lambda e: block(e, 4, b"\x00" * 8), idb(113, 96),
            lambda e: block(e, 3, struct.pack(e + "I", 80) + (b"\x00\x04" + bytes(12) +
                                                              b"\x08\x00" + tcp())[:80]),
            lambda e: block(e, 2, struct.pack(e + "HHIIII", 0, 0, 0, 99, 40, 40) + bytes(40) +
                            opt(e, 2, struct.pack(e + "I", 2))),
            lambda e: block(e, 5, bytes(20)), lambda e: block(e, 0xBAD, b"custom")]),
        "pcapng-two-sections": pcapng(False, [idb(1), epb(0, 1, eth(tcp()))]) +
        pcapng(True, [idb(101), idb(276), epb(1, 2, bytes(20) + tcp())]),
        "pcapng-bad-trailer": pcapng(False, [idb(1), epb(0, 1, eth(tcp()))])[:-4] + b"\x00\x01\x00\x00",
        "pcapng-unknown-interface": pcapng(False, [idb(1), epb(3, 1, eth(tcp()))]),
    }
    return files


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in REAL:
        shutil.copyfile(os.path.join(FIX, name), os.path.join(OUT, "real-" + name))
    for name, data in handmade().items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
