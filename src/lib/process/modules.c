// SPDX-License-Identifier: MIT
/* Modules mapped in a process core, as libdwfl sees them (the list
 * `eu-unstrip -n --core` prints). */
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

struct module_list {
	struct kcore_module *mods;
	size_t count;
	size_t cap;
	bool nomem;
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int add_module(Dwfl_Module *mod, void **userdata, const char *name,
		      Dwarf_Addr start, void *arg)
{
	struct module_list *list = arg;
	struct kcore_module *m;
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	const char *mainfile = NULL, *debugfile = NULL;
	Dwarf_Addr end;
	int len;

	if (list->count == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 16;
		struct kcore_module *mods =
			realloc(list->mods, cap * sizeof(*mods));

		if (!mods) {
			list->nomem = true;
			return DWARF_CB_ABORT;
		}
		list->mods = mods;
		list->cap = cap;
	}
	/* Look for the file on this system, as eu-unstrip does. */
	Elf *elf = dwfl_module_getelf(mod, &bias);

	dwfl_module_getdwarf(mod, &bias);
	dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, &mainfile,
			 &debugfile);
	m = &list->mods[list->count];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->name = dup_or_null(name ? name : "");
	m->file = dup_or_null(mainfile);
	m->elf_in_core = elf && !mainfile;
	m->debug_file = dup_or_null(debugfile);
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > 0) {
		m->build_id = malloc((size_t)len);
		if (m->build_id) {
			memcpy(m->build_id, bits, (size_t)len);
			m->build_id_len = (size_t)len;
			m->build_id_vaddr = vaddr;
		}
	}
	list->count++;
	if (!m->name || (mainfile && !m->file) ||
	    (debugfile && !m->debug_file) || (len > 0 && !m->build_id)) {
		list->nomem = true;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

struct kcore_error *kcore_elf_modules(Elf *elf, const char *path,
				      struct kcore_module **ret,
				      size_t *ret_count)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	struct module_list list = { 0 };
	Dwfl *dwfl;
	int n;

	*ret = NULL;
	*ret_count = 0;
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl)
		return &kcore_error_nomem;
	n = dwfl_core_file_report(dwfl, elf, NULL);
	if (n < 0) {
		struct kcore_error *err = kcore_error_create(
			KCORE_ERR_FORMAT, 0, path,
			"cannot list the modules of the core: %s",
			dwfl_errmsg(-1));

		dwfl_end(dwfl);
		return err;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, add_module, &list, 0);
	dwfl_end(dwfl);
	if (list.nomem) {
		kcore_modules_free(list.mods, list.count);
		return &kcore_error_nomem;
	}
	*ret = list.mods;
	*ret_count = list.count;
	return NULL;
}

/* Copy the data of segment seg into fd at its offset, holes left out. */
static struct kcore_error *copy_segment(struct kcore_source *src,
					const struct kcore_segment *seg, int fd,
					unsigned char *buf, size_t len)
{
	uint64_t pos = seg->offset, end = seg->offset + seg->filesz;

	while (pos < end) {
		uint64_t data, data_end;
		struct kcore_error *err =
			kcore_source_next_data(src, pos, end, &data, &data_end);

		if (err)
			return err;
		if (data >= end)
			break;
		for (pos = data; pos < data_end;) {
			size_t n = data_end - pos < len
					   ? (size_t)(data_end - pos)
					   : len;

			err = kcore_source_pread(src, buf, n, pos);
			if (err)
				return err;
			if (pwrite(fd, buf, n, (off_t)pos) != (ssize_t)n)
				return kcore_error_create(KCORE_ERR_OS, errno,
							  NULL,
							  "cannot write a "
							  "memfd");
			pos += n;
		}
	}
	return NULL;
}

/*
 * libdwfl reads a core's memory through libelf, which reads a file or a
 * buffer, not a .zst/.xz stream.  For such a source, hand it a sparse
 * in-memory file (memfd) with the headers, the notes and the data of the
 * segments it reads, through the random-access reader: the file-backed
 * ones (ELF headers and build IDs of the mapped files, the dynamic
 * linker's data), the vDSO and anonymous areas of at most 1 MiB (the
 * dynamic linker's allocations).  The cost follows those segments' data,
 * not the core's.
 */
static struct kcore_error *stream_modules(struct kcore_source *src,
					  struct kcore_module **ret,
					  size_t *ret_count)
{
	enum { CHUNK = 1 << 20, SMALL_AREA = 1 << 20 };
	struct kcore_error *err = NULL;
	unsigned char *buf = malloc(CHUNK);
	int fd = memfd_create("kcoredump-modules", MFD_CLOEXEC);
	Elf *elf = NULL;

	if (!buf || fd < 0) {
		err = buf ? kcore_error_create(KCORE_ERR_OS, errno, NULL,
					       "cannot create a memfd")
			  : &kcore_error_nomem;
		goto out;
	}
	if (pwrite(fd, src->image, src->image_size, 0) !=
		    (ssize_t)src->image_size ||
	    ftruncate(fd, (off_t)src->info.file_size) != 0) {
		err = kcore_error_create(KCORE_ERR_OS, errno, NULL,
					 "cannot write a memfd");
		goto out;
	}
	for (size_t i = 0; !err && i < src->nsegments; i++) {
		const struct kcore_segment *seg = &src->segments[i];

		/* The mapped files and the vDSO; small anonymous areas,
		 * where the dynamic linker keeps its link_map list (stacks
		 * and large areas hold none of it). */
		if (seg->type == PT_LOAD && (seg->cls == KCORE_CLASS_FILE ||
					     seg->cls == KCORE_CLASS_VDSO ||
					     ((seg->cls == KCORE_CLASS_ANON ||
					       seg->cls == KCORE_CLASS_HEAP) &&
					      seg->filesz <= SMALL_AREA)))
			err = copy_segment(src, seg, fd, buf, CHUNK);
	}
	if (err)
		goto out;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		err = kcore_error_create(KCORE_ERR_FORMAT, 0, src->path,
					 "cannot list the modules of the "
					 "core: %s",
					 elf_errmsg(-1));
		goto out;
	}
	err = kcore_elf_modules(elf, src->path, ret, ret_count);
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

struct kcore_error *kcore_source_modules(struct kcore_source *src,
					 struct kcore_module **ret,
					 size_t *ret_count)
{
	*ret = NULL;
	*ret_count = 0;
	if (src->info.kind != KCORE_SOURCE_PROCESS_CORE)
		return NULL;
	if (src->image)
		return stream_modules(src, ret, ret_count);
	return kcore_elf_modules(src->elf, src->path, ret, ret_count);
}

void kcore_modules_free(struct kcore_module *mods, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(mods[i].name);
		free(mods[i].file);
		free(mods[i].debug_file);
		free(mods[i].build_id);
	}
	free(mods);
}
