# public.sh - the captures nobody here wrote, as three Debian packages ship
# them (tests/install-deps.sh installs those): python3-dpkt's examples
# (Wireshark's classic http.cap among them, an IPv6 HTTP exchange, DNS,
# two truncated files), gopacket's pcap files and the pcapng test suite
# of both byte orders (pcapgo/tests/{be,le}: sections, interfaces, option
# and block kinds, a version-2 section), and pcapfix's examples (a sound
# capture, a damaged one, one without its file header). Sourced by
# t_decode_vs_tshark.sh and t_scan.sh.
# shellcheck shell=bash

PUBLIC_DIRS=(/usr/share/doc/python3-dpkt/examples/data
    /usr/share/gocode/src/github.com/google/gopacket/pcap
    /usr/share/gocode/src/github.com/google/gopacket/pcapgo/tests/be
    /usr/share/gocode/src/github.com/google/gopacket/pcapgo/tests/le
    /usr/share/doc/pcapfix/examples)

# public_captures: their paths, one a line, sorted; status 1 (and a line
# on stderr) if a package's directory is missing.
public_captures() {
    local d missing=0
    for d in "${PUBLIC_DIRS[@]}"; do
        [[ -d $d ]] || { echo "public.sh: $d is missing: run tests/install-deps.sh" >&2; missing=1; }
    done
    ((missing == 0)) || return 1
    find "${PUBLIC_DIRS[@]}" -maxdepth 1 -type f \( -name '*.pcap' -o -name '*.pcapng' \) | sort
}
