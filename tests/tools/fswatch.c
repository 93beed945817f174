// SPDX-License-Identifier: MIT
/*
 * fswatch OUT PATH...: inotify on each PATH (files or directories), one
 * line per event into OUT ("open PATH", "create PATH/NAME"), flushed at
 * once, until killed.  Prints "ready" on stdout once the watches are set.
 * The security tests use it to see whether a file was ever opened and in
 * which order a directory's names appeared.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[sizeof(struct inotify_event) + NAME_MAX + 1] = { 0 };
	int fd = inotify_init1(IN_CLOEXEC);
	FILE *out;

	if (argc < 3 || fd < 0)
		return 2;
	out = fopen(argv[1], "w");
	if (!out)
		return 2;
	for (int i = 2; i < argc; i++)
		if (inotify_add_watch(fd, argv[i],
				      IN_OPEN | IN_CREATE | IN_MOVED_TO) !=
		    i - 1) {
			perror(argv[i]);
			return 2;
		}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		for (char *p = buf; n > 0 && p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;
			const char *what =
				e->mask & IN_OPEN ? "open" : "create";

			if (e->wd >= 1 && e->wd < argc - 1)
				fprintf(out, "%s %s%s%s\n", what,
					argv[e->wd + 1], e->len ? "/" : "",
					e->len ? e->name : "");
			fflush(out);
			p += sizeof(*e) + e->len;
		}
		if (n <= 0)
			return 0;
	}
}
