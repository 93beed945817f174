// SPDX-License-Identifier: MIT
/*
 * The source object, whatever its format: allocating and destroying it,
 * the accessors, and reads of kernel memory by physical or virtual
 * address.  Below the readers: opening a file (the reader its first bytes
 * name) is readers.c's, the ELF parsing every source goes through
 * read-elf.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "arch.h"
#include "read.h"
#include "source-impl.h"

static const char *const kind_names[KCORE_SOURCE_KIND_NUM] = {
	[KCORE_SOURCE_LIVE_KCORE] = "live-kcore",
	[KCORE_SOURCE_VMCORE] = "kernel-vmcore",
	[KCORE_SOURCE_PROCESS_CORE] = "process-core",
	[KCORE_SOURCE_ELF_CORE] = "elf-core",
};

const char *kcore_source_kind_name(enum kcore_source_kind kind)
{
	return (unsigned)kind < KCORE_SOURCE_KIND_NUM ? kind_names[kind]
						      : "unknown";
}

static const char *const class_names[KCORE_CLASS_NUM] = {
	[KCORE_CLASS_RAM] = "ram",	   [KCORE_CLASS_TEXT] = "text",
	[KCORE_CLASS_MODULES] = "modules", [KCORE_CLASS_VMALLOC] = "vmalloc",
	[KCORE_CLASS_VMEMMAP] = "vmemmap", [KCORE_CLASS_NOTE] = "note",
	[KCORE_CLASS_FILE] = "file",	   [KCORE_CLASS_ANON] = "anon",
	[KCORE_CLASS_STACK] = "stack",	   [KCORE_CLASS_HEAP] = "heap",
	[KCORE_CLASS_VDSO] = "vdso",	   [KCORE_CLASS_OTHER] = "other",
};

const char *kcore_segment_class_name(enum kcore_segment_class cls)
{
	return (unsigned)cls < KCORE_CLASS_NUM ? class_names[cls] : "unknown";
}

int kcore_segment_class_from_name(const char *name)
{
	for (int i = 0; i < KCORE_CLASS_NUM; i++)
		if (strcmp(class_names[i], name) == 0)
			return i;
	return -1;
}

/*
 * path against the working directory, without resolving symbolic links
 * (the name that was opened); "." and ".." components are left as they
 * are, only a leading "./" is dropped.  NULL when out of memory.
 */
char *kcore_absolute_path(const char *path)
{
	char *cwd, *ret;

	if (path[0] == '/')
		return strdup(path);
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return strdup(path); /* the directory is gone: as given */
	while (path[0] == '.' && path[1] == '/') {
		path += 2;
		while (*path == '/')
			path++;
	}
	size_t len = strlen(cwd) + strlen(path) + 2;

	ret = malloc(len);
	if (ret)
		snprintf(ret, len, "%s%s%s", cwd,
			 cwd[strlen(cwd) - 1] == '/' ? "" : "/", path);
	free(cwd);
	return ret;
}

struct kcore_error *kcore_source_alloc(const char *path,
				       const struct kcore_open_opts *opts,
				       struct kcore_source **ret)
{
	static const struct kcore_open_opts no_opts;
	struct kcore_source *src;

	if (!opts)
		opts = &no_opts;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, path,
					  "libelf is too old");
	src = calloc(1, sizeof(*src));
	if (!src)
		return &kcore_error_nomem;
	src->fd = -1;
	src->io = opts->io ? opts->io : &kcore_io_default;
	src->given_machine = opts->machine;
	src->path = strdup(path);
	if (!src->path) {
		free(src);
		return &kcore_error_nomem;
	}
	src->info.path = src->path;
	src->info.abs_path = src->path; /* kcore_source_open() makes it so */
	src->info.kind = KCORE_SOURCE_ELF_CORE; /* until the notes say more */
	*ret = src;
	return NULL;
}

void kcore_source_destroy(struct kcore_source *src)
{
	if (!src)
		return;
	if (src->elf)
		elf_end(src->elf);
	if (src->reader && src->reader->destroy)
		src->reader->destroy(src);
	free(src->image);
	if (src->fd >= 0)
		close(src->fd);
	free(src->abs_path);
	for (size_t i = 0; i < src->nnotes; i++)
		free(src->note_names[i]);
	free(src->note_names);
	free(src->notes);
	for (size_t i = 0; i < src->nlabels; i++)
		free(src->labels[i]);
	free(src->labels);
	free(src->segments);
	kcore_vmcoreinfo_destroy(src->vmcoreinfo);
	kcore_error_destroy(src->vmap_err);
	free(src->vmcoreinfo_note);
	free(src->trailer_text);
	free(src->path);
	free(src);
}

const struct kcore_source_info *
kcore_source_info(const struct kcore_source *src)
{
	return &src->info;
}

size_t kcore_source_nsegments(const struct kcore_source *src)
{
	return src->nsegments;
}

const struct kcore_segment *kcore_source_segment(const struct kcore_source *src,
						 size_t i)
{
	return i < src->nsegments ? &src->segments[i] : NULL;
}

size_t kcore_source_nnotes(const struct kcore_source *src)
{
	return src->nnotes;
}

const struct kcore_note *kcore_source_note(const struct kcore_source *src,
					   size_t i)
{
	return i < src->nnotes ? &src->notes[i] : NULL;
}

const struct kcore_vmcoreinfo *
kcore_source_vmcoreinfo(const struct kcore_source *src)
{
	return src->vmcoreinfo;
}

int kcore_source_fd(const struct kcore_source *src)
{
	return src->fd;
}

const struct kcore_io_ops *kcore_source_io(const struct kcore_source *src)
{
	return src->io;
}

struct kcore_error *kcore_source_pread_partial(struct kcore_source *src,
					       void *buf, size_t len,
					       uint64_t offset, size_t *done)
{
	size_t head = 0, more = 0;
	struct kcore_error *err = NULL;

	/* A synthetic image's headers and notes live in memory. */
	if (src->image && offset < src->image_size) {
		head = src->image_size - offset < len
			       ? (size_t)(src->image_size - offset)
			       : len;
		memcpy(buf, src->image + offset, head);
	}
	if (head < len)
		err = src->reader->pread(src, (unsigned char *)buf + head,
					 len - head, offset + head, &more);
	if (done)
		*done = head + more;
	return err;
}

struct kcore_error *kcore_source_pread(struct kcore_source *src, void *buf,
				       size_t len, uint64_t offset)
{
	return kcore_source_pread_partial(src, buf, len, offset, NULL);
}

struct kcore_error *kcore_source_next_data(struct kcore_source *src,
					   uint64_t offset, uint64_t end,
					   uint64_t *data, uint64_t *data_end)
{
	if (offset >= end) {
		*data = *data_end = end;
		return NULL;
	}
	if (!src->knows_holes || !src->reader->next_data) {
		*data = offset;
		*data_end = end;
		return NULL;
	}
	return src->reader->next_data(src, offset, end, data, data_end);
}

bool kcore_source_knows_holes(const struct kcore_source *src)
{
	return src->knows_holes;
}

const char *kcore_source_format(const struct kcore_source *src)
{
	return src->format_name ? src->format_name : src->reader->name;
}

static struct kcore_error *read_mem(struct kcore_source *src, uint64_t addr,
				    void *buf, size_t len, bool physical)
{
	unsigned char *out = buf;
	bool hint = src->info.physical_only;

	while (len) {
		const struct kcore_segment *found = NULL;
		uint64_t start, pos, chunk;

		/* Physical-only sources (kdump, LiME: disjoint ranges, often
		 * thousands) try the segment of the last read first:
		 * page-table walks stay in one.  Others keep "the first
		 * segment that holds it" (copies may overlap). */
		for (size_t n = hint ? 0 : 1; n <= src->nsegments; n++) {
			size_t i = n == 0 ? src->read_hint : n - 1;
			const struct kcore_segment *seg;

			if (i >= src->nsegments)
				continue;
			seg = &src->segments[i];
			if (seg->type != PT_LOAD || !seg->memsz)
				continue;
			if (physical && !seg->has_paddr)
				continue;
			start = physical ? seg->paddr : seg->vaddr;
			if (addr >= start && addr - start < seg->memsz) {
				found = seg;
				src->read_hint = i;
				break;
			}
		}
		if (!found)
			return kcore_error_create(
				KCORE_ERR_INVALID, 0, src->path,
				"no segment holds %s address 0x%" PRIx64,
				physical ? "physical" : "virtual", addr);
		start = physical ? found->paddr : found->vaddr;
		pos = addr - start;
		chunk = found->memsz - pos;
		if (chunk > len)
			chunk = len;
		if (pos < found->filesz) {
			uint64_t n = found->filesz - pos;
			struct kcore_error *err;

			if (n > chunk)
				n = chunk;
			err = kcore_source_pread(src, out, n,
						 found->offset + pos);
			if (err)
				return err;
			memset(out + n, 0, chunk - n);
		} else {
			memset(out, 0, chunk);
		}
		out += chunk;
		addr += chunk;
		len -= chunk;
	}
	return NULL;
}

/*
 * Virtual reads through the kernel's page tables, a page at a time: for
 * physical-only sources, and for parts of a kernel core's address space
 * that no segment covers (segments are tried first).
 */
static struct kcore_error *read_translated(struct kcore_source *src,
					   uint64_t vaddr, unsigned char *out,
					   size_t len, bool try_segments)
{
	uint64_t page = src->info.page_size ? src->info.page_size : 4096;

	while (len) {
		uint64_t paddr, n = page - (vaddr & (page - 1));
		struct kcore_error *err;

		if (n > len)
			n = len;
		if (try_segments) {
			err = read_mem(src, vaddr, out, (size_t)n, false);
			if (!err)
				goto next;
			if (err->code != KCORE_ERR_INVALID)
				return err;
			kcore_error_destroy(err);
		}
		err = kcore_source_vaddr_to_paddr(src, vaddr, &paddr, &n);
		if (err)
			return err;
		if (n > len)
			n = len;
		err = read_mem(src, paddr, out, (size_t)n, true);
		if (err)
			return err;
	next:
		out += n;
		vaddr += n;
		len -= (size_t)n;
	}
	return NULL;
}

struct kcore_error *kcore_source_read_vaddr(struct kcore_source *src,
					    uint64_t vaddr, void *buf,
					    size_t len)
{
	struct kcore_error *err;

	/* p_vaddr means nothing here: translate everything. */
	if (src->info.physical_only)
		return read_translated(src, vaddr, buf, len, false);
	err = read_mem(src, vaddr, buf, len, false);
	/* A vmcore's page tables reach what its segments do not (the
	 * kernel image in a kdump, vmalloc areas in an ELF of RAM). */
	if (err && err->code == KCORE_ERR_INVALID &&
	    src->info.kind == KCORE_SOURCE_VMCORE && src->arch &&
	    src->arch->pgtable_init && src->vmcoreinfo) {
		kcore_error_destroy(err);
		err = read_translated(src, vaddr, buf, len, true);
	}
	return err;
}

struct kcore_error *kcore_source_read_paddr(struct kcore_source *src,
					    uint64_t paddr, void *buf,
					    size_t len)
{
	return read_mem(src, paddr, buf, len, true);
}

struct kcore_error *kcore_source_count_holes(struct kcore_source *src,
					     size_t segment, uint64_t *ret_data,
					     uint64_t *ret_hole)
{
	const struct kcore_segment *seg = kcore_source_segment(src, segment);
	uint64_t pos, end, data = 0;

	if (!seg)
		return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					  "no segment %zu", segment);
	pos = seg->offset;
	end = seg->offset + seg->filesz;
	while (pos < end) {
		uint64_t d, e;
		struct kcore_error *err =
			kcore_source_next_data(src, pos, end, &d, &e);

		if (err)
			return err;
		if (d >= end)
			break;
		data += e - d;
		pos = e;
	}
	*ret_data = data;
	*ret_hole = seg->filesz - data;
	return NULL;
}

struct kcore_error *kcore_source_vaddr_to_paddr(struct kcore_source *src,
						uint64_t vaddr,
						uint64_t *ret_paddr,
						uint64_t *ret_len)
{
	return kcore_translate(src, vaddr, kcore_source_read_paddr, ret_paddr,
			       ret_len);
}
