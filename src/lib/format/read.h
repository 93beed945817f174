/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the non-ELF source formats (read-*.c): each presents
 * its input as an ELF core image whose headers and notes are built here
 * and whose PT_LOAD data its reader produces.  Not installed.
 */
#ifndef KCOREDUMP_READ_H
#define KCOREDUMP_READ_H

#include <stddef.h>
#include <stdint.h>

#include "source-impl.h"

/* A PT_LOAD of a synthetic image. */
struct kcore_image_load {
	uint64_t paddr;	 /* UINT64_MAX: not physical */
	uint64_t vaddr;	 /* 0 when the source is physical-only */
	uint64_t size;	 /* p_filesz = p_memsz */
	uint64_t offset; /* filled by kcore_image_build() */
};

/*
 * Build an ELF64 little-endian ET_CORE image for machine: one PT_NOTE with
 * notes (4-byte aligned note data, may be empty), then the loads, whose
 * data is laid out back to back from the first multiple of align after the
 * headers (load->offset is filled in).  More than 65534 program headers
 * use PN_XNUM with section header 0.  *ret_end is the end of the last
 * load's data: the image's logical size.
 */
struct kcore_error *
kcore_image_build(uint16_t machine, const unsigned char *notes,
		  size_t notes_len, struct kcore_image_load *loads,
		  size_t nloads, uint64_t align, unsigned char **ret,
		  size_t *ret_size, uint64_t *ret_end);

/*
 * A raw physical image (LiME, AVML) built with EM_NONE and no notes, its
 * reader ready to read it (pread, next_data): find the kernel's machine
 * and VMCOREINFO in its memory (detect.c), or take src->given_machine
 * (--arch) where the memory does not tell, and rebuild src->image with
 * them (the machine, a VMCOREINFO note).  loads are the image's; their
 * offsets may move (the reader takes them again).  Sets
 * info.machine_origin and _paddr, info.vmcoreinfo_paddr.  An error when
 * the given machine contradicts VMCOREINFO.
 */
struct kcore_error *kcore_image_identify(struct kcore_source *src,
					 struct kcore_image_load *loads,
					 size_t nloads, uint64_t align);

/* The machine VMCOREINFO text names by the lines only one architecture
 * publishes (the architecture tables' vmcoreinfo_marks), or EM_NONE. */
uint16_t kcore_vmcoreinfo_text_machine(const char *text, size_t len);

/* Append an ELF note (4-byte aligned) to *buf of *len bytes. */
struct kcore_error *kcore_note_append(unsigned char **buf, size_t *len,
				      const char *name, uint32_t type,
				      const void *desc, size_t desc_len);

/*
 * The descriptor of the first note called name in 4-byte aligned
 * little-endian note data, or NULL.
 */
const unsigned char *kcore_note_find(const unsigned char *notes, size_t len,
				     const char *name, size_t *ret_len);

/* "x86_64", "aarch64" or "e_machine N" (in buf) for messages. */
const char *kcore_machine_str(uint16_t machine, char *buf, size_t size);

/* e_machine for a utsname machine string ("x86_64", ...); EM_NONE if
 * unknown. */
uint16_t kcore_machine_from_uts(const char *machine);

/*
 * The direct-map base from VMCOREINFO text (NUMBER(PAGE_OFFSET) or
 * PAGE_OFFSET), when the kernel publishes it.
 */
bool kcore_vmcoreinfo_text_page_offset(const char *text, size_t len,
				       uint64_t *ret);

/* Read [offset, offset + len) of the real input file (not the image). */
struct kcore_error *kcore_fmt_read(struct kcore_source *src, void *buf,
				   size_t len, uint64_t offset);

/*
 * The bytes a kdump-compressed dump is read from: the file itself, or the
 * flattened records of one rearranged in place.  read() must return the
 * whole range or an error; size bounds what may be asked for.
 */
struct kcore_kdump_raw {
	struct kcore_error *(*read)(struct kcore_source *src, void *ctx,
				    void *buf, size_t len, uint64_t offset);
	void (*destroy)(void *ctx);
	/* Where data may be at or after offset (UINT64_MAX: none); NULL:
	 * SEEK_DATA for a plain file, else anywhere. */
	uint64_t (*next_data)(struct kcore_source *src, void *ctx,
			      uint64_t offset);
	void *ctx;
	uint64_t size;
	/* Bytes the file holds of the raw dump, when every byte of it must
	 * be in the file (a flattened stream has no holes): the bitmaps
	 * must fit in them.  0: not bounded (a sparse file may hold less). */
	uint64_t held;
};

/* Open a kdump-compressed dump read through raw (owned from now on). */
struct kcore_error *kcore_kdump_open_raw(struct kcore_source *src,
					 struct kcore_kdump_raw *raw,
					 const char *format);

/* The readers of readers.c's table, besides kcore_read_elf. */
extern const struct kcore_reader_ops kcore_read_kdump, kcore_read_flattened,
	kcore_read_lime, kcore_read_avml, kcore_read_stream;

/* The kdump reader's operations, which the flattened reader (read-flat.c)
 * shares once it has indexed its records. */
struct kcore_error *kcore_kdump_pread(struct kcore_source *src, void *buf,
				      size_t len, uint64_t offset,
				      size_t *done);
struct kcore_error *kcore_kdump_next_data(struct kcore_source *src,
					  uint64_t offset, uint64_t end,
					  uint64_t *data, uint64_t *data_end);
void kcore_kdump_destroy(struct kcore_source *src);

#endif
