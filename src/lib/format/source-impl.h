/* SPDX-License-Identifier: MIT */
/*
 * The source object inside libkcore (the public view is
 * kcoredump/source.h): the readers behind it, its fields, and the steps
 * that open, parse, classify and translate it.  Not installed.
 */
#ifndef KCOREDUMP_SOURCE_IMPL_H
#define KCOREDUMP_SOURCE_IMPL_H

#include <gelf.h>
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "kcoredump/kcore.h"

/*
 * A reader: one input format, in the manner of libarchive's read formats
 * and mirroring the writers (format/write.h).  Every source is seen as an
 * ELF core image: offsets are offsets in that image.  For an ELF file the
 * image is the file (format/read-elf.c); other formats (and live
 * processes) present a synthetic image whose headers and notes are built
 * in memory (kcore_source.image, parsed with elf_memory()) and whose
 * segment data the reader produces.  Per-open variants (a seekable or a
 * sequential stream, ...) live in the reader's state, reader_data.
 * The table of the readers recognised by their first bytes is in
 * format/readers.c.
 */
struct kcore_reader_ops {
	/* What kcore_source_format() says, unless the open sets
	 * kcore_source.format_name to a variant. */
	const char *name;
	/* The same for people ("kdump-compressed"); NULL: the name. */
	const char *title;
	/* Why a file of this format holds no kcoredump digests, when it
	 * has no place for a note ("a LiME file has no place for
	 * digests"); NULL: it has one. */
	const char *no_digests;
	/* Whether the first len bytes (up to 64) are this format's.  NULL:
	 * a reader opened by its own function (a live process). */
	bool (*probe)(const unsigned char *magic, size_t len);
	/* Fill src->reader_data, src->image/image_size (ehdr, phdrs and
	 * notes; owned, freed with free()) and src->info.file_size (the
	 * image's logical size); the ELF parsing then proceeds as for a
	 * file.  NULL: the file is the image (ELF). */
	struct kcore_error *(*open)(struct kcore_source *src);
	/* Read [offset, offset + len) of the image; *done (when not NULL)
	 * says how many bytes arrived before an error. */
	struct kcore_error *(*pread)(struct kcore_source *src, void *buf,
				     size_t len, uint64_t offset, size_t *done);
	/* First data byte at or after offset, below end, and the end of its
	 * run; *data = *data_end = end when only holes remain.  NULL: all
	 * data. */
	struct kcore_error *(*next_data)(struct kcore_source *src,
					 uint64_t offset, uint64_t end,
					 uint64_t *data, uint64_t *data_end);
	/* Release reader_data (may be NULL). */
	void (*destroy)(struct kcore_source *src);
};

/* The ELF/kcore reader (read-elf.c): the default. */
extern const struct kcore_reader_ops kcore_read_elf;
/* The reader whose probe accepts the first len bytes of a file (readers.c);
 * the ELF reader when none does (its parser explains what is wrong). */
const struct kcore_reader_ops *kcore_reader_probe(const unsigned char *magic,
						  size_t len);

/*
 * Exact kernel virtual addresses for a physical-only vmcore (kdump, LiME,
 * AVML, an ELF of physical memory): what kexec-tools' /proc/vmcore
 * headers carry.  The kernel image [text_vaddr, + text_size) at
 * text_paddr, and the direct map: RAM at paddr is at direct_map + paddr.
 */
struct kcore_kernel_vmap {
	uint64_t text_vaddr, text_paddr, text_size;
	uint64_t direct_map;
};

struct kcore_arch;

struct kcore_source {
	char *path;
	char *abs_path;
	int fd;
	Elf *elf;
	const struct kcore_io_ops *io;
	const struct kcore_reader_ops *reader;
	void *reader_data;
	const char *format_name;  /* a variant of reader->name, or NULL */
	const char *format_title; /* the variant's title, or NULL */
	unsigned char *image;	  /* synthetic ELF headers + notes, or NULL */
	size_t image_size;
	bool knows_holes; /* next_data tells holes from data */
	/* Not a regular file, but read like one: a byte costs the same in
	 * small blocks as in large ones, and it is read once, where and when
	 * the dump asks (a live process, through /proc/PID/mem): the dump's
	 * copy path may take it (dump-copy.c). */
	bool reads_like_file;
	/* The machine the caller named (kcore_open_opts.machine), for an
	 * image whose headers name none. */
	uint16_t given_machine;
	/* Its VMCOREINFO note was found in its memory (detect.c). */
	bool vmcoreinfo_in_memory;
	struct kcore_source_info info;
	/* The architecture table of info.machine (arch/arch.h), or NULL. */
	const struct kcore_arch *arch;
	struct kcore_segment *segments;
	size_t nsegments;
	struct kcore_note *notes;
	size_t nnotes;
	char **note_names; /* owned copies, one per note */
	struct kcore_vmcoreinfo *vmcoreinfo;
	unsigned char *vmcoreinfo_note; /* note read from memory, if any */
	/* Our final metadata from the trailer after the image, which our
	 * metadata note's descriptor then points at (read-elf-notes.c). */
	char *trailer_text;
	char **labels; /* owned segment labels */
	size_t nlabels;
	uint64_t stext;	  /* SYMBOL(_stext) or 0 */
	size_t read_hint; /* segment of the last physical/virtual read */
	bool vmap_done;	  /* kcore_source_kernel_vmap() memo */
	struct kcore_kernel_vmap vmap;
	struct kcore_error *vmap_err;
};

/*
 * The kernel image mapping and direct-map base of a physical-only x86_64
 * or arm64 vmcore, from VMCOREINFO and the dump's own page tables
 * (translate.c): the image's leaves must all follow phys_base
 * (kimage_voffset), and the first and last byte of every physical segment
 * must translate by the direct-map base.  UNSUPPORTED says why not.
 * Computed once per source; the tables are read with read_paddr.
 */
struct kcore_error *kcore_source_kernel_vmap(struct kcore_source *src,
					     kcore_read_paddr_fn read_paddr,
					     struct kcore_kernel_vmap *ret);

/*
 * The file descriptor whose offsets are the image's, when bytes may be
 * moved from it by splice(2) instead of read (an ELF file or /proc/kcore,
 * read with the system calls); -1 when the reader makes the bytes (a
 * compressed, kdump or synthetic image) or reads through other I/O ops.
 */
int kcore_source_splice_fd(const struct kcore_source *src);

/* Classify segments and fill the layout fields of the info. */
struct kcore_error *kcore_classify_segments(struct kcore_source *src);
/* Explain why opening path failed; live says it is the kernel's kcore. */
struct kcore_error *kcore_explain_open_error(const char *path, int errnum,
					     bool live, const char *sysroot);
/* This boot's ID (/proc/sys/kernel/random/boot_id, 36 characters of
 * hex digits and dashes), or false. */
bool kcore_boot_id(char out[64]);
/* Where /sys/kernel/vmcoreinfo (under sysroot) says the VMCOREINFO note
 * of an old kernel is, and the file's name in path; *ret_size 0: no such
 * file. */
struct kcore_error *kcore_vmcoreinfo_sysfs(const char *sysroot, char *path,
					   size_t path_size,
					   uint64_t *ret_paddr,
					   uint32_t *ret_size);
/*
 * The physical address of a kernel virtual address (translate.c, behind
 * kcore_source_vaddr_to_paddr): from the source's segments, the x86_64
 * kernel image mapping or the kernel's page tables, read with read_paddr.
 */
struct kcore_error *kcore_translate(struct kcore_source *src, uint64_t vaddr,
				    kcore_read_paddr_fn read_paddr,
				    uint64_t *ret_paddr, uint64_t *ret_len);
/* path made absolute against the working directory (links kept). */
char *kcore_absolute_path(const char *path);

/*
 * For sources that are not files (kcore_source_open_process and the like):
 * allocate a source, then, with reader/image/file_size filled, parse the
 * image like a file.  On error the caller destroys src.
 */
struct kcore_error *kcore_source_alloc(const char *path,
				       const struct kcore_open_opts *opts,
				       struct kcore_source **ret);
struct kcore_error *kcore_source_parse(struct kcore_source *src, bool live,
				       const struct kcore_open_opts *opts);

/* An owned copy of label (classify.c); NULL when out of memory. */
const char *kcore_source_add_label(struct kcore_source *src, const char *label);

#endif
