/* SPDX-License-Identifier: MIT */
/*
 * The sandbox of the processes forked to run libdwfl on hostile data
 * (sandbox.c); not installed.
 */
#ifndef KCOREDUMP_SANDBOX_H
#define KCOREDUMP_SANDBOX_H

#include <stdbool.h>

/*
 * Install the seccomp filter of a process forked to run libdwfl on
 * hostile data (sandbox.c): no open(), only its own descriptors, memory
 * and exiting.  Needs no-new-privileges first; false if not installed.
 */
bool kcore_sandbox_seccomp(void);
/*
 * The resource limits of such a process: cpu_seconds of CPU, no files
 * written, no processes, 1 GiB of address space (not under ASan).
 */
void kcore_sandbox_rlimits(unsigned cpu_seconds);
/* The unprivileged user the sandboxed helpers run as by default. */
#define KCORE_NOBODY 65534u

#endif
