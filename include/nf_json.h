/*
 * nf_json.h - a byte inside a JSON string, as the audit log (audit_log.c)
 * and the command's report --json (cli/report/report.c) both write it.
 */
#ifndef NF_JSON_H
#define NF_JSON_H

/* Room for the longest form, \u00XX, and its NUL. */
#define NF_JSON_CHAR_MAX 7

/*
 * The form of byte c inside a JSON string, written to buf: \" and \\, \u00XX
 * for a control byte or DEL, else c itself. Returns buf. Calls nothing.
 */
const char *nf_json_char(unsigned char c, char buf[NF_JSON_CHAR_MAX]);

#endif
