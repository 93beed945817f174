/* SPDX-License-Identifier: MIT */
/*
 * A running process as a source: its threads' registers captured during a
 * short ptrace stop, notes like the kernel's core dumper writes them, and
 * one PT_LOAD per mapping the coredump filter selects.  Memory is read
 * through /proc/PID/mem, opened while the threads are stopped and so
 * bound to that address space (never another process's after the PID is
 * reused), only where /proc/PID/pagemap says a page can hold data, so
 * untouched address space is never read.  kcore_dump() then writes it
 * like any other source.
 */
#ifndef KCOREDUMP_PROCESS_H
#define KCOREDUMP_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "source.h"

#ifdef __cplusplus
extern "C" {
#endif

/* /proc/PID/coredump_filter bits (MMF_DUMP_*, see core(5)). */
enum {
	KCORE_DUMP_ANON_PRIVATE = 1u << 0,
	KCORE_DUMP_ANON_SHARED = 1u << 1,
	KCORE_DUMP_MAPPED_PRIVATE = 1u << 2,
	KCORE_DUMP_MAPPED_SHARED = 1u << 3,
	KCORE_DUMP_ELF_HEADERS = 1u << 4,
	KCORE_DUMP_HUGETLB_PRIVATE = 1u << 5,
	KCORE_DUMP_HUGETLB_SHARED = 1u << 6,
	KCORE_DUMP_DAX_PRIVATE = 1u << 7,
	KCORE_DUMP_DAX_SHARED = 1u << 8,
};

struct kcore_process_opts {
	/* Use filter instead of /proc/PID/coredump_filter. */
	bool has_filter;
	uint32_t filter;
	/* Every mapping whole, VM_DONTDUMP ones too (not VM_IO/VM_PFNMAP,
	 * which cannot be read). */
	bool all_mappings;
	/* Keep the process stopped until kcore_process_resume() or
	 * kcore_source_destroy(), for a consistent snapshot. */
	bool keep_stopped;
	/* Find pages by reading /proc/PID/pagemap even where the
	 * PAGEMAP_SCAN ioctl works (tests; kernels before 6.7 always do). */
	bool pagemap_read;
	/* Root of the proc file system (NULL: "/proc"). */
	const char *procfs;
};

/* How a mapping's pages are found. */
enum kcore_process_read {
	KCORE_PROCESS_READ_NONE, /* nothing readable: vvar, vsyscall */
	KCORE_PROCESS_READ_SCAN, /* only pages pagemap says are present */
	KCORE_PROCESS_READ_ALL,	 /* every page (file and shared memory) */
};

struct kcore_process_mapping {
	uint64_t start, end;
	uint64_t offset;    /* file offset in bytes */
	char perms[5];	    /* "rw-p" */
	const char *name;   /* path, "[heap]" ..., or NULL if anonymous */
	bool has_file;	    /* vm_file is set: listed in NT_FILE */
	uint64_t dump_size; /* bytes from start the filter dumps */
	enum kcore_process_read read;
	const char *reason; /* why dumped or not, e.g. "anon-private" */
};

struct kcore_process_info {
	int32_t pid;
	unsigned nthreads;
	uint32_t filter; /* the coredump filter applied */
	/* "coredump_filter" (/proc/PID/coredump_filter), "option", or
	 * "default" (unreadable: a kernel without it, a zombie leader). */
	const char *filter_from;
	const char *pagemap_method; /* "PAGEMAP_SCAN" or "pagemap" */
	/* The stop: from the first PTRACE_INTERRUPT to the last detach
	 * (still running while the process is kept stopped). */
	uint64_t stop_ns;
	uint64_t capture_ns; /* registers and notes, including the stop */
	bool stopped;	     /* kept stopped, not yet resumed */
	size_t nmappings;
	const struct kcore_process_mapping *mappings;
	/* Counters of the memory reads so far. */
	uint64_t bytes_read;	/* process memory read */
	uint64_t bytes_scanned; /* address space pagemap looked at */
	uint64_t pagemap_calls; /* PAGEMAP_SCAN ioctls or pagemap reads */
	/* The process exited (or called execve) while its memory was read:
	 * what was not read yet is unreadable. */
	bool vanished;
};

/*
 * ptrace ties the process to the thread that attached it: with
 * keep_stopped, call kcore_process_resume() and kcore_source_destroy()
 * from the thread that opened the source (if that thread exits, the kernel
 * lets the process go).  Needs ptrace permission on pid (KCORE_ERR_ACCESS
 * otherwise) and an x86_64 process.  A process that does not exist, or
 * exits before its registers and mappings are captured, is
 * KCORE_ERR_NOT_FOUND; one that exits later leaves its unread memory
 * unreadable (read errors with errno ESRCH).
 */
struct kcore_error *
kcore_source_open_process(int32_t pid, const struct kcore_process_opts *opts,
			  struct kcore_source **ret);
/* The process view of a source opened with kcore_source_open_process(),
 * else NULL. */
const struct kcore_process_info *
kcore_source_process_info(const struct kcore_source *src);
/* Let a process kept stopped run again (no-op otherwise). */
void kcore_process_resume(struct kcore_source *src);

const char *kcore_process_read_name(enum kcore_process_read r);

#ifdef __cplusplus
}
#endif

#endif
