// SPDX-License-Identifier: MIT
/*
 * The notes of a captured process (process-capture.h), as
 * fs/binfmt_elf.c writes them: NT_PRSTATUS per thread, NT_PRPSINFO,
 * NT_SIGINFO, NT_AUXV, NT_FILE, the register notes, NT_X86_XSAVE_LAYOUT;
 * and the 32-bit ones of an ia32 process (compat binfmt_elf).
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "elfcore.h"
#include "process-capture.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#ifndef NT_X86_XSAVE_LAYOUT
#define NT_X86_XSAVE_LAYOUT 0x205
#endif
/* Where the ptrace XSTATE regset stores XCR0 (the kernel's
 * USER_XSTATE_XCR0_WORD, in the FXSAVE area's software bytes). */
#define XSTATE_XCR0_OFFSET 464

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

static void ticks_to_timeval(unsigned long long ticks, int64_t tv[2])
{
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0)
		hz = 100;
	tv[0] = (int64_t)(ticks / (unsigned long long)hz);
	tv[1] = (int64_t)(ticks % (unsigned long long)hz * 1000000ull /
			  (unsigned long long)hz);
}

struct kcore_error *kcore_proc_fill_psinfo(struct kcore_process *p)
{
	struct prpsinfo_native ps = { 0 };
	struct proc_stat st;
	char *status, *comm, *args;
	size_t len = 0;
	const char *letters = "RSDTZW", *at;

	if (!kcore_proc_read_stat(p, "stat", &st))
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
	ps.pid = kcore_proc_ns_id(status, "\nNSpid:", p->pid, &p->ns_depth);
	p->ns_pid = ps.pid;
	ps.ppid = kcore_proc_ns_parent(p, st.ppid, p->ns_depth);
	ps.pgrp = kcore_proc_ns_id(status, "\nNSpgid:", st.pgrp, NULL);
	ps.sid = kcore_proc_ns_id(status, "\nNSsid:", st.sid, NULL);
	if (status) {
		ps.uid =
			(uint32_t)kcore_proc_status_field(status, "\nUid:", 10);
		ps.gid =
			(uint32_t)kcore_proc_status_field(status, "\nGid:", 10);
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

/* ---- notes ---- */

struct note_buf {
	unsigned char *data;
	size_t len, cap;
	bool failed;
};

static void nb_put(struct note_buf *nb, const char *name, uint32_t type,
		   const void *desc, size_t descsz)
{
	size_t need = kcore_elfcore_note_size(name, descsz);

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
	kcore_elfcore_put_note(nb->data + nb->len, name, type, desc, descsz);
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
	if (kcore_proc_read_stat(p, name, &st)) {
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
	pr->pid = kcore_proc_ns_id(status, "\nNSpid:", t->tid, NULL);
	pr->ppid = kcore_proc_ns_parent(p, pr->ppid, p->ns_depth);
	pr->pgrp = kcore_proc_ns_id(status, "\nNSpgid:", pr->pgrp, NULL);
	pr->sid = kcore_proc_ns_id(status, "\nNSsid:", pr->sid, NULL);
	if (status) {
		pr->sigpend = kcore_proc_status_field(status, "\nSigPnd:", 16);
		pr->sighold = kcore_proc_status_field(status, "\nSigBlk:", 16);
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
