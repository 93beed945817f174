/* SPDX-License-Identifier: MIT */
/* The live-process source, shared by process*.c; not installed. */
#ifndef KCOREDUMP_PROCESS_INTERNAL_H
#define KCOREDUMP_PROCESS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kcoredump/process.h"

/* One register set note of a thread (NT_PRFPREG, NT_X86_XSTATE, ...). */
struct kcore_proc_regset {
	uint32_t type;
	const char *name; /* "CORE" or "LINUX" */
	void *data;
	size_t len;
};

#define KCORE_PROC_MAX_REGSETS 20
/* The general registers of NT_PRSTATUS: x86_64's user_regs_struct (27),
 * arm64's user_pt_regs (x0-x30, sp, pc, pstate: 34). */
#if defined(__aarch64__)
#define KCORE_PROC_NGREG 34
#else
#define KCORE_PROC_NGREG 27
#endif

struct kcore_proc_thread {
	pid_t tid;
	bool seized;
	bool stopped;	/* waited for its stop */
	bool gone;	/* exited while we looked */
	bool foreign;	/* its TID is no longer one of this process's */
	int inject_sig; /* signal to hand back on detach */
	bool has_siginfo;
	unsigned char siginfo[128];
	bool has_regs;
	unsigned char regs[KCORE_PROC_NGREG * 8];
	struct kcore_proc_regset regsets[KCORE_PROC_MAX_REGSETS];
	size_t nregsets;
};

/* A parsed /proc/PID/smaps entry with what the kernel's filter needs. */
struct kcore_proc_vma {
	struct kcore_process_mapping m;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	bool shared;	/* VmFlags sh (VM_SHARED) */
	bool dontdump;	/* dd */
	bool io;	/* io (VM_IO) */
	bool pfnmap;	/* pf */
	bool hugetlb;	/* ht */
	bool readable;	/* rd */
	bool has_anon;	/* Anonymous or Swap: anon_vma is set */
	bool special;	/* [vdso], [vvar], [vsyscall], ... */
	bool deleted;	/* " (deleted)": i_nlink is 0 */
	bool exec_file; /* the file has an execute bit */
	char *path;	/* owned name */
};

struct kcore_process {
	pid_t pid;
	pid_t mm_tid; /* a live thread: the leader, unless it exited */
	/* Its pid in its own PID namespace (the host's when none), and how
	 * many namespaces deep it is as this /proc sees it (0: unknown). */
	int32_t ns_pid;
	unsigned ns_depth;
	struct kcore_process_opts opts;
	char procfs[256];
	/* The process itself, not its number: /proc/PID opened once (the
	 * kernel ties the directory to the struct pid, so after the process
	 * is reaped nothing opens through it, whoever gets the PID next),
	 * and a pidfd (-1 before Linux 5.3) that polls readable when it has
	 * exited. */
	int dir_fd;
	int pidfd;
	bool mm_gone; /* a read of mem_fd found the address space gone */
	/* A 32-bit (ia32) process on x86_64: ptrace hands out the regsets
	 * of the kernel's 32-bit view, and the core is the one compat
	 * binfmt_elf writes (ELFCLASS32, EM_386, 32-bit notes). */
	bool compat;
	size_t nthreads_read; /* threads whose registers were read */
	struct kcore_process_info info;
	struct kcore_proc_thread *threads;
	size_t nthreads;
	struct kcore_proc_vma *vmas;
	size_t nvmas;
	struct kcore_process_mapping *mappings; /* info.mappings */
	uint64_t page_size;
	uint64_t stop_start_ns;
	/* /proc/PID/mem, opened while every thread is stopped: the kernel
	 * binds it to the address space of that moment (proc_mem_open()),
	 * so it never reads another process, nor this one after execve. */
	int mem_fd;
	int pagemap_fd;
	bool scan_ioctl;  /* PAGEMAP_SCAN works */
	void *scan_cache; /* regions found by the last scan */
	uint64_t *pagemap_buf;
	/* Process-wide note contents. */
	unsigned char *auxv;
	size_t auxv_len;
	unsigned char psinfo[136];
};

uint64_t kcore_proc_now_ns(void);

/* process-capture.c: ptrace stop, registers; process-notes.c: per-thread
 * and process-wide notes; process-procfs.c: the /proc files below. */
struct kcore_error *kcore_proc_capture(struct kcore_process *p);
void kcore_proc_detach(struct kcore_process *p);
/* Build the notes in the kernel's order into *ret (malloc()ed). */
struct kcore_error *kcore_proc_build_notes(struct kcore_process *p,
					   unsigned char **ret,
					   size_t *ret_len);

/* process-maps.c: mappings and the coredump filter. */
struct kcore_error *kcore_proc_read_maps(struct kcore_process *p);
void kcore_proc_apply_filter(struct kcore_process *p);
/* A private anonymous mapping (heap, stacks, MAP_PRIVATE|MAP_ANONYMOUS):
 * the kernel's dumper writes a hole for every page the page tables do not
 * hold (get_dump_page() with FOLL_DUMP), and only there does "not
 * present" in pagemap mean "zeros in the core". */
bool kcore_proc_vma_anon_private(const struct kcore_proc_vma *v);
/* Forget what the last scan found, so that the next
 * kcore_proc_next_data() reads the page tables again. */
void kcore_proc_scan_forget(struct kcore_process *p);
/* The first data byte at or after addr in [addr, end) of mapping m, and
 * where that data ends: *ret_start == end if there is none. */
struct kcore_error *kcore_proc_next_data(struct kcore_process *p,
					 const struct kcore_process_mapping *m,
					 uint64_t addr, uint64_t end,
					 uint64_t *ret_start,
					 uint64_t *ret_end);
/* Read process memory; a short count (with errno set) on a fault. */
ssize_t kcore_proc_read_mem(struct kcore_process *p, void *buf, size_t len,
			    uint64_t addr);
/* Open a file of the process's /proc directory (through dir_fd). */
int kcore_proc_open_file(struct kcore_process *p, const char *name, int flags);
/* Whether the process has exited (its pidfd polls readable, or its /proc
 * directory is empty). */
bool kcore_proc_exited(struct kcore_process *p);
/* The error for a failed access to the process: KCORE_ERR_NOT_FOUND when
 * it has exited (ENOENT, ESRCH, or the pidfd says so), KCORE_ERR_ACCESS
 * in the words of ptrace for EACCES/EPERM, else KCORE_ERR_OS. */
struct kcore_error *kcore_proc_error(struct kcore_process *p, int errnum,
				     const char *what);
/* Read a whole /proc/PID file (NUL-terminated); NULL with errno set. */
char *kcore_proc_slurp(struct kcore_process *p, const char *name,
		       size_t *ret_len);
void kcore_proc_free(struct kcore_process *p);

#endif
