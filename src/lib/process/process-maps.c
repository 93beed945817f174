// SPDX-License-Identifier: MIT
/*
 * A live process's mappings (/proc/PID/smaps), the kernel's coredump
 * filter applied to them (vma_dump_size() in fs/coredump.c), where their
 * data is (/proc/PID/pagemap), and reading it.
 *
 * Only private anonymous mappings (and private hugetlb ones) are skipped
 * where the page tables hold nothing: the kernel's dumper skips those
 * pages too (FOLL_DUMP).  File and shared memory pages that are not mapped
 * in this process still hold data, so those mappings are read whole, as
 * the kernel faults them in.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcoredump/kcore.h"
#include "process-internal.h"

/* PAGEMAP_SCAN (Linux 6.7, commit 52526ca7fdb9), declared here for
 * older headers. */
#define KC_PAGE_IS_PRESENT (1u << 3)
#define KC_PAGE_IS_SWAPPED (1u << 4)
#define KC_PAGE_IS_PFNZERO (1u << 5)

struct kc_page_region {
	uint64_t start, end, categories;
};

struct kc_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask,
		return_mask;
};

#define KC_PAGEMAP_SCAN _IOWR('f', 16, struct kc_pm_scan_arg)

#define PM_PRESENT    (1ull << 63)
#define PM_SWAP	      (1ull << 62)
#define SCAN_REGIONS  512
#define PAGEMAP_CHUNK 65536 /* entries per pagemap read */

const char *kcore_process_read_name(enum kcore_process_read r)
{
	switch (r) {
	case KCORE_PROCESS_READ_NONE:
		return "none";
	case KCORE_PROCESS_READ_SCAN:
		return "pagemap";
	case KCORE_PROCESS_READ_ALL:
		return "all";
	}
	return "unknown";
}

static struct kcore_error *add_vma(struct kcore_process *p,
				   struct kcore_proc_vma **ret)
{
	struct kcore_proc_vma *v;

	if ((p->nvmas & (p->nvmas - 1)) == 0) {
		size_t cap = p->nvmas ? 2 * p->nvmas : 64;

		v = realloc(p->vmas, cap * sizeof(*v));
		if (!v)
			return &kcore_error_nomem;
		p->vmas = v;
	}
	v = &p->vmas[p->nvmas++];
	memset(v, 0, sizeof(*v));
	*ret = v;
	return NULL;
}

static bool has_flag(const char *flags, const char *f)
{
	size_t n = strlen(f);

	for (const char *s = flags; (s = strstr(s, f)); s += n)
		if ((s == flags || s[-1] == ' ') &&
		    (s[n] == ' ' || s[n] == '\n' || s[n] == '\0'))
			return true;
	return false;
}

/* "[vdso]", "[vvar]", "[vsyscall]", ...: mappings with a special name
 * the kernel always dumps (always_dump_vma()).  The heap, stacks and
 * named anonymous memory are ordinary. */
static bool is_special(const char *name)
{
	return name && name[0] == '[' && strcmp(name, "[heap]") != 0 &&
	       strncmp(name, "[stack", 6) != 0 &&
	       strncmp(name, "[anon:", 6) != 0 &&
	       strncmp(name, "[anon_shmem:", 12) != 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static struct kcore_error *parse_header(struct kcore_process *p,
					const char *line)
{
	unsigned long long start, end, off, inode;
	unsigned maj, min;
	char perms[8];
	int used = 0;
	struct kcore_proc_vma *v;
	struct kcore_error *err;
	const char *name;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &maj, &min, &inode, &used) < 7)
		return kcore_error_create(KCORE_ERR_FORMAT, 0, NULL,
					  "cannot parse /proc/%d/smaps line "
					  "'%.80s'",
					  (int)p->pid, line);
	err = add_vma(p, &v);
	if (err)
		return err;
	v->m.start = start;
	v->m.end = end;
	v->m.offset = off;
	memcpy(v->m.perms, perms, 4);
	v->m.perms[4] = '\0';
	v->inode = inode;
	v->dev_major = maj;
	v->dev_minor = min;
	name = line + used;
	if (*name) {
		v->path = strdup(name);
		if (!v->path)
			return &kcore_error_nomem;
		v->path[strcspn(v->path, "\n")] = '\0';
	}
	v->m.name = v->path;
	v->m.has_file = inode != 0 || (v->path && v->path[0] == '/');
	v->special = !v->m.has_file && is_special(v->path);
	v->deleted = v->path && ends_with(v->path, " (deleted)");
	return NULL;
}

struct kcore_error *kcore_proc_read_maps(struct kcore_process *p)
{
	struct kcore_error *err = NULL;
	char *text = kcore_proc_slurp(p, "smaps", NULL), *line, *save = NULL;

	if (!text)
		return kcore_proc_error(p, errno,
					"cannot read /proc/PID/smaps");
	for (line = strtok_r(text, "\n", &save); line && !err;
	     line = strtok_r(NULL, "\n", &save)) {
		struct kcore_proc_vma *v =
			p->nvmas ? &p->vmas[p->nvmas - 1] : NULL;
		unsigned long long kb;

		if (line[0] >= 'A' && line[0] <= 'Z' && strchr(line, ':') &&
		    strchr(line, ':') < strchr(line, ' ')) {
			if (!v)
				continue;
			if (sscanf(line, "Anonymous: %llu", &kb) == 1 ||
			    sscanf(line, "Swap: %llu", &kb) == 1)
				v->has_anon |= kb != 0;
			else if (strncmp(line, "VmFlags:", 8) == 0) {
				v->shared = has_flag(line + 8, "sh");
				v->dontdump = has_flag(line + 8, "dd");
				v->io = has_flag(line + 8, "io");
				v->pfnmap = has_flag(line + 8, "pf");
				v->hugetlb = has_flag(line + 8, "ht");
				v->readable = has_flag(line + 8, "rd");
			}
			continue;
		}
		err = parse_header(p, line);
	}
	free(text);
	/* A process has mappings until its address space is gone. */
	if (!err && !p->nvmas)
		err = kcore_proc_error(p, ESRCH, "its mappings are gone");
	return err;
}

/* Whether the mapping starts with an ELF header, or its file is
 * executable (the kernel's ELF_HEADERS test). */
static bool maps_elf_header(struct kcore_process *p,
			    const struct kcore_proc_vma *v)
{
	unsigned char magic[4];
	struct stat st;

	if (v->path && v->path[0] == '/' && !v->deleted &&
	    stat(v->path, &st) == 0 && (st.st_mode & 0111))
		return true;
	return kcore_proc_read_mem(p, magic, 4, v->m.start) == 4 &&
	       memcmp(magic, "\177ELF", 4) == 0;
}

bool kcore_proc_vma_anon_private(const struct kcore_proc_vma *v)
{
	return !v->io && !v->pfnmap && !v->m.has_file && !v->shared &&
	       !v->special && !v->hugetlb;
}

static void decide(struct kcore_process *p, struct kcore_proc_vma *v)
{
	uint32_t f = p->info.filter;
	uint64_t whole = v->m.end - v->m.start;
	/* How pages are found when the mapping is dumped. */
	enum kcore_process_read how =
		v->io || v->pfnmap		 ? KCORE_PROCESS_READ_NONE
		: kcore_proc_vma_anon_private(v) ? KCORE_PROCESS_READ_SCAN
		: v->hugetlb && !v->shared	 ? KCORE_PROCESS_READ_SCAN
						 : KCORE_PROCESS_READ_ALL;
	const char *why;
	uint64_t size = 0;

	/* The vsyscall page is not in the VMA tree: pagemap knows nothing
	 * and it is unreadable with vsyscall=xonly (the default). */
	if (v->path && strcmp(v->path, "[vsyscall]") == 0)
		how = KCORE_PROCESS_READ_NONE;
	if (v->special) {
		why = "special";
		size = whole;
	} else if (p->opts.all_mappings) {
		why = "all-mappings";
		size = whole;
	} else if (v->dontdump) {
		why = "dontdump";
	} else if (v->hugetlb) {
		why = v->shared ? "hugetlb-shared" : "hugetlb-private";
		if (f & (v->shared ? KCORE_DUMP_HUGETLB_SHARED
				   : KCORE_DUMP_HUGETLB_PRIVATE))
			size = whole;
	} else if (v->io) {
		why = "io";
	} else if (v->shared) {
		/* Shared memory of an unlinked file (shmem, memfd, SysV)
		 * counts as anonymous. */
		why = v->deleted ? "anon-shared" : "mapped-shared";
		if (f & (v->deleted ? KCORE_DUMP_ANON_SHARED
				    : KCORE_DUMP_MAPPED_SHARED))
			size = whole;
	} else if (v->has_anon && (f & KCORE_DUMP_ANON_PRIVATE)) {
		why = "anon-private";
		size = whole;
	} else if (!v->m.has_file) {
		why = v->has_anon ? "anon-private" : "untouched";
	} else if (f & KCORE_DUMP_MAPPED_PRIVATE) {
		why = "mapped-private";
		size = whole;
	} else if ((f & KCORE_DUMP_ELF_HEADERS) && v->m.offset == 0 &&
		   v->readable && maps_elf_header(p, v)) {
		why = "elf-header";
		size = p->page_size < whole ? p->page_size : whole;
		how = KCORE_PROCESS_READ_ALL;
	} else {
		why = "mapped-private";
	}
	v->m.dump_size = size;
	v->m.read = size ? how : KCORE_PROCESS_READ_NONE;
	v->m.reason = why;
}

void kcore_proc_apply_filter(struct kcore_process *p)
{
	for (size_t i = 0; i < p->nvmas; i++)
		decide(p, &p->vmas[i]);
}

/* ---- finding data ---- */

struct scan_cache {
	uint64_t lo, hi; /* [lo, hi) was scanned */
	struct kc_page_region r[SCAN_REGIONS];
	size_t n;
};

static struct scan_cache *cache_of(struct kcore_process *p)
{
	if (!p->scan_cache)
		p->scan_cache = calloc(1, sizeof(struct scan_cache));
	return p->scan_cache;
}

/* Scan [addr, end) with PAGEMAP_SCAN; false if the ioctl is missing. */
static bool scan_ioctl(struct kcore_process *p, struct scan_cache *c,
		       uint64_t addr, uint64_t end)
{
	struct kc_pm_scan_arg a = {
		.size = sizeof(a),
		.start = addr,
		.end = end,
		.vec = (uint64_t)(uintptr_t)c->r,
		.vec_len = SCAN_REGIONS,
		/* Present or swapped, but not the shared zero page. */
		.category_inverted = KC_PAGE_IS_PFNZERO,
		.category_mask = KC_PAGE_IS_PFNZERO,
		.category_anyof_mask = KC_PAGE_IS_PRESENT | KC_PAGE_IS_SWAPPED,
		.return_mask = KC_PAGE_IS_PRESENT | KC_PAGE_IS_SWAPPED,
	};
	long n = ioctl(p->pagemap_fd, KC_PAGEMAP_SCAN, &a);

	p->info.pagemap_calls++;
	if (n < 0 && errno == ESRCH) { /* the address space is gone */
		p->mm_gone = true;
		p->info.vanished = true;
	}
	if (n < 0)
		return false;
	c->lo = addr;
	c->hi = a.walk_end > addr && a.walk_end <= end ? a.walk_end : end;
	c->n = (size_t)n;
	p->info.bytes_scanned += c->hi - c->lo;
	return true;
}

/* The same from the pagemap entries, one chunk at a time. */
static struct kcore_error *scan_read(struct kcore_process *p,
				     struct scan_cache *c, uint64_t addr,
				     uint64_t end)
{
	uint64_t pages = (end - addr) / p->page_size, *ent;
	ssize_t got;

	if (!p->pagemap_buf)
		p->pagemap_buf = malloc(PAGEMAP_CHUNK * sizeof(uint64_t));
	ent = p->pagemap_buf;
	if (!ent)
		return &kcore_error_nomem;

	if (pages > PAGEMAP_CHUNK)
		pages = PAGEMAP_CHUNK;
	got = pread(p->pagemap_fd, ent, pages * 8, addr / p->page_size * 8);
	p->info.pagemap_calls++;
	if (got == 0) { /* the address space is gone */
		p->mm_gone = true;
		p->info.vanished = true;
	}
	if (got < 8)
		return kcore_error_create_at(KCORE_ERR_OS,
					     got < 0 ? errno : EIO, NULL, addr,
					     "cannot read /proc/%d/pagemap at "
					     "0x%" PRIx64,
					     (int)p->pid, addr);
	pages = (uint64_t)got / 8;
	c->lo = addr;
	c->hi = addr + pages * p->page_size;
	c->n = 0;
	for (uint64_t i = 0; i < pages && c->n < SCAN_REGIONS; i++) {
		uint64_t a = addr + i * p->page_size;

		if (!(ent[i] & (PM_PRESENT | PM_SWAP)))
			continue;
		if (c->n && c->r[c->n - 1].end == a) {
			c->r[c->n - 1].end = a + p->page_size;
			continue;
		}
		c->r[c->n++] =
			(struct kc_page_region){ a, a + p->page_size, 0 };
		if (c->n == SCAN_REGIONS)
			c->hi = a + p->page_size;
	}
	p->info.bytes_scanned += c->hi - c->lo;
	return NULL;
}

void kcore_proc_scan_forget(struct kcore_process *p)
{
	struct scan_cache *c = p->scan_cache;

	if (c)
		c->lo = c->hi = 0;
}

struct kcore_error *kcore_proc_next_data(struct kcore_process *p,
					 const struct kcore_process_mapping *m,
					 uint64_t addr, uint64_t end,
					 uint64_t *ret_start, uint64_t *ret_end)
{
	struct scan_cache *c;

	*ret_start = *ret_end = end;
	if (addr >= end || m->read == KCORE_PROCESS_READ_NONE)
		return NULL;
	if (m->read == KCORE_PROCESS_READ_ALL) {
		*ret_start = addr;
		return NULL;
	}
	c = cache_of(p);
	if (!c)
		return &kcore_error_nomem;
	addr -= addr % p->page_size;
	while (addr < end) {
		if (!(addr >= c->lo && addr < c->hi)) {
			struct kcore_error *err = NULL;

			if (!p->mm_gone &&
			    (!p->scan_ioctl || !scan_ioctl(p, c, addr, end))) {
				p->scan_ioctl = p->scan_ioctl && !p->mm_gone;
				if (!p->mm_gone)
					err = scan_read(p, c, addr, end);
			}
			/* Gone: nothing tells where its data was, so all
			 * that is left counts as unread, not as holes. */
			if (p->mm_gone) {
				kcore_error_destroy(err);
				*ret_start = addr;
				*ret_end = end;
				return NULL;
			}
			if (err)
				return err;
		}
		for (size_t i = 0; i < c->n; i++) {
			uint64_t s = c->r[i].start, e = c->r[i].end;

			if (e <= addr)
				continue;
			/* Adjacent regions (present, then swapped) are
			 * one extent. */
			while (i + 1 < c->n && c->r[i + 1].start == e)
				e = c->r[++i].end;
			*ret_start = s > addr ? s : addr;
			*ret_end = e < end ? e : end;
			if (*ret_start >= end)
				*ret_start = *ret_end = end;
			return NULL;
		}
		addr = c->hi;
	}
	return NULL;
}

/* ---- reading ---- */

ssize_t kcore_proc_read_mem(struct kcore_process *p, void *buf, size_t len,
			    uint64_t addr)
{
	size_t done = 0;

	/*
	 * Only through /proc/PID/mem, bound to the address space at the
	 * stop: process_vm_readv() takes a PID number, which names another
	 * process once this one is reaped and the number reused (and the new
	 * program after an execve).  It reads like the kernel's dumper, with
	 * FOLL_FORCE (PROT_NONE pages too).
	 */
	while (done < len && !p->mm_gone) {
		ssize_t n = p->mem_fd >= 0
				    ? pread(p->mem_fd, (char *)buf + done,
					    len - done, (off_t)(addr + done))
				    : -1;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (p->mem_fd < 0)
				errno = EBADF;
			break;
		}
		if (n == 0) {
			/* The address space has no users left: the
			 * process exited (or called execve). */
			p->mm_gone = true;
			p->info.vanished = true;
			break;
		}
		done += (size_t)n;
	}
	if (done < len && p->mm_gone)
		errno = ESRCH;
	p->info.bytes_read += done;
	return (ssize_t)done;
}
