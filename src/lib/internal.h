/* SPDX-License-Identifier: MIT */
/* Declarations shared inside libkcore; not installed. */
#ifndef KCOREDUMP_INTERNAL_H
#define KCOREDUMP_INTERNAL_H

#include <gelf.h>
#include <stdint.h>
#include <string.h>

#include "kcoredump/kcore.h"

struct kcore_source {
	char *path;
	int fd;
	Elf *elf;
	const struct kcore_io_ops *io;
	struct kcore_source_info info;
	struct kcore_segment *segments;
	size_t nsegments;
	struct kcore_note *notes;
	size_t nnotes;
	char **note_names; /* owned copies, one per note */
	struct kcore_vmcoreinfo *vmcoreinfo;
	unsigned char *vmcoreinfo_note; /* note read from memory, if any */
	char **labels;			/* owned segment labels */
	size_t nlabels;
	uint64_t stext; /* SYMBOL(_stext) or 0 */
};

/* Endian-aware loads from untrusted, unaligned note data. */
static inline uint64_t kcore_load(const unsigned char *p, unsigned size,
				  bool big_endian)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++) {
		unsigned shift = big_endian ? 8 * (size - 1 - i) : 8 * i;

		v |= (uint64_t)p[i] << shift;
	}
	return v;
}

/* Classify segments and fill the layout fields of the info. */
struct kcore_error *kcore_classify_segments(struct kcore_source *src);
/* Explain why opening path failed; live says it is the kernel's kcore. */
struct kcore_error *kcore_explain_open_error(const char *path, int errnum,
					     bool live, const char *sysroot);
/* Find VMCOREINFO through /sys/kernel/vmcoreinfo for old kernels. */
struct kcore_error *kcore_vmcoreinfo_from_sysfs(struct kcore_source *src,
						const char *sysroot);
/* Modules (and build IDs) of a process core open as elf, via libdwfl. */
struct kcore_error *kcore_elf_modules(Elf *elf, const char *path,
				      struct kcore_module **ret,
				      size_t *ret_count);
const char *kcore_source_add_label(struct kcore_source *src, const char *label);

#endif
