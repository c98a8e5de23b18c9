/*
 * api_check.c - nf_fix_inode and nf_fix_listener (src/cli/fix/nf_fix.h), the
 * functions watch --fix calls, driven by tests/fix/run.sh against real
 * processes; linked with the command's own fix objects.
 * Usage: api_check inode PID INO FD      (FD -1: looked up)
 *        api_check listener PID PORT
 * Prints "rc R before B recorded X nodelay N" (R 0 or a negative errno).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fix/nf_fix.h"

int main(int argc, char **argv)
{
	struct nf_fix_done d = { .before = -1 };
	int rc;

	if (argc == 5 && strcmp(argv[1], "inode") == 0)
		rc = nf_fix_inode(atoi(argv[2]), strtoul(argv[3], NULL, 10), atoi(argv[4]), &d);
	else if (argc == 4 && strcmp(argv[1], "listener") == 0)
		rc = nf_fix_listener(atoi(argv[2]), 0, atoi(argv[3]), &d);
	else
		return 2;
	printf("rc %d before %d recorded %d nodelay %d\n", rc, d.before, d.recorded, rc ? -1 : d.sock.nodelay);
	return 0;
}
