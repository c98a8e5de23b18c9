/*
 * capdump.c - every frame of a capture as the packet side reads it, one
 * line each, for t_decode_vs_tshark.sh to compare with tshark's fields:
 *   SECONDS.NANOSECONDS DIR SRC DST SPORT DPORT SEQ ACK LEN FLAGS WIN MSS WSCALE
 * (tab-separated; a frame that is no TCP segment: its time, dir, and the
 * skip's name). DIR is 0 unknown, 1 in, 2 out. Ends with the reader's
 * error on standard error and exit status 1, if there is one.
 * Usage: capdump [-c] FILE (- for standard input). -c: no line per frame,
 * only the count of frames and of each decode result at the end (the
 * reader's and decoder's own speed: `time capdump -c BIG.pcap`).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "wire/nf_cap.h"
#include "wire/nf_pkt.h"

static void print_frame(const struct nf_frame *f)
{
	struct nf_pkt p;
	enum nf_pkt_skip why;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	memset(&p, 0, sizeof(p));
	p.dir = f->dir;
	why = nf_pkt_decode(f->link, 0, f->data, f->caplen, f->origlen, &p);
	printf("%llu.%09llu\t%u", (unsigned long long)(f->ts_ns / 1000000000u),
	       (unsigned long long)(f->ts_ns % 1000000000u), p.dir);
	if (why != NF_SKIP_NONE) {
		printf("\t%s\n", nf_pkt_skip_name(why));
		return;
	}
	inet_ntop(p.family, p.saddr, s, sizeof(s));
	inet_ntop(p.family, p.daddr, d, sizeof(d));
	printf("\t%s\t%s\t%u\t%u\t%u\t%u\t%u\t0x%02x\t%u\t%u\t%d\n", s, d, p.sport, p.dport, p.seq,
	       p.ack, p.len, p.flags, p.win, p.mss, p.wscale);
}

/* Decodes every frame, counting the results; prints the counts. */
static int count_frames(struct nf_cap *c)
{
	unsigned long long n[NF_SKIP_NKINDS] = { 0 }, frames = 0, bytes = 0;
	struct nf_frame f;
	struct nf_pkt p;
	int r;

	while ((r = nf_cap_next(c, &f)) > 0) {
		p.dir = f.dir;
		n[nf_pkt_decode(f.link, 0, f.data, f.caplen, f.origlen, &p)]++;
		bytes += p.len; /* used, so that nothing is optimised away */
		frames++;
	}
	printf("%llu frames", frames);
	for (int i = 0; i < NF_SKIP_NKINDS; i++)
		printf(", %llu %s", n[i], nf_pkt_skip_name(i));
	printf("; %llu bytes read, %llu payload bytes\n", (unsigned long long)nf_cap_bytes(c), bytes);
	return r;
}

int main(int argc, char **argv)
{
	char err[NF_CAP_ERR_MAX];
	struct nf_cap *c;
	struct nf_frame f;
	int fd, r, counts = argc == 3 && strcmp(argv[1], "-c") == 0;
	const char *file = argv[argc - 1];

	if (argc != 2 && !counts) {
		fprintf(stderr, "usage: capdump [-c] FILE\n");
		return 2;
	}
	fd = strcmp(file, "-") ? open(file, O_RDONLY) : 0;
	if (fd < 0) {
		perror(file);
		return 2;
	}
	c = nf_cap_open(fd, file, err);
	if (!c) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (counts)
		r = count_frames(c);
	else
		while ((r = nf_cap_next(c, &f)) > 0)
			print_frame(&f);
	if (r < 0)
		fprintf(stderr, "%s\n", nf_cap_error(c));
	nf_cap_close(c);
	return r < 0;
}
