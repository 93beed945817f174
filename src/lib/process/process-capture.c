// SPDX-License-Identifier: MIT
/*
 * Capturing a running process: seize and interrupt every thread (threads
 * that appear meanwhile too), read each thread's register sets, and let
 * it run again.  The stop lasts only as long as the register reads.  The
 * notes follow fs/binfmt_elf.c (fill_note_info, write_note_info): the
 * first thread's NT_PRSTATUS, then NT_PRPSINFO, NT_SIGINFO (only when a
 * signal was being delivered), NT_AUXV and NT_FILE, then that thread's
 * other register notes, then each other thread's (process-notes.c
 * builds them; process-capture.h lists the parts this file is cut into).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process-capture.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#ifndef NT_386_IOPERM
#define NT_386_IOPERM 0x201
#endif
#ifndef NT_X86_SHSTK
#define NT_X86_SHSTK 0x204
#endif
#ifndef NT_386_TLS
#define NT_386_TLS 0x200
#endif
#ifndef NT_PRXFPREG
#define NT_PRXFPREG 0x46e62b7f
#endif
#define REGSET_BUF (64u << 10)

#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401
#endif
#ifndef NT_ARM_HW_BREAK
#define NT_ARM_HW_BREAK 0x402
#endif
#ifndef NT_ARM_HW_WATCH
#define NT_ARM_HW_WATCH 0x403
#endif
#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif
#ifndef NT_ARM_SVE
#define NT_ARM_SVE 0x405
#endif
#ifndef NT_ARM_PAC_MASK
#define NT_ARM_PAC_MASK 0x406
#endif
#ifndef NT_ARM_PACA_KEYS
#define NT_ARM_PACA_KEYS 0x407
#endif
#ifndef NT_ARM_PACG_KEYS
#define NT_ARM_PACG_KEYS 0x408
#endif
#ifndef NT_ARM_TAGGED_ADDR_CTRL
#define NT_ARM_TAGGED_ADDR_CTRL 0x409
#endif
#ifndef NT_ARM_PAC_ENABLED_KEYS
#define NT_ARM_PAC_ENABLED_KEYS 0x40a
#endif
#ifndef NT_ARM_SSVE
#define NT_ARM_SSVE 0x40b
#endif
#ifndef NT_ARM_ZA
#define NT_ARM_ZA 0x40c
#endif
#ifndef NT_ARM_ZT
#define NT_ARM_ZT 0x40d
#endif
#ifndef NT_ARM_FPMR
#define NT_ARM_FPMR 0x40e
#endif
#ifndef NT_ARM_POE
#define NT_ARM_POE 0x40f
#endif

/* ---- the stop ---- */

static struct kcore_error *add_thread(struct kcore_process *p, pid_t tid,
				      struct kcore_proc_thread **ret)
{
	struct kcore_proc_thread *t;

	t = realloc(p->threads, (p->nthreads + 1) * sizeof(*t));
	if (!t)
		return &kcore_error_nomem;
	p->threads = t;
	t = &p->threads[p->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	*ret = t;
	return NULL;
}

static bool known_thread(const struct kcore_process *p, pid_t tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return true;
	return false;
}

static struct kcore_error *seize_error(struct kcore_process *p, pid_t tid,
				       int errnum)
{
	if (errnum == EPERM)
		return kcore_error_create(
			KCORE_ERR_ACCESS, errnum, NULL,
			"cannot attach to thread %d of process %d with "
			"ptrace: it is traced already, or ptrace is not "
			"allowed (needs the same user and "
			"kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE)",
			(int)tid, (int)p->pid);
	return kcore_error_create(KCORE_ERR_OS, errnum, NULL,
				  "cannot attach to thread %d of process %d",
				  (int)tid, (int)p->pid);
}

/* A thread that exited (a leader that called pthread_exit stays a
 * zombie while the others run) cannot be attached: EPERM. */
static bool thread_is_zombie(struct kcore_process *p, pid_t tid)
{
	char name[64];
	struct proc_stat st;

	snprintf(name, sizeof(name), "task/%d/stat", (int)tid);
	return !kcore_proc_read_stat(p, name, &st) || st.state == 'Z' ||
	       st.state == 'X';
}

/* Seize and interrupt the threads not seen before; *ret_new counts them.
 * A TID is a number: once seized, the thread is looked up again through
 * the process's own directory, and one that is not there (the thread
 * exited and a thread of another process got its TID) is only stopped
 * and let go, never read. */
static struct kcore_error *seize_new(struct kcore_process *p, size_t *ret_new)
{
	struct dirent *de;
	DIR *dir;
	int fd;

	*ret_new = 0;
	fd = openat(p->dir_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return kcore_proc_error(p, e,
					"cannot list the threads of the "
					"process");
	}
	while ((de = readdir(dir))) {
		struct kcore_proc_thread *t;
		struct kcore_error *err;
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
		char name[64];

		if (tid <= 0 || known_thread(p, tid))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
			if (errno == ESRCH || thread_is_zombie(p, tid))
				continue; /* exited meanwhile */
			err = seize_error(p, tid, errno);
			closedir(dir);
			return err;
		}
		err = add_thread(p, tid, &t);
		if (err) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			closedir(dir);
			return err;
		}
		t->seized = true;
		snprintf(name, sizeof(name), "task/%d", (int)tid);
		t->foreign = faccessat(p->dir_fd, name, F_OK, 0) != 0;
		if (!p->stop_start_ns)
			p->stop_start_ns = kcore_proc_now_ns();
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0 &&
		    errno == ESRCH)
			t->gone = true;
		(*ret_new) += !t->foreign;
	}
	closedir(dir);
	return NULL;
}

/* Wait until t reports its stop (or its end).  With nohang, return
 * false at once when it has nothing to report yet. */
static bool wait_stop(struct kcore_proc_thread *t, bool nohang)
{
	for (;;) {
		int status, sig, event;
		pid_t r = waitpid(t->tid, &status,
				  __WALL | (nohang ? WNOHANG : 0));

		if (r == 0)
			return false;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			t->gone = true; /* ECHILD: it is gone */
			return true;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			t->gone = true;
			return true;
		}
		if (!WIFSTOPPED(status))
			continue;
		sig = WSTOPSIG(status);
		event = status >> 16;
		t->stopped = true;
		if (event == PTRACE_EVENT_STOP)
			return true; /* our interrupt, or a group stop */
		/*
		 * A signal-delivery stop: a signal was arriving.  It is
		 * handed back on detach, and it is what NT_SIGINFO is for.
		 */
		t->inject_sig = sig;
		if (ptrace(PTRACE_GETSIGINFO, t->tid, NULL, t->siginfo) == 0)
			t->has_siginfo = true;
		return true;
	}
}

/*
 * Wait for every seized thread: the others first, the leader last and
 * without blocking.  The kernel reports a leader that exited only once
 * every other thread is gone (delay_group_leader()), and a killed thread
 * we trace stays until we wait for it: blocking on the leader first hung
 * when the process was killed during the stop.  A leader that is a zombie
 * while other threads live (pthread_exit) is gone for us.
 */
static void wait_all(struct kcore_process *p)
{
	struct kcore_proc_thread *leader = NULL;
	char name[64];

	for (size_t i = 0; i < p->nthreads; i++) {
		struct kcore_proc_thread *t = &p->threads[i];

		if (!t->seized || t->stopped || t->gone)
			continue;
		if (t->tid == p->pid)
			leader = t;
		else
			wait_stop(t, false);
	}
	snprintf(name, sizeof(name), "task/%d/stat", (int)p->pid);
	for (unsigned n = 0; leader && !wait_stop(leader, true); n++) {
		struct proc_stat st;

		if (!kcore_proc_read_stat(p, name, &st) || st.state == 'Z' ||
		    st.state == 'X') {
			leader->gone = true;
			break;
		}
		usleep(n < 100 ? 20 : 1000);
	}
}

/* NT_PRSTATUS registers, then the notes the kernel writes per thread,
 * in the order of its regset view (fill_thread_core_info walks
 * user_x86_64_view or user_aarch64_view; regsets a kernel lacks fail
 * with EINVAL here and are left out, as are inactive ones). */
struct regset_def {
	uint32_t type;
	const char *name;
};

static struct kcore_error *read_regsets(struct kcore_process *p,
					struct kcore_proc_thread *t)
{
	static const struct regset_def sets[] = {
#if defined(__aarch64__)
		/* arch/arm64/kernel/ptrace.c, enum aarch64_regset (6.12) */
		{ NT_PRFPREG, "CORE" },
		{ NT_ARM_TLS, "LINUX" },
		{ NT_ARM_HW_BREAK, "LINUX" },
		{ NT_ARM_HW_WATCH, "LINUX" },
		{ NT_ARM_FPMR, "LINUX" },
		{ NT_ARM_SYSTEM_CALL, "LINUX" },
		{ NT_ARM_SVE, "LINUX" },
		{ NT_ARM_SSVE, "LINUX" },
		{ NT_ARM_ZA, "LINUX" },
		{ NT_ARM_ZT, "LINUX" },
		{ NT_ARM_PAC_MASK, "LINUX" },
		{ NT_ARM_PAC_ENABLED_KEYS, "LINUX" },
		{ NT_ARM_PACA_KEYS, "LINUX" },
		{ NT_ARM_PACG_KEYS, "LINUX" },
		{ NT_ARM_TAGGED_ADDR_CTRL, "LINUX" },
		{ NT_ARM_POE, "LINUX" },
#else
		{ NT_PRFPREG, "CORE" },
		{ NT_386_IOPERM, "LINUX" },
		{ NT_X86_XSTATE, "LINUX" },
		{ NT_X86_SHSTK, "LINUX" },
#endif
	};
#if defined(__x86_64__)
	/* A compat task's view is user_x86_32_view (enum x86_regset_32):
	 * i387 FSAVE, FXSAVE, XSTATE, the TLS descriptors, the I/O bitmap. */
	static const struct regset_def sets32[] = {
		{ NT_PRFPREG, "CORE" },	    { NT_PRXFPREG, "LINUX" },
		{ NT_X86_XSTATE, "LINUX" }, { NT_386_TLS, "LINUX" },
		{ NT_386_IOPERM, "LINUX" },
	};
#endif
	struct iovec iov = { t->regs, sizeof(t->regs) };
	unsigned char *buf;
	bool compat = false;
	const struct regset_def *tab = sets;
	size_t nsets = sizeof(sets) / sizeof(sets[0]);

	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)NT_PRSTATUS,
		   &iov) != 0) {
		if (errno == ESRCH) {
			t->gone = true;
			return NULL;
		}
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot read the registers of "
					  "thread %d",
					  (int)t->tid);
	}
#if defined(__x86_64__)
	/* ptrace hands a compat task's i386 user_regs_struct out. */
	compat = iov.iov_len == IA32_NGREG * 4;
	if (compat) {
		tab = sets32;
		nsets = sizeof(sets32) / sizeof(sets32[0]);
	}
#endif
	if (iov.iov_len != sizeof(t->regs) && !compat)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "thread %d has %zu bytes of general "
					  "registers, neither the %zu of "
					  "64-bit processes nor those of a "
					  "32-bit one this machine runs",
					  (int)t->tid, (size_t)iov.iov_len,
					  sizeof(t->regs));
	if (p->nthreads_read++ && compat != p->compat)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "thread %d runs %s code and an "
					  "earlier thread the other: a core "
					  "holds one word size",
					  (int)t->tid,
					  compat ? "32-bit" : "64-bit");
	p->compat = compat;
	t->has_regs = true;
	/* Large enough for any XSAVE layout (AMX tiles included). */
	buf = malloc(REGSET_BUF);
	if (!buf)
		return &kcore_error_nomem;
	for (size_t i = 0; i < nsets; i++) {
		struct kcore_proc_regset *rs;
		uint32_t type = tab[i].type;
		const char *name = tab[i].name;

		iov.iov_base = buf;
		iov.iov_len = REGSET_BUF;
		/* Inactive sets fail (ENODEV, ENXIO): no note, like the
		 * kernel's ->active check. */
		if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)type,
			   &iov) != 0 ||
		    iov.iov_len == 0)
			continue;
#if defined(__aarch64__)
		/* ptrace reports the regset's maximum size (n * size, up to
		 * the buffer); the core note holds what the regset wrote,
		 * for SVE, SSVE and ZA the size in their header
		 * (user_sve_header.size, user_za_header.size). */
		if ((type == NT_ARM_SVE || type == NT_ARM_SSVE ||
		     type == NT_ARM_ZA) &&
		    iov.iov_len >= 4) {
			uint32_t size;

			memcpy(&size, buf, 4);
			if (size >= 4 && size < iov.iov_len)
				iov.iov_len = size;
		}
#endif
		rs = &t->regsets[t->nregsets];
		rs->data = malloc(iov.iov_len);
		if (!rs->data) {
			free(buf);
			return &kcore_error_nomem;
		}
		memcpy(rs->data, buf, iov.iov_len);
		rs->len = iov.iov_len;
		rs->type = type;
		rs->name = name;
		t->nregsets++;
	}
	free(buf);
	return NULL;
}

void kcore_proc_detach(struct kcore_process *p)
{
	bool any = false;

	for (size_t i = 0; i < p->nthreads; i++) {
		struct kcore_proc_thread *t = &p->threads[i];

		if (!t->seized)
			continue;
		ptrace(PTRACE_DETACH, t->tid, NULL,
		       (void *)(uintptr_t)t->inject_sig);
		t->seized = false;
		any = true;
	}
	if (any && p->stop_start_ns) {
		p->info.stop_ns = kcore_proc_now_ns() - p->stop_start_ns;
		p->info.stopped = false;
	}
}

/* The leader first (gdb's current thread), then the others in /proc
 * order; threads that exited are dropped. */
static void order_threads(struct kcore_process *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nthreads; i++) {
		if (p->threads[i].gone || !p->threads[i].has_regs) {
			/* Not ours (still held with --stop): let it go. */
			if (p->threads[i].seized && !p->threads[i].gone)
				ptrace(PTRACE_DETACH, p->threads[i].tid, NULL,
				       (void *)(uintptr_t)p->threads[i]
					       .inject_sig);
			for (size_t k = 0; k < p->threads[i].nregsets; k++)
				free(p->threads[i].regsets[k].data);
			continue;
		}
		p->threads[n++] = p->threads[i];
	}
	p->nthreads = n;
	for (size_t i = 1; i < n; i++) {
		if (p->threads[i].tid == p->pid) {
			struct kcore_proc_thread t = p->threads[i];

			memmove(&p->threads[1], &p->threads[0],
				i * sizeof(*p->threads));
			p->threads[0] = t;
			break;
		}
	}
}

static struct kcore_error *open_mem(struct kcore_process *p)
{
	uint64_t entry;

	if (p->mem_fd < 0)
		p->mem_fd = kcore_proc_open_file(p, "mem", O_RDONLY);
	if (p->mem_fd < 0)
		return kcore_proc_error(p, errno, "cannot open /proc/PID/mem");
	if (pread(p->pagemap_fd, &entry, sizeof(entry), 0) != sizeof(entry))
		return kcore_proc_error(p, ESRCH,
					"its address space changed (execve) or "
					"went away before the stop");
	return NULL;
}

struct kcore_error *kcore_proc_capture(struct kcore_process *p)
{
	struct kcore_error *err = NULL;
	uint64_t t0 = kcore_proc_now_ns();
	size_t added;

	/* Process-wide facts that do not need the stop. */
	err = kcore_proc_fill_psinfo(p);
	if (err)
		return err;
	p->auxv = (unsigned char *)kcore_proc_slurp(p, "auxv", &p->auxv_len);
	if (!p->auxv || !p->auxv_len) /* empty: the address space is gone */
		return kcore_proc_error(p, p->auxv ? ESRCH : errno,
					"cannot read /proc/PID/auxv");
	/* Stop every thread; threads created meanwhile by threads that
	 * were still running show up on the next pass. */
	do {
		err = seize_new(p, &added);
		if (!err)
			wait_all(p);
	} while (!err && added);
	for (size_t i = 0; !err && i < p->nthreads; i++)
		if (p->threads[i].stopped && !p->threads[i].gone &&
		    !p->threads[i].foreign)
			err = read_regsets(p, &p->threads[i]);
	/* Every thread is stopped: none can call execve, so the address
	 * space /proc/PID/mem binds to now is the one of these registers.
	 * A pagemap opened before that still sees an address space: no
	 * execve or exit came between. */
	if (!err)
		err = open_mem(p);
	if (err || !p->opts.keep_stopped)
		kcore_proc_detach(p);
	else
		p->info.stopped = true;
	if (err)
		return err;
	order_threads(p);
	if (!p->nthreads)
		return kcore_error_create(KCORE_ERR_NOT_FOUND, ESRCH, NULL,
					  "process %d has no threads left",
					  (int)p->pid);
	p->info.nthreads = (unsigned)p->nthreads;
	p->info.capture_ns = kcore_proc_now_ns() - t0;
	return NULL;
}
