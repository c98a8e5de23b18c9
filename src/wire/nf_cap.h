/*
 * nf_cap.h - reading a capture file: pcap (both byte orders, µs and ns
 * timestamps) and pcapng (several sections and interfaces, each with its
 * own link type and timestamp resolution), from any file descriptor
 * (a pipe too: `tcpdump -w - | naglefix scan -`). src/wire/pcap.c,
 * src/wire/pcapng.c and src/wire/cap.c (the format sniffed from the
 * first four bytes, the buffered reader both share).
 *
 * Memory is fixed at open (a read buffer of a few MiB at most), whatever
 * the file's size; a record or block longer than NF_CAP_RECORD_MAX is
 * an error, not an allocation, except a pcapng block that carries no
 * packet and defines nothing read (statistics, names, custom blocks):
 * that is read through, whatever its length.
 * A link type nf_pkt_decode does not know (pcap's file header, an IDB)
 * is an error at the header that names it. pcapng's simple packet block
 * carries no time: its frame gets the section's last timestamp (0
 * before any) and interface 0.
 */
#ifndef NF_CAP_H
#define NF_CAP_H

#include <stddef.h>
#include <stdint.h>

#define NF_CAP_RECORD_MAX (1u << 20) /* the longest packet record or block read */
#define NF_CAP_ERR_MAX 512

/* One captured frame. data stays valid until the next nf_cap_next or
 * nf_cap_close. */
struct nf_frame {
	uint64_t ts_ns;   /* ns since the epoch */
	uint64_t offset;  /* byte offset of its record or block in the file */
	uint32_t link;    /* NF_LINK_* (nf_pkt.h) of its interface */
	uint32_t caplen;  /* bytes in data */
	uint32_t origlen; /* the frame's length on the wire */
	uint8_t dir;      /* enum nf_pkt_dir: pcapng's epb_flags, else unknown */
	const uint8_t *data;
};

struct nf_cap;

/*
 * Opens the capture read from fd (not closed by us until nf_cap_close),
 * named name in messages. Reads its file header. Returns the reader, or
 * NULL with err holding one line "NAME: offset N: why" (not a capture, a
 * truncated header, an unknown version) or "NAME: why" (no memory).
 */
struct nf_cap *nf_cap_open(int fd, const char *name, char err[NF_CAP_ERR_MAX]);

/*
 * The next frame into *f. Returns 1 with *f set, 0 at a clean end of the
 * file, -1 on an error (nf_cap_error says it: "NAME: offset N: why", the
 * offset of the record or block at fault: truncated, a length beyond the
 * file or the snaplen, an impossible block length, an unknown interface,
 * a read error). After 0 or -1 every later call returns the same.
 * Blocks that carry no packet (pcapng's statistics, name resolution,
 * custom blocks) are skipped.
 */
int nf_cap_next(struct nf_cap *c, struct nf_frame *f);

/* The message of the last error, "" if none. */
const char *nf_cap_error(const struct nf_cap *c);

/* Bytes read so far from fd. */
uint64_t nf_cap_bytes(const struct nf_cap *c);

/* Frees c; closes nothing. NULL is allowed. */
void nf_cap_close(struct nf_cap *c);

#endif
