// SPDX-License-Identifier: MIT
/*
 * Where the core stream is zeros without reading it: the crashing
 * process's page tables, while the kernel is still dumping it.
 *
 * On a pipe the kernel writes every page get_dump_page() does not give it
 * as a page of zeros (dump_skip()); in a private anonymous mapping that is
 * every page the page tables do not hold (FOLL_DUMP).  The handler runs
 * while the process is kept alive for the dump, so /proc/PID/pagemap can
 * say which stream bytes will be zeros, and those can be consumed with
 * splice(2) without copying them out of the pipe.
 *
 * That is only true while nobody changes the page tables.  The dumping
 * process's own threads are stopped for the dump; since Linux 5.16
 * (commit 0258b5fd7c71) other processes sharing its memory (CLONE_VM
 * without CLONE_THREAD) are not, so one such process turns this off.  It
 * is found by its memory layout in /proc/PID/stat (the kernel's own
 * mm fields), and only a process with the same layout is compared by
 * kcmp(2): asking every process fails where kcmp is refused for some,
 * even to root (PID 1 under some security modules).  Anybody else can only add
 * pages (a debugger's process_vm_writev, a userfaultfd monitor's UFFDIO_COPY),
 * never take one away; taking one away needs a thread of the memory, or reclaim
 * of a MADV_FREE page, which was present before the first look.  So a page with
 * nothing at the first look (before the kernel reached it) and nothing at a
 * second look (after its bytes arrived, so after the kernel decided) had
 * nothing when the kernel decided: its bytes are zeros.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corehandler-holes.h"
#include "kcoredump/kcore.h"
#include "process-internal.h"

/* Runs beyond this many are not kept (the rest of the stream is read). */
#define MAX_RUNS (4u << 20)

/* Stream bytes [start, end) are mapping bytes from vaddr on. */
struct run {
	uint64_t start, end, vaddr;
};

struct ch_holes {
	struct kcore_process proc;
	struct kcore_process_mapping scan; /* a READ_SCAN mapping */
	struct run *runs;
	size_t nruns, cap;
	uint64_t guard, bytes;
};

static char *why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *why(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* A "Name:\tvalue" line of /proc/PID/status, or -1. */
static long long status_field(const char *status, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = status; l && *l; l = strchr(l, '\n')) {
		if (*l == '\n')
			l++;
		if (strncmp(l, name, n) == 0 && l[n] == ':')
			return strtoll(l + n + 1, NULL, 10);
	}
	return -1;
}

/*
 * The fields of /proc/PID/stat that belong to the memory itself, not to
 * the process: mm->start_code, end_code, start_stack (fields 26-28) and
 * start_data ... env_end (45-51, since Linux 3.3).  Processes that share
 * a memory show the same values at any time (only exec, which gives a
 * new memory, and prctl(PR_SET_MM), which needs CAP_SYS_RESOURCE, change
 * them); processes with different memories almost never do (ASLR), and
 * where they do (a fork child that did not exec), kcmp(2) decides.
 */
#define LAYOUT_FIELDS 10

enum layout_kind {
	LAYOUT_NONE,   /* no memory: a kernel thread or a zombie */
	LAYOUT_HIDDEN, /* the kernel hides it from us (no ptrace access) */
	LAYOUT_SHOWN,
	LAYOUT_UNKNOWN /* unreadable or unparsable stat */
};

struct layout {
	enum layout_kind kind;
	uint64_t v[LAYOUT_FIELDS];
};

/* Parse a stat line: the fields after the comm's last ')'. */
static void parse_layout(const char *stat, struct layout *ret)
{
	static const unsigned want[LAYOUT_FIELDS] = { 26, 27, 28, 45, 46,
						      47, 48, 49, 50, 51 };
	const char *p = strrchr(stat, ')');
	unsigned field = 2, k = 0;

	ret->kind = LAYOUT_UNKNOWN;
	if (!p)
		return;
	p++;
	while (k < LAYOUT_FIELDS) {
		char *end;
		unsigned long long v;

		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			return;
		field++;
		v = strtoull(p, &end, 10);
		if (end == p)
			v = 0; /* the state letter */
		if (field == want[k])
			ret->v[k++] = v;
		while (*end && *end != ' ' && *end != '\n')
			end++;
		p = end;
	}
	/* do_task_stat(): start_code and end_code read 1, start_stack 0
	 * and the rest 0 without ptrace access; all 0 without a memory. */
	if (!ret->v[0] && !ret->v[1])
		ret->kind = LAYOUT_NONE;
	else if (ret->v[0] == 1 && ret->v[1] == 1 && !ret->v[2])
		ret->kind = LAYOUT_HIDDEN;
	else
		ret->kind = LAYOUT_SHOWN;
}

/* Read up to len - 1 bytes of procfs/pid/name; false when it cannot. */
static bool read_small(int procfs_fd, const char *pid, const char *name,
		       char *buf, size_t len)
{
	char path[NAME_MAX + 16];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", pid, name) >=
	    sizeof(path))
		return false;
	fd = openat(procfs_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/*
 * Whether process other (a name in procfs) may use pid's memory: 0 no,
 * 1 yes, -1 cannot be known (with *ret_why).  Only a process whose
 * memory layout is that of pid (or hidden from us, with the same text
 * size in /proc/PID/status) is asked with kcmp(2); any other has other
 * memory, whatever kcmp would say (and kcmp is refused even to root for
 * some processes, e.g. PID 1 under some LSMs).
 */
static int shares(int procfs_fd, pid_t pid, const struct layout *mine,
		  long long my_exe_kb, const char *other, char **ret_why)
{
	char buf[4096];
	struct layout l;
	long r;

	if (!read_small(procfs_fd, other, "stat", buf, sizeof(buf)))
		return 0; /* gone (a process that is there can be read) */
	parse_layout(buf, &l);
	if (l.kind == LAYOUT_NONE)
		return 0;
	if (l.kind == LAYOUT_SHOWN && memcmp(l.v, mine->v, sizeof(l.v)) != 0)
		return 0;
	if (l.kind == LAYOUT_HIDDEN) {
		if (!read_small(procfs_fd, other, "status", buf, sizeof(buf)))
			return 0;
		if (status_field(buf, "VmExe") != my_exe_kb)
			return 0;
	}
	/* LAYOUT_UNKNOWN falls through: ask. */
	r = syscall(SYS_kcmp, pid, (pid_t)strtol(other, NULL, 10), KCMP_VM, 0,
		    0);
	if (r == 0)
		return 1;
	if (r > 0 || errno == ESRCH)
		return 0;
	*ret_why = why("cannot compare the memory of pid %d with pid %s, "
		       "whose memory looks the same (kcmp: %s)",
		       (int)pid, other, strerror(errno));
	return -1;
}

/*
 * The first process of procfs other than pid that uses pid's memory:
 * 0 if none, -1 (with *ret_why) if that cannot be known.  pid's own
 * threads are not processes of procfs (readdir lists thread groups).
 */
static long sharer(const char *procfs, struct kcore_process *p,
		   const char *status, char **ret_why)
{
	pid_t pid = p->pid;
	struct layout mine;
	char *stat;
	long long exe_kb = status_field(status, "VmExe");
	struct dirent *de;
	long found = 0;
	int dfd;
	DIR *dir;

	stat = kcore_proc_slurp(p, "stat", NULL);
	if (!stat) {
		*ret_why = why("cannot read %s/%d/stat: %s", procfs, (int)pid,
			       strerror(errno));
		return -1;
	}
	parse_layout(stat, &mine);
	free(stat);
	if (mine.kind != LAYOUT_SHOWN) {
		*ret_why = why("%s/%d/stat does not show the memory layout",
			       procfs, (int)pid);
		return -1;
	}
	dir = opendir(procfs);
	if (!dir) {
		*ret_why = why("cannot list %s: %s", procfs, strerror(errno));
		return -1;
	}
	dfd = dirfd(dir);
	while (!found && (de = readdir(dir))) {
		char *end;
		long other = strtol(de->d_name, &end, 10);
		int r;

		if (*end || other <= 0 || other == pid)
			continue;
		r = shares(dfd, pid, &mine, exe_kb, de->d_name, ret_why);
		if (r)
			found = r > 0 ? other : -1;
	}
	closedir(dir);
	if (found > 0)
		*ret_why = why("pid %ld shares the memory of pid %d", found,
			       (int)pid);
	return found;
}

static struct kcore_error *add_run(struct ch_holes *h, uint64_t start,
				   uint64_t end, uint64_t vaddr)
{
	if (h->nruns == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct run *r;

		if (h->cap >= MAX_RUNS)
			return NULL;
		r = realloc(h->runs, cap * sizeof(*r));
		if (!r)
			return &kcore_error_nomem;
		h->runs = r;
		h->cap = cap;
	}
	h->runs[h->nruns++] = (struct run){ start, end, vaddr };
	h->bytes += end - start;
	return NULL;
}

/* The first look: the empty runs of a mapping, in stream offsets. */
static struct kcore_error *scan_load(struct ch_holes *h,
				     const struct ch_load *l, uint64_t min_run)
{
	uint64_t va = l->vaddr, end = l->vaddr + l->filesz;

	while (va < end) {
		uint64_t ds, de;
		struct kcore_error *err = kcore_proc_next_data(
			&h->proc, &h->scan, va, end, &ds, &de);

		if (err)
			return err;
		if (ds - va >= min_run) {
			err = add_run(h, l->offset + (va - l->vaddr),
				      l->offset + (ds - l->vaddr), va);
			if (err)
				return err;
		}
		if (ds >= end)
			break;
		va = de;
	}
	return NULL;
}

static const struct kcore_proc_vma *find_vma(const struct kcore_process *p,
					     uint64_t start)
{
	size_t lo = 0, hi = p->nvmas;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->vmas[mid].m.start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nvmas && p->vmas[lo].m.start == start ? &p->vmas[lo]
							     : NULL;
}

/* Everything but the runs; *ret_why when the page tables cannot be used. */
static struct kcore_error *look(struct ch_holes *h, const char *procfs,
				int proc_fd, pid_t pid,
				const struct ch_load *loads, size_t nloads,
				uint64_t min_run, char **ret_why)
{
	struct kcore_process *p = &h->proc;
	struct kcore_error *err;
	char *status;

	p->pid = p->mm_tid = pid;
	p->mem_fd = p->pagemap_fd = p->pidfd = p->dir_fd = -1;
	p->scan_ioctl = true;
	p->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	snprintf(p->procfs, sizeof(p->procfs), "%s", procfs);
	h->scan.read = KCORE_PROCESS_READ_SCAN;
	/* Everything of the process opens through the directory the
	 * handler opened first, while the process was dumping (a pid
	 * reused since would be another directory). */
	if (proc_fd < 0) {
		*ret_why = why("process %d was not looked at in %s", (int)pid,
			       procfs);
		return NULL;
	}
	p->dir_fd = fcntl(proc_fd, F_DUPFD_CLOEXEC, 3);
	if (p->dir_fd < 0) {
		*ret_why = why("cannot duplicate the descriptor of %s/%d: %s",
			       procfs, (int)pid, strerror(errno));
		return NULL;
	}
	/* The pagemap first: it holds on to the memory it was opened for,
	 * whatever happens to the pid later.  With core_pipe_limit 0 the
	 * kernel keeps the process only while it writes the core, so this
	 * look comes before the pipe is enlarged (corehandler.c). */
	p->pagemap_fd = kcore_proc_open_file(p, "pagemap", O_RDONLY);
	if (p->pagemap_fd < 0) {
		*ret_why = why("cannot open %s/%d/pagemap: %s%s", procfs,
			       (int)pid, strerror(errno),
			       errno == ESRCH || errno == ENOENT
				       ? " (the process ended before the "
					 "handler looked)"
				       : "");
		return NULL;
	}
	status = kcore_proc_slurp(p, "status", NULL);
	if (!status) {
		*ret_why = why("cannot read %s/%d/status: %s", procfs, (int)pid,
			       strerror(errno));
		return NULL;
	}
	/* CoreDumping since Linux 4.15 (commit c643401218be). */
	if (status_field(status, "Tgid") != pid ||
	    status_field(status, "CoreDumping") != 1) {
		*ret_why = why("process %d is not dumping core", (int)pid);
		free(status);
		return NULL;
	}
	if (sharer(procfs, p, status, ret_why)) {
		free(status);
		return NULL;
	}
	free(status);
	err = kcore_proc_read_maps(p);
	if (err && err != &kcore_error_nomem) {
		*ret_why = kcore_error_describe(err);
		kcore_error_destroy(err);
		return NULL;
	}
	if (err)
		return err;
	for (size_t i = 0; i < nloads; i++) {
		const struct ch_load *l = &loads[i];
		const struct kcore_proc_vma *v;

		if (!l->filesz)
			continue;
		v = find_vma(p, l->vaddr);
		if (!v || v->m.end - v->m.start < l->filesz) {
			*ret_why = why("the segment at 0x%" PRIx64 " is not "
				       "a mapping of process %d",
				       l->vaddr, (int)pid);
			return NULL;
		}
		if (!kcore_proc_vma_anon_private(v) || l->filesz != l->memsz)
			continue;
		err = scan_load(h, l, min_run);
		if (err)
			return err;
	}
	return NULL;
}

struct kcore_error *ch_holes_create(const char *procfs, int proc_fd,
				    int64_t pid, const struct ch_load *loads,
				    size_t nloads, uint64_t min_run,
				    struct ch_holes **ret, char **ret_why)
{
	struct ch_holes *h;
	struct kcore_error *err;

	*ret = NULL;
	*ret_why = NULL;
	if (pid <= 0 || pid > INT32_MAX) {
		*ret_why = why("no process id for the core");
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return &kcore_error_nomem;
	err = look(h, procfs ? procfs : "/proc", proc_fd, (pid_t)pid, loads,
		   nloads, min_run, ret_why);
	if (err && err != &kcore_error_nomem) {
		/* The page tables only save work: say why, read it all. */
		free(*ret_why);
		*ret_why = kcore_error_describe(err);
		kcore_error_destroy(err);
		err = NULL;
	}
	if (!err && !*ret_why && !h->nruns)
		*ret_why = why("process %d has no empty run of %" PRIu64
			       " KiB in its private anonymous memory",
			       (int)pid, min_run >> 10);
	if (err || *ret_why) {
		ch_holes_destroy(h);
		return err;
	}
	*ret = h;
	return NULL;
}

void ch_holes_destroy(struct ch_holes *h)
{
	if (!h)
		return;
	kcore_proc_free(&h->proc);
	free(h->runs);
	free(h);
}

void ch_holes_set_guard(struct ch_holes *h, uint64_t guard)
{
	h->guard = guard;
}

static const struct run *find_run(const struct ch_holes *h, uint64_t start)
{
	size_t lo = 0, hi = h->nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->runs[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->nruns && h->runs[lo].start <= start ? &h->runs[lo]
							   : NULL;
}

bool ch_holes_contains(const struct ch_holes *h, uint64_t pos)
{
	return h && pos >= h->guard && find_run(h, pos);
}

uint64_t ch_holes_run(const struct ch_holes *h, uint64_t start, uint64_t unit)
{
	const struct run *r;

	if (!h || start < h->guard)
		return 0;
	r = find_run(h, start);
	return r ? (r->end - start) / unit * unit : 0;
}

struct kcore_error *ch_holes_recheck(struct ch_holes *h, uint64_t start,
				     uint64_t end, bool *ret_empty)
{
	const struct run *r = find_run(h, start);
	uint64_t page = h->proc.page_size, va, va_end, ds, de;
	struct kcore_error *err;

	*ret_empty = false;
	if (!r || end > r->end || end <= start)
		return NULL;
	va = r->vaddr + (start - r->start);
	va_end = r->vaddr + (end - r->start);
	va_end = (va_end + page - 1) / page * page;
	kcore_proc_scan_forget(&h->proc);
	err = kcore_proc_next_data(&h->proc, &h->scan, va, va_end, &ds, &de);
	if (!err)
		*ret_empty = ds >= va_end;
	return err;
}

uint64_t ch_holes_bytes(const struct ch_holes *h)
{
	return h ? h->bytes : 0;
}

uint64_t ch_holes_scans(const struct ch_holes *h)
{
	return h ? h->proc.info.pagemap_calls : 0;
}
