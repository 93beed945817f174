// SPDX-License-Identifier: MIT
/*
 * A process that lies in its link map, as an attacker's would: the
 * l_name of each shared object after the main program is rewritten to
 * one of the paths given (a FIFO, a file the attacker may not read), so
 * that a debugger walking r_debug in its core opens those paths.  It
 * prints "ready PID" and then waits for a line on stdin (for `kcoredump
 * pid`), or with --abort dies of SIGABRT (for the real core_pattern).
 *   linkmap-crash [--abort] PATH...
 */
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct link_map *l = _r_debug.r_map;
	bool do_abort = argc > 1 && strcmp(argv[1], "--abort") == 0;
	int i = do_abort ? 2 : 1, n = 0;
	char line[64];

	/* The first entry is the program itself (an empty name). */
	for (l = l ? l->l_next : NULL; l && i < argc; l = l->l_next, i++) {
		l->l_name = argv[i];
		n++;
	}
	printf("ready %d %d\n", (int)getpid(), n);
	fflush(stdout);
	if (do_abort) {
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return 0;
}
