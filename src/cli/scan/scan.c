/*
 * scan.c - naglefix scan [--json] CAPTURE...: the stalls of a packet
 * capture (pcap or pcapng; "-" for standard input), one row per end that
 * held, with the config line that fixes it.
 *
 * The captures are read in the order given into one detector, so the
 * files of a rotated capture (tcpdump -C, -G) make one timeline. A
 * capture that cannot be read whole is named with the byte offset at
 * fault; what was read up to there is still reported, and the exit
 * status is 1. A file that is no capture at all is named, and when no
 * capture could be read there is no table and no verdict: only the errors.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scan_int.h"
#include "nf_scan.h"
#include "cli/common/nf_cli.h"
#include "cli/common/nf_wire_out.h"
#include "wire/nf_cap.h"
#include "wire/nf_pkt.h"
#include "wire/nf_wire.h"

const char nf_cli_usage_scan[] =
	"usage: naglefix scan [--json] CAPTURE...\n"
	"Reads packet captures (pcap or pcapng, as tcpdump -w and dumpcap write them;\n"
	"- for standard input) and lists every connection end whose Nagle held a\n"
	"segment until the other end's delayed ACK: holder, peer, side, stalls, sizes,\n"
	"median and total stall, and the config line that fixes it.\n"
	"  --json      one JSON line a row (naglefix report reads them)\n"
	"  -h, --help  this text\n";

/* Frames of a scan that gave no segment, by why; read: a capture was
 * opened (without one, there is nothing to judge). */
struct skipped {
	unsigned long long n[NF_SKIP_NKINDS];
	int read;
};

/* Feeds every frame of the capture on fd to w. 0, or -1 after printing
 * the reader's message (what was read still counts: sk->read is then set
 * if the file was a capture at all). */
static int scan_fd(struct nf_wire *w, int fd, const char *name, struct skipped *sk)
{
	char err[NF_CAP_ERR_MAX];
	struct nf_cap *c = nf_cap_open(fd, name, err);
	int rc;

	if (!c) {
		return nf_cli_warnx(-1, "%s", err);
	}
	sk->read = 1;
	rc = nf_cli_scan_feed(c, w, sk->n);
	if (rc < 0)
		nf_cli_warnx(-1, "%s", nf_cap_error(c));
	nf_cap_close(c);
	return rc < 0 ? -1 : 0;
}

/* Opens and scans one capture ("-": standard input). */
static int scan_path(struct nf_wire *w, const char *path, struct skipped *sk)
{
	char q[NF_CLI_QUOTE_MAX];
	const char *why;
	int fd, rc;

	if (strcmp(path, "-") == 0)
		return scan_fd(w, STDIN_FILENO, "-", sk);
	nf_cli_quote(path, q);
	if ((fd = nf_cli_open_input(path, &why)) < 0) {
		return nf_cli_warnx(-1, "%s: %s%s", q, why,
				    fd == -2 ? ", not a capture (a file, a FIFO, or - for standard input)"
					     : "");
	}
	rc = scan_fd(w, fd, q, sk);
	close(fd);
	return rc;
}

/* The frames that were not TCP segments, if any, on stderr. */
static void print_skipped(const struct skipped *sk)
{
	char line[NF_SKIP_NKINDS * 48] = "";
	size_t len = 0;

	for (int i = 1; i < NF_SKIP_NKINDS; i++)
		if (sk->n[i] && len < sizeof(line))
			len += snprintf(line + len, sizeof(line) - len, "%s%llu %s", len ? ", " : "",
					sk->n[i], nf_pkt_skip_name(i));
	if (len)
		nf_cli_warnx(0, "frames skipped: %s", line);
}

/* The rows of w: the table, or --json lines, on stdout. */
static void print_rows(struct nf_wire *w, int json)
{
	struct nf_holder *const *rows;
	struct nf_wire_stats st;
	size_t n = nf_wire_holders(w, &rows);

	nf_wire_stats(w, &st);
	if (json)
		for (size_t i = 0; i < n; i++)
			nf_cli_wire_json(stdout, rows[i], "scan");
	else
		nf_cli_wire_table(stdout, rows, n, &st);
	/* the rows out first: with 2>&1 the stderr lines then follow whole
	 * lines, not the middle of one */
	fflush(stdout);
	nf_cli_wire_stats(&st);
}

/* scan's options: the long ones; getopt_long's short ones are ":h". */
static const struct option scan_longopts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options anywhere until "--" (getopt_long permutes the CAPTUREs to
 * argv[optind..]): sets *json; 0, 1 for --help, or NF_EXIT_USAGE after
 * saying what is wrong. */
static int scan_args(int argc, char **argv, int *json)
{
	int opt;

	optind = 0; /* 0, not 1: getopt_long starts afresh, permuting */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", scan_longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': *json = 1; break;
		case 'h': return 1;
		default: return nf_cli_bad_option("scan", opt, argc, argv, scan_longopts);
		}
	}
	if (optind == argc)
		return nf_cli_usage_error("scan", "no CAPTURE given (- reads standard input)");
	return 0;
}

int nf_cli_scan(int argc, char **argv)
{
	struct skipped sk = { { 0 }, 0 };
	int json = 0, rc = scan_args(argc, argv, &json);
	struct nf_wire *w;

	if (rc == 1)
		fputs(nf_cli_usage_scan, stdout);
	if (rc != 0)
		return rc == 1 ? 0 : rc;
	if (!(w = nf_wire_new(NULL))) {
		return nf_cli_warnx(1, "out of memory");
	}
	for (int i = optind; i < argc; i++)
		if (scan_path(w, argv[i], &sk) < 0)
			rc = 1;
	if (sk.read) /* no capture read: the errors alone, no verdict on nothing */
		print_rows(w, json);
	print_skipped(&sk);
	nf_wire_free(w);
	return rc;
}
