// SPDX-License-Identifier: MIT
/*
 * Capturing a running process: seize and interrupt every thread (threads
 * that appear meanwhile too), read each thread's register sets, and let
 * it run again.  The stop lasts only as long as the register reads.  The
 * notes follow fs/binfmt_elf.c (fill_note_info, write_note_info): the
 * first thread's NT_PRSTATUS, then NT_PRPSINFO, NT_SIGINFO (only when a
 * signal was being delivered), NT_AUXV and NT_FILE, then that thread's
 * other register notes, then each other thread's.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "process-internal.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

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
#ifndef NT_X86_XSAVE_LAYOUT
#define NT_X86_XSAVE_LAYOUT 0x205
#endif
#define REGSET_BUF (64u << 10)
/* Where the ptrace XSTATE regset stores XCR0 (the kernel's
 * USER_XSTATE_XCR0_WORD, in the FXSAVE area's software bytes). */
#define XSTATE_XCR0_OFFSET 464

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

/* The 64-bit layouts of include/uapi/linux/elfcore.h; x86_64 and arm64
 * differ only in the size of the register set. */
struct prstatus_native {
	int32_t si_signo, si_code, si_errno;
	int16_t cursig;
	uint16_t pad0;
	uint64_t sigpend, sighold;
	int32_t pid, ppid, pgrp, sid;
	int64_t utime[2], stime[2], cutime[2], cstime[2];
	uint64_t reg[KCORE_PROC_NGREG];
	int32_t fpvalid;
	int32_t pad1;
};
#if defined(__aarch64__)
_Static_assert(sizeof(struct prstatus_native) == 392,
	       "arm64 elf_prstatus is 392 bytes");
#else
_Static_assert(sizeof(struct prstatus_native) == 336,
	       "x86_64 elf_prstatus is 336 bytes");
#endif

struct prpsinfo_native {
	char state, sname, zomb;
	int8_t nice;
	uint32_t pad0;
	uint64_t flag;
	uint32_t uid, gid;
	int32_t pid, ppid, pgrp, sid;
	char fname[16];
	char psargs[80];
};
_Static_assert(sizeof(struct prpsinfo_native) == 136,
	       "64-bit elf_prpsinfo is 136 bytes");

/*
 * The 32-bit layouts compat binfmt_elf writes for an ia32 process on
 * x86_64 (compat_elf_prstatus, compat_elf_prpsinfo): longs and timevals
 * of 32 bits, 16-bit uid and gid (x86's __compat_uid_t), i386's
 * user_regs_struct (17 words).
 */
#define IA32_NGREG 17
struct prstatus_compat {
	int32_t si_signo, si_code, si_errno;
	int16_t cursig;
	uint16_t pad0;
	uint32_t sigpend, sighold;
	int32_t pid, ppid, pgrp, sid;
	int32_t utime[2], stime[2], cutime[2], cstime[2];
	uint32_t reg[IA32_NGREG];
	int32_t fpvalid;
};
_Static_assert(sizeof(struct prstatus_compat) == 144,
	       "i386 elf_prstatus is 144 bytes");

struct prpsinfo_compat {
	char state, sname, zomb;
	int8_t nice;
	uint32_t flag;
	uint16_t uid, gid;
	int32_t pid, ppid, pgrp, sid;
	char fname[16];
	char psargs[80];
};
_Static_assert(sizeof(struct prpsinfo_compat) == 124,
	       "i386 elf_prpsinfo is 124 bytes");

uint64_t kcore_proc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int kcore_proc_open_file(struct kcore_process *p, const char *name, int flags)
{
	static const char *const mm_files[] = { "smaps", "pagemap", "mem",
						"auxv", "cmdline" };
	char path[512];

	snprintf(path, sizeof(path), "%s", name);
	/* The address space through a live thread when the leader is a
	 * zombie (its own entries are empty then). */
	for (size_t i = 0;
	     p->mm_tid != p->pid && i < sizeof(mm_files) / sizeof(mm_files[0]);
	     i++)
		if (strcmp(name, mm_files[i]) == 0)
			snprintf(path, sizeof(path), "task/%d/%s",
				 (int)p->mm_tid, name);
	return openat(p->dir_fd, path, flags | O_CLOEXEC | O_NOCTTY);
}

bool kcore_proc_exited(struct kcore_process *p)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

	if (p->pidfd >= 0)
		return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
	/* Without a pidfd: a reaped process's directory opens nothing. */
	return faccessat(p->dir_fd, "stat", F_OK, 0) != 0 &&
	       (errno == ENOENT || errno == ESRCH);
}

struct kcore_error *kcore_proc_error(struct kcore_process *p, int errnum,
				     const char *what)
{
	if (errnum == ENOENT || errnum == ESRCH || kcore_proc_exited(p))
		return kcore_error_create(KCORE_ERR_NOT_FOUND, ESRCH, NULL,
					  "process %d exited before it was "
					  "captured (%s)",
					  (int)p->pid, what);
	if (errnum == EACCES || errnum == EPERM)
		return kcore_error_create(
			KCORE_ERR_ACCESS, errnum, NULL,
			"no ptrace access to process %d (%s): reading a "
			"process needs what a debugger needs, the same user "
			"and a dumpable process, or CAP_SYS_PTRACE",
			(int)p->pid, what);
	return kcore_error_create(KCORE_ERR_OS, errnum, NULL, "%s", what);
}

char *kcore_proc_slurp(struct kcore_process *p, const char *name,
		       size_t *ret_len)
{
	int fd = kcore_proc_open_file(p, name, O_RDONLY);
	size_t len = 0, cap = 4096;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			char *nb = realloc(buf, 2 * cap + 1);

			if (!nb) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

/* The fields of /proc/PID[/task/TID]/stat after the command name. */
struct proc_stat {
	char state;
	int ppid, pgrp, sid;
	unsigned long flags;
	unsigned long long utime, stime, cutime, cstime;
	long nice;
};

static bool read_stat(struct kcore_process *p, const char *name,
		      struct proc_stat *st)
{
	char *text = kcore_proc_slurp(p, name, NULL), *s;
	bool ok;

	memset(st, 0, sizeof(*st));
	if (!text)
		return false;
	/* The command name may hold spaces and ')': skip to the last. */
	s = strrchr(text, ')');
	ok = s && sscanf(s + 1,
			 " %c %d %d %d %*d %*d %lu %*u %*u %*u %*u %llu %llu "
			 "%llu %llu %*d %ld",
			 &st->state, &st->ppid, &st->pgrp, &st->sid, &st->flags,
			 &st->utime, &st->stime, &st->cutime, &st->cstime,
			 &st->nice) == 10;
	free(text);
	return ok;
}

/* "SigPnd:", "SigBlk:" (hex) and the first "Uid:"/"Gid:" (real) value. */
static uint64_t status_field(const char *text, const char *key, int base)
{
	const char *s = strstr(text, key);

	return s ? strtoull(s + strlen(key), NULL, base) : 0;
}

/*
 * The ids the kernel writes in a core are those of the crashing task's
 * own PID namespace (fill_prstatus(), fill_psinfo(): task_pid_vnr() and
 * its cousins), where /proc/PID/stat shows those of the namespace of this
 * /proc.  The "NSpid:", "NSpgid:" and "NSsid:" lines of status (Linux 4.1,
 * commit e4bc33245124) list an id in every namespace from this /proc's
 * down to the task's: the last one is what the kernel writes.  *ret_depth
 * is how many there are (0 without the line: then fallback is returned).
 */
static int32_t ns_id(const char *text, const char *key, int32_t fallback,
		     unsigned *ret_depth)
{
	const char *s = text ? strstr(text, key) : NULL;
	unsigned depth = 0;
	int32_t last = fallback;

	if (s) {
		s += strlen(key);
		for (;;) {
			char *end;
			long v = strtol(s, &end, 10);

			if (end == s || v < 0 || v > INT32_MAX)
				break;
			last = (int32_t)v;
			depth++;
			s = end;
			if (*s == '\n' || !*s)
				break;
		}
	}
	if (ret_depth)
		*ret_depth = depth;
	return depth ? last : fallback;
}

/*
 * The parent's pid as the task sees it: the parent's id at the task's
 * depth (the parent is in the task's namespace or an outer one: an outer
 * one lists fewer ids, and the kernel writes 0 for a parent it cannot see).
 */
static int32_t ns_parent(const struct kcore_process *p, int32_t ppid,
			 unsigned depth)
{
	char path[PATH_MAX], buf[2048];
	const char *s;
	unsigned k = 0;
	ssize_t n;
	int fd;

	if (depth <= 1 || ppid <= 0)
		return ppid;
	snprintf(path, sizeof(path), "%s/%d/status", p->procfs, (int)ppid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	s = strstr(buf, "\nNSpid:");
	if (!s)
		return 0;
	s += strlen("\nNSpid:");
	for (;;) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s)
			return 0;
		if (++k == depth)
			return v > 0 && v <= INT32_MAX ? (int32_t)v : 0;
		s = end;
	}
}

static void ticks_to_timeval(unsigned long long ticks, int64_t tv[2])
{
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0)
		hz = 100;
	tv[0] = (int64_t)(ticks / (unsigned long long)hz);
	tv[1] = (int64_t)(ticks % (unsigned long long)hz * 1000000ull /
			  (unsigned long long)hz);
}

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
	return !read_stat(p, name, &st) || st.state == 'Z' || st.state == 'X';
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

		if (!read_stat(p, name, &st) || st.state == 'Z' ||
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

static struct kcore_error *fill_psinfo(struct kcore_process *p)
{
	struct prpsinfo_native ps = { 0 };
	struct proc_stat st;
	char *status, *comm, *args;
	size_t len = 0;
	const char *letters = "RSDTZW", *at;

	if (!read_stat(p, "stat", &st))
		return kcore_proc_error(p, ESRCH, "cannot read /proc/PID/stat");
	/* pr_state is the index of the task state bit plus one, as the
	 * kernel derives it; traced ('t') and idle ('I') map to their
	 * stopped and uninterruptible cousins. */
	at = strchr(letters, st.state == 't'   ? 'T'
			     : st.state == 'I' ? 'D'
					       : st.state);
	ps.state = (char)(at && *at ? at - letters : 0);
	ps.sname = at && *at ? *at : '.';
	ps.zomb = ps.sname == 'Z';
	ps.nice = (int8_t)st.nice;
	ps.flag = st.flags;
	status = kcore_proc_slurp(p, "status", NULL);
	ps.pid = ns_id(status, "\nNSpid:", p->pid, &p->ns_depth);
	p->ns_pid = ps.pid;
	ps.ppid = ns_parent(p, st.ppid, p->ns_depth);
	ps.pgrp = ns_id(status, "\nNSpgid:", st.pgrp, NULL);
	ps.sid = ns_id(status, "\nNSsid:", st.sid, NULL);
	if (status) {
		ps.uid = (uint32_t)status_field(status, "\nUid:", 10);
		ps.gid = (uint32_t)status_field(status, "\nGid:", 10);
		free(status);
	}
	comm = kcore_proc_slurp(p, "comm", NULL);
	if (comm) {
		comm[strcspn(comm, "\n")] = '\0';
		memcpy(ps.fname, comm, strnlen(comm, sizeof(ps.fname) - 1));
		free(comm);
	}
	/* The kernel copies up to 79 bytes of the argument area and turns
	 * every NUL, the last one too, into a space. */
	args = kcore_proc_slurp(p, "cmdline", &len);
	if (args) {
		if (len > sizeof(ps.psargs) - 1)
			len = sizeof(ps.psargs) - 1;
		for (size_t i = 0; i < len; i++)
			ps.psargs[i] = args[i] ? args[i] : ' ';
		free(args);
	}
	memcpy(p->psinfo, &ps, sizeof(ps));
	return NULL;
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
	err = fill_psinfo(p);
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

/* ---- notes ---- */

struct note_buf {
	unsigned char *data;
	size_t len, cap;
	bool failed;
};

static void nb_put(struct note_buf *nb, const char *name, uint32_t type,
		   const void *desc, size_t descsz)
{
	uint32_t hdr[3] = { (uint32_t)strlen(name) + 1, (uint32_t)descsz,
			    type };
	size_t need = 12 + ((hdr[0] + 3) & ~3u) + ((descsz + 3) & ~(size_t)3);
	unsigned char *q;

	if (nb->failed)
		return;
	if (nb->len + need > nb->cap) {
		size_t cap = nb->cap ? nb->cap : 4096;
		unsigned char *d;

		while (cap < nb->len + need)
			cap *= 2;
		d = realloc(nb->data, cap);
		if (!d) {
			nb->failed = true;
			return;
		}
		nb->data = d;
		nb->cap = cap;
	}
	q = nb->data + nb->len;
	memset(q, 0, need);
	memcpy(q, hdr, 12);
	memcpy(q + 12, name, hdr[0]);
	if (descsz)
		memcpy(q + 12 + ((hdr[0] + 3) & ~3u), desc, descsz);
	nb->len += need;
}

static void thread_prstatus(struct kcore_process *p,
			    const struct kcore_proc_thread *t,
			    struct prstatus_native *pr)
{
	char name[64];
	struct proc_stat st;
	char *status;

	memset(pr, 0, sizeof(*pr));
	if (t->inject_sig) {
		pr->si_signo = t->inject_sig;
		pr->cursig = (int16_t)t->inject_sig;
	}
	/* The leader's record shows the whole group's times, as the
	 * kernel's; /proc/PID/stat has exactly those. */
	if (t->tid == p->pid)
		snprintf(name, sizeof(name), "stat");
	else
		snprintf(name, sizeof(name), "task/%d/stat", (int)t->tid);
	if (read_stat(p, name, &st)) {
		pr->ppid = st.ppid;
		pr->pgrp = st.pgrp;
		pr->sid = st.sid;
		ticks_to_timeval(st.utime, pr->utime);
		ticks_to_timeval(st.stime, pr->stime);
		ticks_to_timeval(st.cutime, pr->cutime);
		ticks_to_timeval(st.cstime, pr->cstime);
	}
	snprintf(name, sizeof(name), "task/%d/status", (int)t->tid);
	status = kcore_proc_slurp(p, name, NULL);
	/* The ids of the task's own namespace, as the kernel writes them. */
	pr->pid = ns_id(status, "\nNSpid:", t->tid, NULL);
	pr->ppid = ns_parent(p, pr->ppid, p->ns_depth);
	pr->pgrp = ns_id(status, "\nNSpgid:", pr->pgrp, NULL);
	pr->sid = ns_id(status, "\nNSsid:", pr->sid, NULL);
	if (status) {
		pr->sigpend = status_field(status, "\nSigPnd:", 16);
		pr->sighold = status_field(status, "\nSigBlk:", 16);
		free(status);
	}
	memcpy(pr->reg, t->regs, sizeof(pr->reg));
	for (size_t i = 0; i < t->nregsets; i++)
		if (t->regsets[i].type == NT_PRFPREG)
			pr->fpvalid = 1;
}

/* ---- the 32-bit notes of an ia32 process (compat binfmt_elf) ---- */

static int32_t low32(int64_t v)
{
	return (int32_t)(uint32_t)(uint64_t)v;
}

static void prstatus_to_compat(const struct prstatus_native *pr,
			       const unsigned char *regs,
			       struct prstatus_compat *c)
{
	memset(c, 0, sizeof(*c));
	c->si_signo = pr->si_signo;
	c->si_code = pr->si_code;
	c->si_errno = pr->si_errno;
	c->cursig = pr->cursig;
	/* The kernel assigns the first word of the sigset to a compat_ulong:
	 * its low 32 signals. */
	c->sigpend = (uint32_t)pr->sigpend;
	c->sighold = (uint32_t)pr->sighold;
	c->pid = pr->pid;
	c->ppid = pr->ppid;
	c->pgrp = pr->pgrp;
	c->sid = pr->sid;
	for (int i = 0; i < 2; i++) {
		c->utime[i] = low32(pr->utime[i]);
		c->stime[i] = low32(pr->stime[i]);
		c->cutime[i] = low32(pr->cutime[i]);
		c->cstime[i] = low32(pr->cstime[i]);
	}
	memcpy(c->reg, regs, sizeof(c->reg));
	c->fpvalid = pr->fpvalid;
}

/* high2lowuid(): an id past 16 bits is the overflow id. */
static uint16_t uid16(uint32_t id)
{
	return id > 0xffff ? 65534 : (uint16_t)id;
}

static void prpsinfo_to_compat(const unsigned char *native,
			       struct prpsinfo_compat *c)
{
	struct prpsinfo_native ps;

	memcpy(&ps, native, sizeof(ps));
	memset(c, 0, sizeof(*c));
	c->state = ps.state;
	c->sname = ps.sname;
	c->zomb = ps.zomb;
	c->nice = ps.nice;
	c->flag = (uint32_t)ps.flag;
	c->uid = uid16(ps.uid);
	c->gid = uid16(ps.gid);
	c->pid = ps.pid;
	c->ppid = ps.ppid;
	c->pgrp = ps.pgrp;
	c->sid = ps.sid;
	memcpy(c->fname, ps.fname, sizeof(c->fname));
	memcpy(c->psargs, ps.psargs, sizeof(c->psargs));
}

/* Copy a field of n bytes (n <= 8) of the native union at from to the
 * compat union at to, keeping its low bytes. */
static void si_move(unsigned char *c, const unsigned char *nat, size_t to,
		    size_t from, size_t n)
{
	memcpy(c + to, nat + from, n);
}

/*
 * The compat siginfo (copy_siginfo_to_external32()): the same three ints,
 * then the union at 12 instead of 16, with pointers, longs and clock_ts
 * of 32 bits.  The layout follows siginfo_layout(): the signal and its
 * code say which member is live.
 */
static void siginfo_to_compat(const unsigned char *nat, unsigned char *c)
{
	int32_t signo, code;

	memset(c, 0, 128);
	memcpy(c, nat, 12); /* si_signo, si_errno, si_code */
	memcpy(&signo, nat, 4);
	memcpy(&code, nat + 8, 4);
	if (code > 0 &&
	    (signo == SIGSEGV || signo == SIGBUS || signo == SIGILL ||
	     signo == SIGFPE || signo == SIGTRAP)) {
		si_move(c, nat, 12, 16, 4); /* si_addr */
		/* addr_lsb, or the bounds, or the protection key */
		si_move(c, nat, 16, 24, 2);
		if (signo == SIGSEGV && code == 3) { /* SEGV_BNDERR */
			si_move(c, nat, 20, 32, 4);
			si_move(c, nat, 24, 40, 4);
		} else if (signo == SIGSEGV && code == 4) { /* SEGV_PKUERR */
			si_move(c, nat, 20, 28, 4);
		}
	} else if (code > 0 && signo == SIGCHLD) {
		si_move(c, nat, 12, 16, 8); /* si_pid, si_uid */
		si_move(c, nat, 20, 24, 4); /* si_status */
		si_move(c, nat, 24, 32, 4); /* si_utime */
		si_move(c, nat, 28, 40, 4); /* si_stime */
	} else if ((code > 0 && signo == SIGPOLL) || code == SI_SIGIO) {
		si_move(c, nat, 12, 16, 4); /* si_band */
		si_move(c, nat, 16, 24, 4); /* si_fd */
	} else if (code > 0 && signo == SIGSYS) {
		si_move(c, nat, 12, 16, 4); /* si_call_addr */
		si_move(c, nat, 16, 24, 8); /* si_syscall, si_arch */
	} else if (code == SI_TIMER) {
		si_move(c, nat, 12, 16, 8); /* si_tid, si_overrun */
		si_move(c, nat, 20, 24, 4); /* si_value */
	} else if (code < 0) {
		si_move(c, nat, 12, 16, 8); /* si_pid, si_uid */
		si_move(c, nat, 20, 24, 4); /* si_value */
	} else {
		si_move(c, nat, 12, 16, 8); /* SI_USER, SI_KERNEL: pid, uid */
	}
}

/* NT_AUXV of a compat task: its saved_auxv holds 32-bit pairs, and
 * /proc/PID/auxv, which walks it in longs, may add zeros past AT_NULL;
 * the kernel's note ends with the AT_NULL pair. */
static size_t auxv32_len(const unsigned char *auxv, size_t len)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint32_t type;

		memcpy(&type, auxv + i, 4);
		if (type == AT_NULL)
			return i + 8;
	}
	return len & ~(size_t)7;
}

/* NT_FILE: count, page size, {start, end, page offset} per file
 * mapping, then the names; words of 8 bytes, or of 4 for a compat task. */
static void put_file_note(struct kcore_process *p, struct note_buf *nb)
{
	size_t count = 0, names = 0, len, w = p->compat ? 4 : 8;
	unsigned char *d, *q;

	for (size_t i = 0; i < p->nvmas; i++)
		if (p->vmas[i].m.has_file) {
			count++;
			names += strlen(p->vmas[i].path) + 1;
		}
	if (!count)
		return;
	len = 2 * w + 3 * w * count + names;
	d = calloc(1, len);
	if (!d) {
		nb->failed = true;
		return;
	}
	kcore_store_le(d, count, (unsigned)w);
	kcore_store_le(d + w, p->page_size, (unsigned)w);
	q = d + 2 * w;
	for (size_t i = 0; i < p->nvmas; i++) {
		const struct kcore_proc_vma *vma = &p->vmas[i];

		if (!vma->m.has_file)
			continue;
		kcore_store_le(q, vma->m.start, (unsigned)w);
		kcore_store_le(q + w, vma->m.end, (unsigned)w);
		kcore_store_le(q + 2 * w, vma->m.offset / p->page_size,
			       (unsigned)w);
		q += 3 * w;
	}
	for (size_t i = 0; i < p->nvmas; i++) {
		size_t n;

		if (!p->vmas[i].m.has_file)
			continue;
		n = strlen(p->vmas[i].path) + 1;
		memcpy(q, p->vmas[i].path, n);
		q += n;
	}
	nb_put(nb, "CORE", NT_FILE, d, len);
	free(d);
}

/*
 * NT_X86_XSAVE_LAYOUT (Linux 6.12, commit ba386777a30b) follows the thread
 * notes: {type, size, offset, flags} of every extended state component
 * the XSAVE buffers hold, so readers need not guess the layout (AMD and
 * Intel differ).  The features are the XCR0 bits the regset reports;
 * sizes and offsets come from CPUID leaf 0xd, as the kernel's do.
 */
static void put_xsave_layout(struct kcore_process *p, struct note_buf *nb)
{
#if defined(__x86_64__)
	const struct kcore_proc_regset *xs = NULL;
	uint32_t rec[64][4];
	size_t n = 0;
	uint64_t features;

	for (size_t k = 0; p->nthreads && k < p->threads[0].nregsets; k++)
		if (p->threads[0].regsets[k].type == NT_X86_XSTATE)
			xs = &p->threads[0].regsets[k];
	if (!xs || xs->len < XSTATE_XCR0_OFFSET + 8)
		return;
	memcpy(&features, (unsigned char *)xs->data + XSTATE_XCR0_OFFSET, 8);
	for (unsigned i = 2; i < 64; i++) {
		unsigned eax, ebx, ecx, edx;

		if (!(features & (1ull << i)) ||
		    !__get_cpuid_count(0xd, i, &eax, &ebx, &ecx, &edx))
			continue;
		rec[n][0] = i;
		rec[n][1] = eax;
		rec[n][2] = ebx;
		rec[n][3] = 0;
		n++;
	}
	nb_put(nb, "LINUX", NT_X86_XSAVE_LAYOUT, rec, n * sizeof(rec[0]));
#else
	(void)p;
	(void)nb;
#endif
}

struct kcore_error *kcore_proc_build_notes(struct kcore_process *p,
					   unsigned char **ret, size_t *ret_len)
{
	struct note_buf nb = { 0 };

	for (size_t i = 0; i < p->nthreads; i++) {
		const struct kcore_proc_thread *t = &p->threads[i];
		struct prstatus_native pr;
		struct prstatus_compat pr32;
		struct prpsinfo_compat ps32;
		unsigned char si32[128];

		thread_prstatus(p, t, &pr);
		if (p->compat) {
			prstatus_to_compat(&pr, t->regs, &pr32);
			nb_put(&nb, "CORE", NT_PRSTATUS, &pr32, sizeof(pr32));
		} else {
			nb_put(&nb, "CORE", NT_PRSTATUS, &pr, sizeof(pr));
		}
		if (i == 0) {
			if (p->compat) {
				prpsinfo_to_compat(p->psinfo, &ps32);
				nb_put(&nb, "CORE", NT_PRPSINFO, &ps32,
				       sizeof(ps32));
			} else {
				nb_put(&nb, "CORE", NT_PRPSINFO, p->psinfo,
				       sizeof(p->psinfo));
			}
			if (t->has_siginfo && p->compat) {
				siginfo_to_compat(t->siginfo, si32);
				nb_put(&nb, "CORE", NT_SIGINFO, si32,
				       sizeof(si32));
			} else if (t->has_siginfo) {
				nb_put(&nb, "CORE", NT_SIGINFO, t->siginfo,
				       sizeof(t->siginfo));
			}
			nb_put(&nb, "CORE", NT_AUXV, p->auxv,
			       p->compat ? auxv32_len(p->auxv, p->auxv_len)
					 : p->auxv_len);
			put_file_note(p, &nb);
		}
		for (size_t k = 0; k < t->nregsets; k++)
			nb_put(&nb, t->regsets[k].name, t->regsets[k].type,
			       t->regsets[k].data, t->regsets[k].len);
	}
	put_xsave_layout(p, &nb);
	if (nb.failed) {
		free(nb.data);
		return &kcore_error_nomem;
	}
	*ret = nb.data;
	*ret_len = nb.len;
	return NULL;
}
