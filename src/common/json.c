/*
 * json.c - escaping a byte for a JSON string (see nf_json.h).
 */
#include "nf_json.h"

const char *nf_json_char(unsigned char c, char buf[NF_JSON_CHAR_MAX])
{
	static const char hex[] = "0123456789abcdef";
	char *p = buf;

	if (c == '"' || c == '\\') {
		*p++ = '\\';
		*p++ = (char)c;
	} else if (c < 0x20 || c == 0x7f) {
		*p++ = '\\';
		*p++ = 'u';
		*p++ = '0';
		*p++ = '0';
		*p++ = hex[c >> 4];
		*p++ = hex[c & 0xf];
	} else {
		*p++ = (char)c;
	}
	*p = '\0';
	return buf;
}
