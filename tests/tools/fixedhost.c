// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD shim for tests/integration/golden-outputs.sh: the host name,
 * uname(), the working directory and the wall clock a dump records in its
 * metadata (and a kdump in its header) are fixed, so that every run on every
 * machine writes the same bytes for the same input.  CLOCK_REALTIME is
 * fixed, and CLOCK_BOOTTIME, the clock of a dump's time map (all its
 * cells read at 0): the monotonic clock still times the run.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* 2026-01-01T00:00:00Z */
#define FIXED_TIME 1767225600

int uname(struct utsname *u)
{
	memset(u, 0, sizeof(*u));
	snprintf(u->sysname, sizeof(u->sysname), "Linux");
	snprintf(u->nodename, sizeof(u->nodename), "golden");
	snprintf(u->release, sizeof(u->release), "6.12.0-golden");
	snprintf(u->version, sizeof(u->version), "#1 SMP");
	snprintf(u->machine, sizeof(u->machine), "x86_64");
	return 0;
}

int gethostname(char *name, size_t len)
{
	snprintf(name, len, "golden");
	return 0;
}

/* The working directory: dumps record their source's absolute path. */
char *getcwd(char *buf, size_t size)
{
	static const char dir[] = "/golden";

	if (!buf)
		return strdup(dir);
	if (size < sizeof(dir)) {
		errno = ERANGE;
		return NULL;
	}
	memcpy(buf, dir, sizeof(dir));
	return buf;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);

	if (clock == CLOCK_REALTIME || clock == CLOCK_BOOTTIME) {
		ts->tv_sec = clock == CLOCK_REALTIME ? FIXED_TIME : 1000;
		ts->tv_nsec = 0;
		return 0;
	}
	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(
			RTLD_NEXT, "clock_gettime");
	return real(clock, ts);
}
