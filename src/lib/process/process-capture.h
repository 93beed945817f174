/* SPDX-License-Identifier: MIT */
/*
 * The capture of a live process's own declarations (process-capture.c and
 * the files it is cut into; not installed): what one part calls in
 * another.  From the bottom up: process-procfs.c (the process's /proc
 * files), process-notes.c (the notes built from what was read) and
 * process-capture.c (the stop: threads seized, their registers read, and
 * let go).
 */
#ifndef KCOREDUMP_PROCESS_CAPTURE_H
#define KCOREDUMP_PROCESS_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "process-internal.h"

/* i386's user_regs_struct: 17 words (a compat task's NT_PRSTATUS). */
#define IA32_NGREG 17

/* The fields of /proc/PID[/task/TID]/stat after the command name. */
struct proc_stat {
	char state;
	int ppid, pgrp, sid;
	unsigned long flags;
	unsigned long long utime, stime, cutime, cstime;
	long nice;
};

/* ---- process-procfs.c ---- */
bool kcore_proc_read_stat(struct kcore_process *p, const char *name,
			  struct proc_stat *st);
uint64_t kcore_proc_status_field(const char *text, const char *key, int base);
int32_t kcore_proc_ns_id(const char *text, const char *key, int32_t fallback,
			 unsigned *ret_depth);
int32_t kcore_proc_ns_parent(const struct kcore_process *p, int32_t ppid,
			     unsigned depth);

/* ---- process-notes.c ---- */
/* NT_PRPSINFO's contents (p->psinfo), and the process's ids in its own
 * PID namespace. */
struct kcore_error *kcore_proc_fill_psinfo(struct kcore_process *p);

#endif
