/*
 * request.c - what a client of the metrics endpoint asks (nf_req_parse):
 * an HTTP/1.x request head read as bytes from outside, every index
 * checked against the length. Only GET and HEAD of /metrics are served;
 * header lines are read for their end and their bytes only.
 */
#include "metrics_int.h"

#include <string.h>

#define METHOD_MAX 16
#define PATH "/metrics"

/* The index of the first '\n' of buf[from..len-1], or len. */
static size_t line_end(const char *buf, size_t from, size_t len)
{
	const char *nl = from < len ? memchr(buf + from, '\n', len - from) : NULL;

	return nl ? (size_t)(nl - buf) : len;
}

/* Is c a byte no request head has (a control byte but CR, LF and TAB)? */
static int bad_byte(unsigned char c)
{
	return (c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f;
}

/* Could buf[0..n-1] begin a request line ("GET /x HTTP/1.1")? A method
 * of capitals, a space, a target. */
static int could_begin(const char *buf, size_t n)
{
	size_t i = 0;

	while (i < n && i <= METHOD_MAX && buf[i] >= 'A' && buf[i] <= 'Z')
		i++;
	if (i == n)
		return i <= METHOD_MAX;
	return i > 0 && i <= METHOD_MAX && buf[i] == ' ';
}

/* The whole request line buf[0..n-1] (CR and LF cut off): what it asks. */
static enum nf_req request_line(const char *buf, size_t n)
{
	const char *sp1 = memchr(buf, ' ', n), *sp2;
	size_t plen;

	if (!sp1 || !could_begin(buf, n))
		return NF_REQ_BAD;
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - buf));
	if (!sp2 || sp2 == sp1 + 1)
		return NF_REQ_BAD;
	if ((size_t)(buf + n - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return NF_REQ_BAD;
	plen = (size_t)(sp2 - (sp1 + 1));
	if (!(plen == strlen(PATH) || (plen > strlen(PATH) && sp1[1 + strlen(PATH)] == '?')) ||
	    memcmp(sp1 + 1, PATH, strlen(PATH)) != 0)
		return NF_REQ_NOT_FOUND;
	if ((size_t)(sp1 - buf) == 3 && memcmp(buf, "GET", 3) == 0)
		return NF_REQ_GET;
	if ((size_t)(sp1 - buf) == 4 && memcmp(buf, "HEAD", 4) == 0)
		return NF_REQ_HEAD;
	return NF_REQ_METHOD;
}

/* Does buf[from..to-1] hold a byte no request head has? */
static int has_bad_byte(const char *buf, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (bad_byte((unsigned char)buf[i]))
			return 1;
	return 0;
}

/* The header lines from buf[from] on: 1 once the empty line that ends
 * the head is whole, -1 if a line has a bad byte first, 0 if neither
 * yet. Nothing after the empty line is read. */
static int headers(const char *buf, size_t from, size_t len)
{
	while (from < len) {
		size_t e = line_end(buf, from, len);

		if (has_bad_byte(buf, from, e))
			return -1;
		if (e == len)
			return 0;
		if (e == from || (e == from + 1 && buf[from] == '\r'))
			return 1;
		from = e + 1;
	}
	return 0;
}

enum nf_req nf_req_parse(const char *buf, size_t len, size_t max)
{
	size_t e = line_end(buf, 0, len), n = e;
	enum nf_req r;
	int h;

	if (has_bad_byte(buf, 0, e) || !could_begin(buf, e))
		return NF_REQ_BAD;
	if (e == len)
		return len >= max ? NF_REQ_TOO_LARGE : NF_REQ_MORE;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if ((r = request_line(buf, n)) == NF_REQ_BAD || (h = headers(buf, e + 1, len)) > 0)
		return r;
	if (h < 0)
		return NF_REQ_BAD;
	return len >= max ? NF_REQ_TOO_LARGE : NF_REQ_MORE;
}
