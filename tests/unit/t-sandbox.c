// SPDX-License-Identifier: MIT
/*
 * The seccomp filter of the libdwfl helpers (sandbox.c): a helper may
 * signal itself (abort(), raise()) but no other process, even one of the
 * same uid (the build-ID helper runs as nobody, like other daemons).
 * Issue 27 item 7: tgkill of any pid was allowed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"
#include "tap.h"

/* In a child: install the filter, then exit with a bit per result. */
static int probe(pid_t other)
{
	int bits = 0;

	if (!kcore_sandbox_seccomp())
		return 64;
	/* Signal 0: only the permission check, nothing is delivered. */
	if (syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0) == 0)
		bits |= 1;
	if (syscall(SYS_tgkill, other, other, 0) < 0 && errno == EPERM)
		bits |= 2;
	if (syscall(SYS_tgkill, (long)getpid() | (1l << 32), other, 0) < 0 &&
	    errno == EPERM)
		bits |= 4;
	return bits;
}

int main(void)
{
	pid_t other = fork(), child;
	int st = 0;

	if (other < 0)
		tap_skip_all("fork failed");
	if (other == 0) {
		pause();
		_exit(0);
	}
	child = fork();
	if (child == 0)
		_exit(probe(other));
	waitpid(child, &st, 0);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 64)
		tap_skip_all("no seccomp filter here");
	ok(WIFEXITED(st), "the filtered child exits (status 0x%x)", st);
	ok(WIFEXITED(st) && (WEXITSTATUS(st) & 1), "it may tgkill itself");
	ok(WIFEXITED(st) && (WEXITSTATUS(st) & 2),
	   "tgkill of another process (same uid) is EPERM");
	ok(WIFEXITED(st) && (WEXITSTATUS(st) & 4),
	   "so is a tgid that equals its own in the low 32 bits only");
	return tap_done();
}
