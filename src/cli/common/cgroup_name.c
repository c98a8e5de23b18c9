/*
 * cgroup_name.c - the name people give a cgroup (nf_cgroup.h): the
 * container, Kubernetes pod or systemd unit its path is made of, as their
 * tools print them, read from the path alone (a pure function).
 *
 * The shapes it knows, by who makes them:
 *   systemd        /system.slice/nginx.service, .../session-3.scope
 *   Docker         /system.slice/docker-<64 hex>.scope (systemd driver),
 *                  /docker/<64 hex> (cgroupfs driver)
 *   Podman         /machine.slice/libpod-<64>.scope, libpod-conmon-<64>.scope,
 *                  /libpod_parent/libpod-<64> (cgroupfs)
 *   containerd     cri-containerd-<64>.scope;  CRI-O  crio-<64>.scope
 *   Kubernetes     /kubepods.slice/kubepods-<qos>-pod<uid with '_'>.slice/<container>
 *                  (systemd driver; the guaranteed class has no <qos>),
 *                  /kubepods/<qos>/pod<uid>/<64 hex> (cgroupfs driver)
 * Docker and Podman print 12 hex digits of an id, crictl 13.
 */
#include "nf_cgroup.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The most components a path is read for (deeper ones are left out). */
#define MAX_PARTS 64

/* One component of a path: its first byte and length (no '/'). */
struct part {
	const char *s;
	size_t n;
};

/* The container prefixes and how many digits of the id their tools print. */
static const struct {
	const char *prefix;
	int digits;
} containers[] = {
	{ "docker-", 12 },	   { "libpod-conmon-", 12 }, { "libpod-", 12 },
	{ "cri-containerd-", 13 }, { "crio-conmon-", 13 },   { "crio-", 13 },
};

/* Writes the formatted name into out of len bytes, cut with "..." if it
 * does not fit. */
__attribute__((format(printf, 3, 4))) static void say(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (len == 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	if (n >= (int)len && len > 3)
		memcpy(out + len - 4, "...", 4);
}

/* rel split at '/' into p (empty components left out); their number. */
static size_t split(const char *rel, struct part *p)
{
	size_t k = 0;

	while (*rel && k < MAX_PARTS) {
		size_t n = strcspn(rel, "/");

		if (n)
			p[k++] = (struct part){ rel, n };
		rel += n + (rel[n] == '/');
	}
	return k;
}

static int has_suffix(struct part p, const char *sfx)
{
	size_t k = strlen(sfx);

	return p.n > k && memcmp(p.s + p.n - k, sfx, k) == 0;
}

static int has_prefix(struct part p, const char *pfx)
{
	size_t k = strlen(pfx);

	return p.n >= k && memcmp(p.s, pfx, k) == 0;
}

/* Is p (with ".scope" cut) n lowercase hex digits? */
static int is_hex_id(struct part p, size_t n)
{
	if (has_suffix(p, ".scope"))
		p.n -= strlen(".scope");
	if (p.n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((p.s[i] >= '0' && p.s[i] <= '9') || (p.s[i] >= 'a' && p.s[i] <= 'f')))
			return 0;
	return 1;
}

/* The container part p names, after parent (NULL at the top), into out:
 * 1, or 0 when p names none. A bare id names one only under "docker". */
static int container(struct part p, const struct part *parent, char *out, size_t len)
{
	for (size_t i = 0; i < sizeof(containers) / sizeof(containers[0]); i++) {
		size_t k = strlen(containers[i].prefix);
		struct part id = { p.s + k, p.n - k };

		if (has_prefix(p, containers[i].prefix) && is_hex_id(id, 64)) {
			say(out, len, "%s%.*s", containers[i].prefix, containers[i].digits, id.s);
			return 1;
		}
	}
	if (parent && parent->n == 6 && memcmp(parent->s, "docker", 6) == 0 && is_hex_id(p, 64)) {
		say(out, len, "docker-%.12s", p.s);
		return 1;
	}
	return 0;
}

/* The pod uid of a kubepods component p: "pod<uid>" (cgroupfs) or
 * "kubepods[-<qos>]-pod<uid>.slice" (systemd, '-' of the uid as '_'),
 * into uid (of 64 bytes) with '-' restored. 1, or 0 when p is none. */
static int pod_uid(struct part p, char *uid)
{
	size_t i, start = 0;

	if (has_suffix(p, ".slice"))
		p.n -= strlen(".slice");
	for (i = 0; i < p.n && !has_prefix(p, "pod"); i++) /* systemd's: after the last '-' */
		if (p.s[i] == '-')
			start = i + 1;
	p.s += start;
	p.n -= start;
	if (!has_prefix(p, "pod") || p.n - 3 < 32 || p.n - 3 > 36)
		return 0;
	for (i = 3; i < p.n; i++) {
		char c = p.s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-' || c == '_'))
			return 0;
		uid[i - 3] = c == '_' ? '-' : c;
	}
	uid[i - 3] = '\0';
	return 1;
}

/* "pod <uid>[/<container>]" when p[0..k) is a Kubernetes pod's path: a
 * component holding "kubepods", then the pod's. 1, or 0. */
static int pod(const struct part *p, size_t k, char *out, size_t len)
{
	char uid[64], ctr[NF_CGROUP_NAME_MAX];
	size_t i = 0;

	while (i < k && !memmem(p[i].s, p[i].n, "kubepods", 8))
		i++;
	for (i++; i < k && !pod_uid(p[i], uid); i++)
		;
	if (i >= k)
		return 0;
	if (i + 1 < k && container(p[i + 1], &p[i], ctr, sizeof(ctr)))
		say(out, len, "pod %s/%s", uid, ctr);
	else if (i + 1 < k && is_hex_id(p[i + 1], 64))
		say(out, len, "pod %s/%.13s", uid, p[i + 1].s);
	else
		say(out, len, "pod %s", uid);
	return 1;
}

/* Is p a systemd unit that holds processes (not a slice)? */
static int is_unit(struct part p)
{
	static const char *const sfx[] = { ".service", ".scope", ".socket", ".mount", ".swap" };

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
		if (has_suffix(p, sfx[i]))
			return 1;
	return 0;
}

/* The innermost systemd unit of p[0..k) into out: 1, or 0 if none. */
static int unit(const struct part *p, size_t k, char *out, size_t len)
{
	for (size_t i = k; i-- > 0;)
		if (is_unit(p[i])) {
			say(out, len, "%.*s", (int)p[i].n, p[i].s);
			return 1;
		}
	return 0;
}

void nf_cgroup_name(const char *rel, char *out, size_t len)
{
	struct part p[MAX_PARTS];
	size_t k, i;

	if (!rel)
		rel = "";
	k = split(rel, p);
	if (k == 0) {
		say(out, len, "/");
		return;
	}
	if (pod(p, k, out, len))
		return;
	for (i = k; i-- > 0;)
		if (container(p[i], i ? &p[i - 1] : NULL, out, len))
			return;
	if (!unit(p, k, out, len))
		say(out, len, "%s%s", rel[0] == '/' ? "" : "/", rel);
}
