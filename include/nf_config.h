/*
 * nf_config.h - turning the environment and the config file into a policy.
 */
#ifndef NF_CONFIG_H
#define NF_CONFIG_H

#include <stddef.h>

#include "nf_policy.h"

#define NF_CONF_DEFAULT_PATH "/etc/naglefix.conf"
#define NF_CONF_SIZE_MAX (1 << 20) /* the most a policy file may hold: 1 MiB */
#define NF_CONF_ERR_MAX 1280       /* room for a message of nf_config_*: a path and a reason */

/*
 * Reads a whole file into a NUL-terminated malloc'd string. Uses raw
 * system calls, so it is safe inside the preloaded library. Returns 0 or
 * a negative errno (-ENOENT, -EACCES, -EFBIG past NF_CONF_SIZE_MAX bytes,
 * -ENOMEM, ...).
 */
int nf_config_read_file(const char *path, char **text);

/*
 * Parses the file at path into *p. On error returns negative errno with
 * "PATH:LINE: reason" or "PATH: reason" in err, and *p empty.
 */
int nf_config_parse_file(const char *path, struct nf_policy *p,
			 char *err, size_t errlen);

/*
 * Checks the file at path as nf_config_parse_file reads it, on to its
 * end: each error ("PATH: reason" for the file, "PATH:LINE: reason" for
 * a line, the first being nf_config_parse_file's message) is passed to
 * each, in order. *p holds the rules of the lines without error
 * (nf_policy_free it). Returns the number of errors (0: the library takes
 * the file), or -ENOMEM.
 */
int nf_config_check_file(const char *path, struct nf_policy *p,
			 void (*each)(const char *err, void *arg), void *arg);

/*
 * The action NAGLEFIX_MODE's value mode names, as nf_config_load takes
 * it, into *a. Returns 0, or -EINVAL with the library's message in err.
 */
int nf_config_mode(const char *mode, enum nf_action *a, char *err, size_t errlen);

/*
 * The file to read for conf_path (NAGLEFIX_CONF; NULL or "" when unset):
 * conf_path itself; NULL for "none" (no file at all, not even the
 * default one); unset, the default file if it exists, else NULL.
 */
const char *nf_config_path(const char *conf_path);

/*
 * Builds the process policy: conf_path (or the default file if it exists
 * when conf_path is NULL; no file at all when it is "none"), then mode (an
 * action name, may be NULL) replaces the default action (and its options,
 * unless it names the same action). secure (a setuid or setcap program):
 * conf_path and mode are ignored, and the default file is read only if
 * root owns it and nobody else can write it. On any error: *p is a
 * pass-everything policy, the reason is in err, and the return is negative.
 */
int nf_config_load(struct nf_policy *p, const char *conf_path,
		   const char *mode, int secure, char *err, size_t errlen);

#endif
