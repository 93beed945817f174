// SPDX-License-Identifier: MIT
/*
 * crash-name NAME DESC: name the task NAME (PR_SET_NAME: what %e and
 * NT_PRPSINFO carry), write "pid P" and the real and effective uids into
 * DESC, then abort().  Installed setuid root it is the setuid program
 * whose core must stay root's; with an escape sequence in NAME it checks
 * what the handler writes to the kernel log.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	FILE *f;

	if (argc < 3)
		return 2;
	prctl(PR_SET_NAME, argv[1], 0, 0, 0);
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "pid %d\nuid %d\neuid %d\n", (int)getpid(), (int)getuid(),
		(int)geteuid());
	fclose(f);
	signal(SIGABRT, SIG_DFL);
	abort();
}
