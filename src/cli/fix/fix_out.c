/*
 * fix_out.c - the lines naglefix fix prints: one a socket, as a table
 * row or (--json) a JSON line with the audit log's field names (pid, fd,
 * side, local, peer) where they mean the same, and the name of the
 * process's cgroup (its service or container, as watch names a holder),
 * and, for attach --now, whether the socket was marked for its
 * setsockopt program.
 */
#include "fix_int.h"

#include <stdio.h>
#include <string.h>

#include "cli/common/nf_cgroup.h"
#include "cli/common/nf_cli.h"

#define CGROUP_COLUMN 20 /* the text table's CGROUP width (longer names overflow it) */

static int header_done;

void nf_fix_out_header(FILE *out)
{
	header_done = 1;
	fprintf(out, "%-7s %-*s %4s  %-7s  %-22s %-22s %-11s %-7s  %s\n", "PID", CGROUP_COLUMN,
		"CGROUP", "FD", "SIDE", "LOCAL", "PEER", "STATE", "NODELAY", "WHAT");
}

/* The name of r's process's cgroup, "" if unknown: r's, else read now
 * (the last pid's kept: a process's rows come together). */
static const char *cgroup_of(const struct nf_fix_row *r)
{
	static char name[NF_CGROUP_NAME_MAX];
	static pid_t last;

	if (r->cgroup)
		return r->cgroup;
	if (r->pid != last) {
		nf_cgroup_name_of(r->pid, name, sizeof(name));
		last = r->pid;
	}
	return name;
}

static const char *result_name(enum nf_fix_result r)
{
	switch (r) {
	case NF_FIX_SET: return "set";
	case NF_FIX_WOULD_SET: return "would_set";
	case NF_FIX_UNCHANGED: return "unchanged";
	case NF_FIX_LEFT: return "left";
	case NF_FIX_SKIPPED: return "skipped";
	case NF_FIX_UNDONE: return "undone";
	case NF_FIX_WOULD_UNDO: return "would_undo";
	}
	return "?";
}

/* What the table says for r (JSON says result_name). */
static const char *text_name(enum nf_fix_result r)
{
	switch (r) {
	case NF_FIX_WOULD_SET: return "would set";
	case NF_FIX_UNCHANGED: return "already on";
	case NF_FIX_WOULD_UNDO: return "would undo";
	default: return result_name(r);
	}
}

static void json_row(FILE *out, const struct nf_fix_row *r)
{
	char l[NF_ADDR_MAX], p[NF_ADDR_MAX];

	fprintf(out, "{\"event\":\"%s\",\"pid\":%d,\"fd\":%d,\"inode\":%lu,\"side\":\"%s\",",
		r->undo ? "fix_undo" : "fix", (int)r->pid, r->s->fd, r->s->ino, r->side);
	fprintf(out, "\"local\":\"%s\",\"peer\":\"%s\",\"state\":\"%s\",",
		nf_fix_sock_local(r->s, l), nf_fix_sock_peer(r->s, p), nf_fix_state_name(r->s->state));
	if (*cgroup_of(r)) {
		fputs("\"cgroup\":", out);
		nf_cli_json_str(out, cgroup_of(r));
		fputc(',', out);
	}
	if (r->action)
		fprintf(out, "\"action\":\"%s\",", r->action);
	if (r->rule) {
		fputs("\"rule\":", out);
		nf_cli_json_str(out, r->rule);
		fputc(',', out);
	}
	fprintf(out, "\"nodelay_before\":%d,\"nodelay_after\":%d,\"result\":\"%s\"", r->before,
		r->after, result_name(r->result));
	if (r->why) {
		fputs(",\"why\":", out);
		nf_cli_json_str(out, r->why);
	}
	fputs("}\n", out);
}

static void text_row(FILE *out, const struct nf_fix_row *r)
{
	char l[NF_ADDR_MAX], p[NF_ADDR_MAX], nd[16];

	if (r->before < 0)
		snprintf(nd, sizeof(nd), "?");
	else
		snprintf(nd, sizeof(nd), "%d -> %d", r->before, r->after);
	fprintf(out, "%-7d %-*s %4d  %-7s  %-22s %-22s %-11s %-7s  %s", (int)r->pid, CGROUP_COLUMN,
		*cgroup_of(r) ? cgroup_of(r) : "-", r->s->fd, r->side,
		nf_fix_sock_local(r->s, l), nf_fix_sock_peer(r->s, p), nf_fix_state_name(r->s->state),
		nd, text_name(r->result));
	if (r->action && r->rule)
		fprintf(out, " (%s, %s)", r->action, r->rule);
	if (r->marked > 0)
		fputs(", marked", out);
	else if (r->marked < 0)
		fprintf(out, ", not marked (%s): its own setsockopt can turn it off",
			strerror(-r->marked));
	if (r->why)
		fprintf(out, ": %s", r->why);
	fputc('\n', out);
}

void nf_fix_out_row(FILE *out, int json, const struct nf_fix_row *r)
{
	if (json) {
		json_row(out, r);
	} else {
		if (!header_done)
			nf_fix_out_header(out);
		text_row(out, r);
	}
	fflush(out);
}
