// SPDX-License-Identifier: MIT
/*
 * A running process as a source.  Its ELF core image is built in memory
 * (ELF header, PT_NOTE, one PT_LOAD per mapping the coredump filter
 * dumps, the notes); the reader reads the PT_LOAD data from the
 * process and tells holes from data with /proc/PID/pagemap, so the dump
 * pipeline never touches address space that holds nothing.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch.h"
#include "elfcore.h"
#include "process-internal.h"
#include "source-impl.h"

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */

/* One PT_LOAD of the image. */
struct proc_load {
	uint64_t offset; /* in the image */
	uint64_t size;
	const struct kcore_process_mapping *m;
};

struct proc_backend {
	struct kcore_process proc;
	struct proc_load *loads;
	size_t nloads;
	size_t last; /* load of the previous lookup */
};

static struct kcore_process *proc_of(const struct kcore_source *src)
{
	return &((struct proc_backend *)src->reader_data)->proc;
}

/* The load holding image offset off, or the first one after it; nloads
 * when there is none. */
static size_t find_load(struct proc_backend *b, uint64_t off)
{
	size_t lo = 0, hi = b->nloads;

	if (b->last < b->nloads && off >= b->loads[b->last].offset &&
	    off - b->loads[b->last].offset < b->loads[b->last].size)
		return b->last;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->loads[mid].offset + b->loads[mid].size <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	b->last = lo;
	return lo;
}

static struct kcore_error *proc_pread(struct kcore_source *src, void *buf,
				      size_t len, uint64_t offset, size_t *done)
{
	struct proc_backend *b = src->reader_data;
	unsigned char *out = buf;
	size_t got = 0;

	while (got < len) {
		uint64_t off = offset + got;
		size_t i = find_load(b, off), n = len - got;
		const struct proc_load *l = i < b->nloads ? &b->loads[i] : NULL;

		if (!l || off < l->offset) {
			/* Padding between loads reads as zeros. */
			if (l && l->offset - off < n)
				n = (size_t)(l->offset - off);
			memset(out + got, 0, n);
			got += n;
			continue;
		}
		if (l->offset + l->size - off < n)
			n = (size_t)(l->offset + l->size - off);
		uint64_t addr = l->m->start + (off - l->offset);
		ssize_t r = l->m->read == KCORE_PROCESS_READ_NONE
				    ? 0
				    : kcore_proc_read_mem(&b->proc, out + got,
							  n, addr);

		if (l->m->read == KCORE_PROCESS_READ_NONE) {
			memset(out + got, 0, n);
			r = (ssize_t)n;
		}
		got += r > 0 ? (size_t)r : 0;
		if ((size_t)(r > 0 ? r : 0) < n) {
			int e = errno ? errno : EIO;
			uint64_t at = addr + (uint64_t)(r > 0 ? r : 0);
			size_t page = (size_t)(b->proc.page_size
						       ? b->proc.page_size
						       : 4096),
			       skip = page - (size_t)(at % page);

			/* A page of a special mapping that refuses remote
			 * readers reads as zeros, and the mapping counts as
			 * complete: Linux 7.3's [vvar] (the vDSO data store,
			 * VM_MIXEDMAP) fails faults with FAULT_FLAG_REMOTE,
			 * so /proc/PID/mem says EIO for its pages that are
			 * not mapped yet.  Only the kernel's own core can
			 * hold them (it faults them in as the process). */
			if ((e == EIO || e == EFAULT) && l->m->reason &&
			    strcmp(l->m->reason, "special") == 0) {
				if (skip > n - (size_t)(r > 0 ? r : 0))
					skip = n - (size_t)(r > 0 ? r : 0);
				memset(out + got, 0, skip);
				got += skip;
				errno = 0;
				continue;
			}

			if (done)
				*done = got;
			if (e == ESRCH)
				return kcore_error_create_at(
					KCORE_ERR_NOT_FOUND, e, src->path, off,
					"process %d exited: memory at "
					"0x%" PRIx64 " not read",
					(int)b->proc.pid,
					addr + (r > 0 ? r : 0));
			return kcore_error_create_at(
				KCORE_ERR_OS, e, src->path, off,
				"cannot read process %d memory at 0x%" PRIx64,
				(int)b->proc.pid, addr + (r > 0 ? r : 0));
		}
	}
	if (done)
		*done = got;
	return NULL;
}

static struct kcore_error *proc_next_data(struct kcore_source *src,
					  uint64_t offset, uint64_t end,
					  uint64_t *data, uint64_t *data_end)
{
	struct proc_backend *b = src->reader_data;

	*data = *data_end = end;
	while (offset < end) {
		size_t i = find_load(b, offset);
		const struct proc_load *l;
		uint64_t s, e, lend;
		struct kcore_error *err;

		if (offset < src->image_size) { /* headers and notes */
			*data = offset;
			*data_end =
				src->image_size < end ? src->image_size : end;
			return NULL;
		}
		if (i >= b->nloads)
			return NULL;
		l = &b->loads[i];
		if (offset < l->offset)
			offset = l->offset;
		if (offset >= end)
			return NULL;
		lend = l->offset + l->size < end ? l->offset + l->size : end;
		err = kcore_proc_next_data(
			&b->proc, l->m, l->m->start + (offset - l->offset),
			l->m->start + (lend - l->offset), &s, &e);
		if (err)
			return err;
		if (s < l->m->start + (lend - l->offset)) {
			*data = l->offset + (s - l->m->start);
			*data_end = l->offset + (e - l->m->start);
			return NULL;
		}
		offset = lend;
	}
	return NULL;
}

void kcore_proc_free(struct kcore_process *p)
{
	kcore_proc_detach(p);
	for (size_t i = 0; i < p->nthreads; i++)
		for (size_t k = 0; k < p->threads[i].nregsets; k++)
			free(p->threads[i].regsets[k].data);
	free(p->threads);
	for (size_t i = 0; i < p->nvmas; i++)
		free(p->vmas[i].path);
	free(p->vmas);
	free(p->mappings);
	free(p->auxv);
	free(p->scan_cache);
	free(p->pagemap_buf);
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	if (p->pagemap_fd >= 0)
		close(p->pagemap_fd);
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	if (p->pidfd >= 0)
		close(p->pidfd);
}

static void proc_destroy(struct kcore_source *src)
{
	struct proc_backend *b = src->reader_data;

	if (!b)
		return;
	kcore_proc_free(&b->proc);
	free(b->loads);
	free(b);
	src->reader_data = NULL;
}

static const struct kcore_reader_ops process_reader = {
	.name = "process",
	.pread = proc_pread,
	.next_data = proc_next_data,
	.destroy = proc_destroy,
};

static uint32_t load_flags(const char *perms)
{
	return (perms[0] == 'r' ? PF_R : 0) | (perms[1] == 'w' ? PF_W : 0) |
	       (perms[2] == 'x' ? PF_X : 0);
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ELF header, program headers (PT_NOTE first, as the kernel's), notes;
 * loads at page-aligned offsets after them. */
static struct kcore_error *build_image(struct kcore_source *src,
				       struct proc_backend *b)
{
	struct kcore_process *p = &b->proc;
	unsigned char *notes = NULL, *img;
	size_t notes_len, nphdr, hdr_len;
	const struct kcore_arch *host = kcore_arch_host();
	uint16_t machine;
	unsigned cls;
	uint64_t off;
	struct kcore_error *err;

	if (!host)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "dumping a live process is "
					  "implemented for x86_64 and arm64 "
					  "only");
	machine = p->compat ? host->compat_machine : host->machine;
	err = kcore_proc_build_notes(p, &notes, &notes_len);
	if (err)
		return err;
	b->loads = calloc(p->nvmas ? p->nvmas : 1, sizeof(*b->loads));
	if (!b->loads) {
		free(notes);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < p->nvmas; i++)
		if (p->vmas[i].m.dump_size)
			b->loads[b->nloads++].m = &p->mappings[i];
	nphdr = 1 + b->nloads;
	cls = p->compat ? 32 : 64;
	hdr_len = kcore_elfcore_headers_len(cls, nphdr);
	img = calloc(1, hdr_len + notes_len);
	if (!img) {
		free(notes);
		return &kcore_error_nomem;
	}
	kcore_elfcore_put_ehdr(img, cls, machine, nphdr, 0);
	kcore_elfcore_put_phdr(img, cls, 0,
			       &(struct kcore_elfcore_phdr){
				       .type = PT_NOTE,
				       .offset = hdr_len,
				       .filesz = notes_len,
			       });
	memcpy(img + hdr_len, notes, notes_len);
	free(notes);
	off = round_up(hdr_len + notes_len, p->page_size);
	for (size_t i = 0; i < b->nloads; i++) {
		struct proc_load *l = &b->loads[i];

		l->offset = off;
		l->size = l->m->dump_size;
		struct kcore_elfcore_phdr ph = {
			.type = PT_LOAD,
			.flags = load_flags(l->m->perms),
			.offset = off,
			.vaddr = l->m->start,
			.filesz = l->size,
			.memsz = l->size,
			.align = p->page_size,
		};

		if (!kcore_elfcore_phdr_fits(cls, &ph)) {
			free(img);
			return kcore_error_create(
				KCORE_ERR_UNSUPPORTED, 0, NULL,
				"the core of 32-bit process %d passes 4 GiB "
				"at mapping 0x%" PRIx64 ": an ELF32 core "
				"cannot hold it",
				(int)p->pid, l->m->start);
		}
		kcore_elfcore_put_phdr(img, cls, i + 1, &ph);
		off = round_up(off + l->size, p->page_size);
	}
	src->image = img;
	src->image_size = hdr_len + notes_len;
	src->info.file_size = off;
	return NULL;
}

static struct kcore_error *read_filter(struct kcore_process *p)
{
	char *text;

	p->info.filter_from = "option";
	if (p->opts.has_filter) {
		p->info.filter = p->opts.filter;
		return NULL;
	}
	text = kcore_proc_slurp(p, "coredump_filter", NULL);
	if (text && *text) {
		p->info.filter = (uint32_t)strtoul(text, NULL, 16);
		p->info.filter_from = "coredump_filter";
	} else {
		/* The kernel's default (MMF_DUMP_FILTER_DEFAULT). */
		p->info.filter =
			KCORE_DUMP_ANON_PRIVATE | KCORE_DUMP_ANON_SHARED |
			KCORE_DUMP_ELF_HEADERS | KCORE_DUMP_HUGETLB_PRIVATE;
		p->info.filter_from = "default";
	}
	free(text);
	return NULL;
}

/* Find a thread that has not exited for p->mm_tid; false if none. */
static bool live_task(struct kcore_process *p)
{
	struct dirent *de;
	DIR *dir;
	int fd;

	fd = openat(p->dir_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while ((de = readdir(dir))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
		char name[64], *stat, *s;

		if (tid <= 0 || tid == p->pid)
			continue;
		snprintf(name, sizeof(name), "task/%d/stat", (int)tid);
		stat = kcore_proc_slurp(p, name, NULL);
		s = stat ? strrchr(stat, ')') : NULL;
		if (s && s[1] && s[2] != 'Z' && s[2] != 'X')
			p->mm_tid = tid;
		free(stat);
		if (p->mm_tid != p->pid)
			break;
	}
	closedir(dir);
	return p->mm_tid != p->pid;
}

/*
 * Hold the process itself rather than its number: a pidfd first, then its
 * /proc directory, then the pidfd asked whether the process still exists
 * (a signal 0): if it does, the PID was not reused in between and the
 * directory is this process's.  Everything later is opened through the
 * directory, which the kernel ties to the struct pid: once the process is
 * reaped, nothing opens through it, whoever gets the PID next.
 */
static struct kcore_error *hold_process(struct kcore_process *p)
{
	char path[512];

	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pidfd < 0 && errno == ESRCH)
		return kcore_error_create(KCORE_ERR_NOT_FOUND, ESRCH, NULL,
					  "no process %d", (int)p->pid);
	snprintf(path, sizeof(path), "%s/%d", p->procfs, (int)p->pid);
	p->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dir_fd < 0)
		return kcore_error_create(errno == ENOENT ? KCORE_ERR_NOT_FOUND
							  : KCORE_ERR_OS,
					  errno == ENOENT ? ESRCH : errno, NULL,
					  "no process %d", (int)p->pid);
	if (p->pidfd >= 0 &&
	    syscall(SYS_pidfd_send_signal, p->pidfd, 0, NULL, 0) != 0 &&
	    errno == ESRCH)
		return kcore_error_create(KCORE_ERR_NOT_FOUND, ESRCH, NULL,
					  "no process %d", (int)p->pid);
	return NULL;
}

static struct kcore_error *check_target(struct kcore_process *p)
{
	char *stat = kcore_proc_slurp(p, "stat", NULL), *s;
	unsigned long flags = 0;
	char state = 0;

	if (!stat)
		return kcore_error_create(errno == ENOENT || errno == ESRCH
						  ? KCORE_ERR_NOT_FOUND
						  : KCORE_ERR_OS,
					  errno == ENOENT ? ESRCH : errno, NULL,
					  "no process %d", (int)p->pid);
	s = strrchr(stat, ')');
	if (s)
		sscanf(s + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags);
	free(stat);
	if (flags & PF_KTHREAD)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "process %d is a kernel thread: it "
					  "has no user memory to dump",
					  (int)p->pid);
	/* A zombie leader with live threads still has memory to dump. */
	if ((state == 'Z' || state == 'X') && !live_task(p))
		return kcore_error_create(KCORE_ERR_NOT_FOUND, ESRCH, NULL,
					  "process %d is a zombie",
					  (int)p->pid);
	return NULL;
}

/* Name the segments after their mappings ("[vvar]" rather than the
 * classifier's "[anon]"); thread stacks keep the classifier's
 * "[stack:TID]". */
static void label_segments(struct kcore_source *src, struct proc_backend *b)
{
	size_t k = 0;

	for (size_t i = 0; i < src->nsegments && k < b->nloads; i++) {
		struct kcore_segment *seg = &src->segments[i];
		const struct kcore_process_mapping *m = b->loads[k].m;
		const char *label;

		if (seg->type != PT_LOAD)
			continue;
		k++;
		if (!m->name ||
		    (seg->label && strncmp(seg->label, "[stack", 6) == 0))
			continue;
		label = kcore_source_add_label(src, m->name);
		if (label)
			seg->label = label;
		if (strcmp(m->name, "[heap]") == 0)
			seg->cls = KCORE_CLASS_HEAP;
		else if (strncmp(m->name, "[stack", 6) == 0)
			seg->cls = KCORE_CLASS_STACK;
		else if (strcmp(m->name, "[vdso]") == 0)
			seg->cls = KCORE_CLASS_VDSO;
		else if (m->name[0] == '[' && strncmp(m->name, "[anon", 5) != 0)
			seg->cls = KCORE_CLASS_OTHER;
	}
}

struct kcore_error *
kcore_source_open_process(int32_t pid, const struct kcore_process_opts *opts,
			  struct kcore_source **ret)
{
	static const struct kcore_process_opts no_opts;
	struct kcore_source *src = NULL;
	struct proc_backend *b;
	struct kcore_process *p;
	struct kcore_error *err;
	char name[64];

	if (!opts)
		opts = &no_opts;
	if (!kcore_arch_host())
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "dumping a live process is "
					  "implemented for x86_64 and arm64 "
					  "only");
	if (pid <= 0)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "bad process id %d", (int)pid);
	if (pid == getpid())
		return kcore_error_create(
			KCORE_ERR_INVALID, 0, NULL,
			"process %d is this process: a process "
			"cannot ptrace itself",
			(int)pid);
	snprintf(name, sizeof(name), "process %d", (int)pid);
	err = kcore_source_alloc(name, NULL, &src);
	if (err)
		return err;
	b = calloc(1, sizeof(*b));
	if (!b) {
		kcore_source_destroy(src);
		return &kcore_error_nomem;
	}
	src->reader = &process_reader;
	src->reader_data = b;
	p = &b->proc;
	p->pid = pid;
	p->mm_tid = pid;
	p->opts = *opts;
	p->mem_fd = -1;
	p->pagemap_fd = -1;
	p->dir_fd = -1;
	p->pidfd = -1;
	p->scan_ioctl = !opts->pagemap_read;
	snprintf(p->procfs, sizeof(p->procfs), "%s",
		 opts->procfs ? opts->procfs : "/proc");
	p->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	p->info.pid = pid;
	err = hold_process(p);
	if (!err)
		err = check_target(p);
	if (!err)
		err = read_filter(p);
	if (err)
		goto fail;
	p->pagemap_fd = kcore_proc_open_file(p, "pagemap", O_RDONLY);
	if (p->pagemap_fd < 0) {
		err = kcore_proc_error(p, errno,
				       "cannot open /proc/PID/pagemap");
		goto fail;
	}
	/* The mappings are read before a short stop (to keep it short) and
	 * during a long one (to match the snapshot). */
	if (!opts->keep_stopped)
		err = kcore_proc_read_maps(p);
	if (!err)
		err = kcore_proc_capture(p);
	if (!err && opts->keep_stopped)
		err = kcore_proc_read_maps(p);
	if (err)
		goto fail;
	kcore_proc_apply_filter(p);
	p->mappings = calloc(p->nvmas ? p->nvmas : 1, sizeof(*p->mappings));
	if (!p->mappings) {
		err = &kcore_error_nomem;
		goto fail;
	}
	for (size_t i = 0; i < p->nvmas; i++)
		p->mappings[i] = p->vmas[i].m;
	p->info.mappings = p->mappings;
	p->info.nmappings = p->nvmas;
	err = build_image(src, b);
	if (err)
		goto fail;
	src->info.page_size = p->page_size;
	err = kcore_source_parse(src, false, NULL);
	if (err)
		goto fail;
	src->knows_holes = true;
	/* Its memory is read like a file: the dump may take its copy path
	 * (one thread reads and writes small blocks, the file's SHA-256 on
	 * its own thread beside it).  Through the ring, the 4 MiB blocks are
	 * gone from the caches when the calling thread writes them: the
	 * copy into the page cache took 2.2 s of CPU for a dense 2 GiB
	 * process, 0.2 s from a 1 MiB block just read (perf). */
	src->reads_like_file = true;
	label_segments(src, b);
	*ret = src;
	return NULL;
fail:
	kcore_source_destroy(src);
	return err;
}

const struct kcore_process_info *
kcore_source_process_info(const struct kcore_source *src)
{
	struct kcore_process *p;

	if (!src || src->reader != &process_reader)
		return NULL;
	p = proc_of(src);
	p->info.pagemap_method = p->scan_ioctl ? "PAGEMAP_SCAN" : "pagemap";
	return &p->info;
}

void kcore_process_resume(struct kcore_source *src)
{
	if (src && src->reader == &process_reader)
		kcore_proc_detach(proc_of(src));
}
