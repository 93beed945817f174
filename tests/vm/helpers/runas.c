// SPDX-License-Identifier: MIT
/*
 * runas UID GID PROG [ARGS...]: run PROG as UID:GID with no
 * supplementary groups (busybox has no setpriv).
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	uid_t u;
	gid_t g;

	if (argc < 4)
		return 2;
	u = (uid_t)strtoul(argv[1], NULL, 10);
	g = (gid_t)strtoul(argv[2], NULL, 10);
	if (setgroups(0, NULL) < 0 || setgid(g) < 0 || setuid(u) < 0) {
		perror("runas");
		return 2;
	}
	execv(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
