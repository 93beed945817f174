// SPDX-License-Identifier: MIT
/*
 * The ELF reader: an ELF core file or /proc/kcore, and the parsing every
 * source's ELF core image goes through (a synthetic image too): ELF
 * header, program headers and notes, each checked against the file
 * before anything trusts it.  The headers and notes are parsed by
 * common/elf-parse.c; libelf checks the file once (elf_begin) and fetches
 * the note bytes; segment payloads are read with our own pread layer.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "elf-parse.h"
#include "read-elf.h"
#include "read.h"
#include "source-impl.h"

static struct kcore_error *libelf_error(const char *path, const char *what)
{
	return kcore_error_create(KCORE_ERR_FORMAT, 0, path, "%s: %s", what,
				  kcore_elf_reason());
}

static const char *phdr_type_name(uint32_t type)
{
	switch (type) {
	case PT_LOAD:
		return "PT_LOAD";
	case PT_NOTE:
		return "PT_NOTE";
	default:
		return "program header";
	}
}

/* What segment i (its header at hdr_off) may not be: a PT_LOAD or PT_NOTE
 * whose file range overflows, a PT_NOTE past the end of a file of known
 * size, a PT_LOAD larger in the file than in memory or wrapping around. */
static struct kcore_error *check_phdr(struct kcore_source *src,
				      const struct kcore_elf_phdr *ph, size_t i,
				      uint64_t hdr_off, bool regular)
{
	uint64_t size = src->info.file_size, end;

	if (ph->type != PT_LOAD && ph->type != PT_NOTE)
		return NULL;
	if (kcore_elf_range_past(ph->offset, ph->filesz, INT64_MAX))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, ph->offset,
			"%s %zu: file range 0x%" PRIx64 "+0x%" PRIx64
			" overflows",
			phdr_type_name(ph->type), i, ph->offset, ph->filesz);
	end = ph->offset + ph->filesz;
	if (regular && end > size && ph->type == PT_LOAD) {
		/* A truncated core (a full disk, a killed writer, a size
		 * limit): what the file holds is shown and read, the rest
		 * is missing and said to be
		 * (kcore_source_info.truncated_bytes). */
		uint64_t have = ph->offset < size ? size - ph->offset : 0;

		src->info.truncated_bytes += ph->filesz - have;
		src->info.truncated_segments++;
	} else if (regular && end > size) {
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, ph->offset,
			"%s %zu is truncated: it needs file bytes up to "
			"0x%" PRIx64 " but the file ends at 0x%" PRIx64,
			phdr_type_name(ph->type), i, end, size);
	}
	if (ph->type == PT_LOAD && ph->filesz > ph->memsz)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, ph->offset,
			"PT_LOAD %zu has p_filesz 0x%" PRIx64
			" larger than p_memsz 0x%" PRIx64,
			i, ph->filesz, ph->memsz);
	if (ph->type == PT_LOAD && ph->memsz &&
	    __builtin_add_overflow(ph->vaddr, ph->memsz - 1, &end))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, hdr_off,
			"PT_LOAD %zu: address range 0x%" PRIx64 "+0x%" PRIx64
			" wraps around",
			i, ph->vaddr, ph->memsz);
	return NULL;
}

/* Check the identification bytes before handing the file to libelf, and
 * read the ELF header into hdr. */
static struct kcore_error *check_ident(struct kcore_source *src,
				       unsigned char *hdr)
{
	size_t done, need;
	struct kcore_error *err;

	err = kcore_source_pread_partial(src, hdr, EI_NIDENT, 0, &done);
	if (err) {
		if (err->code != KCORE_ERR_FORMAT)
			return err;
		kcore_error_destroy(err);
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     done,
					     "not an ELF file: only 0x%zx "
					     "bytes long",
					     done);
	}
	err = kcore_elf_check_ident(hdr, EI_NIDENT, true, src->path);
	if (err)
		return err;
	src->info.elf_class = hdr[EI_CLASS] == ELFCLASS64 ? 64 : 32;
	src->info.big_endian = hdr[EI_DATA] == ELFDATA2MSB;
	/* libelf refuses a short header without a reason ("no error"). */
	need = kcore_elf_ehdr_size(src->info.elf_class == 64);
	err = kcore_source_pread_partial(src, hdr, need, 0, &done);
	if (err) {
		if (err->code != KCORE_ERR_FORMAT)
			return err;
		kcore_error_destroy(err);
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, done,
			"truncated: the ELF header needs 0x%zx bytes, "
			"the file has 0x%zx",
			need, done);
	}
	return NULL;
}

/* The program header count: e_phnum, or for PN_XNUM sh_info of section
 * header 0, which must then be in the file. */
static struct kcore_error *count_phdrs(struct kcore_source *src,
				       const struct kcore_elf_ehdr *eh,
				       bool regular, size_t *ret)
{
	unsigned char sh[sizeof(Elf64_Shdr)];
	size_t shsize = kcore_elf_shdr_size(eh->is64);
	uint64_t size = src->info.file_size;
	struct kcore_error *err;

	*ret = eh->phnum;
	if (eh->phnum != PN_XNUM)
		return NULL;
	if (eh->shoff == 0 ||
	    (regular && kcore_elf_range_past(eh->shoff, shsize, size)))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, eh->shoff,
			"e_phnum is PN_XNUM but section header 0, which holds "
			"the real count, is missing (e_shoff 0x%" PRIx64 ")",
			eh->shoff);
	if (src->image &&
	    kcore_elf_range_past(eh->shoff, shsize, src->image_size))
		err = kcore_error_create(KCORE_ERR_FORMAT, 0, src->path,
					 "past the image's 0x%zx bytes",
					 src->image_size);
	else
		err = kcore_source_pread(src, sh, shsize, eh->shoff);
	if (err) {
		struct kcore_error *e = kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, eh->shoff,
			"cannot count program headers (PN_XNUM needs section "
			"header 0): %s",
			err->message ? err->message : "read failed");

		kcore_error_destroy(err);
		return e;
	}
	*ret = kcore_elf_xnum_count(eh, sh);
	return NULL;
}

static struct kcore_error *read_phdrs(struct kcore_source *src,
				      const unsigned char *hdr)
{
	struct kcore_elf_ehdr ehdr;
	size_t phnum, entsize;
	unsigned char *table;
	struct kcore_error *err;
	/* Sizes are known for regular files and synthetic images. */
	bool regular = (src->info.is_regular &&
			src->info.kind != KCORE_SOURCE_LIVE_KCORE) ||
		       src->image;
	uint64_t size = src->info.file_size;

	kcore_elf_decode_ehdr(hdr, &ehdr);
	src->info.machine = ehdr.machine;
	src->arch = kcore_arch_lookup(ehdr.machine);
	src->info.e_type = ehdr.type;
	src->info.e_flags = ehdr.flags;
	if (ehdr.type != ET_CORE)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, 0x10,
			"not an ELF core file (e_type %u, %s)", ehdr.type,
			ehdr.type == ET_EXEC  ? "an executable"
			: ehdr.type == ET_DYN ? "a shared object"
			: ehdr.type == ET_REL ? "an object file"
					      : "unknown type");
	entsize = kcore_elf_phdr_size(ehdr.is64);
	if (ehdr.phoff == 0 || ehdr.phnum == 0)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, 0,
					     "no program headers");
	if (ehdr.phentsize != entsize)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path,
			kcore_elf_phentsize_at(ehdr.is64),
			"program header entry size is %u, expected %zu",
			ehdr.phentsize, entsize);
	err = count_phdrs(src, &ehdr, regular, &phnum);
	if (err)
		return err;
	if (phnum == 0)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, 0,
					     "no program headers");
	/* A synthetic image's tables are in the image (libelf read them
	 * from it alone). */
	err = kcore_elf_check_phdr_table(&ehdr, phnum,
					 src->image ? src->image_size
					 : regular  ? size
						    : UINT64_MAX,
					 src->path);
	if (err)
		return err;
	table = malloc(phnum * entsize);
	src->segments = calloc(phnum, sizeof(*src->segments));
	if (!table || !src->segments) {
		free(table);
		return &kcore_error_nomem;
	}
	err = kcore_source_pread(src, table, phnum * entsize, ehdr.phoff);
	for (size_t i = 0; !err && i < phnum; i++) {
		struct kcore_segment *seg = &src->segments[i];
		struct kcore_elf_phdr ph;

		kcore_elf_decode_phdr(ehdr.is64, ehdr.big, table + i * entsize,
				      &ph);
		seg->index = (unsigned)i;
		seg->type = ph.type;
		seg->flags = ph.flags;
		seg->vaddr = ph.vaddr;
		seg->paddr = ph.paddr;
		seg->offset = ph.offset;
		seg->filesz = ph.filesz;
		seg->memsz = ph.memsz;
		seg->align = ph.align;
		seg->cls = ph.type == PT_NOTE ? KCORE_CLASS_NOTE
					      : KCORE_CLASS_OTHER;
		err = check_phdr(src, &ph, i, ehdr.phoff + i * entsize,
				 regular);
	}
	free(table);
	if (err)
		return err;
	src->nsegments = phnum;
	return NULL;
}

static int cmp_by_offset(const void *a, const void *b)
{
	const struct kcore_segment *x = *(struct kcore_segment *const *)a;
	const struct kcore_segment *y = *(struct kcore_segment *const *)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->filesz != y->filesz) /* the larger first: it holds the other */
		return x->filesz > y->filesz ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* b's bytes are a's at the same physical addresses: the kernel image's
 * PT_LOAD inside RAM's, as kcoredump writes it (one copy, one moment). */
static bool same_pages(const struct kcore_segment *a,
		       const struct kcore_segment *b)
{
	uint64_t rel = b->offset - a->offset;

	return a->type == PT_LOAD && b->type == PT_LOAD &&
	       a->paddr != UINT64_MAX && b->paddr != UINT64_MAX &&
	       b->offset >= a->offset && rel <= a->filesz &&
	       b->filesz <= a->filesz - rel && b->paddr >= a->paddr &&
	       b->paddr - a->paddr == rel;
}

/*
 * b has no physical address and its bytes are a's: the kernel image's
 * PT_LOAD on RAM's bytes, as kcoredump writes it since issue 43 (p_paddr
 * -1, so that the physical ranges ascend for Volatility).  Its physical
 * address is then a's at the same bytes.
 */
static bool alias_pages(const struct kcore_segment *a,
			const struct kcore_segment *b)
{
	uint64_t rel = b->offset - a->offset;

	return a->type == PT_LOAD && b->type == PT_LOAD &&
	       a->paddr != UINT64_MAX && b->paddr == UINT64_MAX &&
	       b->offset >= a->offset && rel <= a->filesz &&
	       b->filesz <= a->filesz - rel && b->filesz == b->memsz &&
	       a->paddr + rel >= a->paddr;
}

/* Two segments must not claim the same file bytes, but for the same
 * physical pages (an alias without p_paddr takes them from the other). */
static struct kcore_error *check_overlaps(struct kcore_source *src)
{
	struct kcore_segment **by_off;
	size_t n = 0;
	struct kcore_error *err = NULL;

	by_off = calloc(src->nsegments ? src->nsegments : 1, sizeof(*by_off));
	if (!by_off)
		return &kcore_error_nomem;
	for (size_t i = 0; i < src->nsegments; i++) {
		struct kcore_segment *seg = &src->segments[i];

		if ((seg->type == PT_LOAD || seg->type == PT_NOTE) &&
		    seg->filesz)
			by_off[n++] = seg;
	}
	qsort(by_off, n, sizeof(*by_off), cmp_by_offset);
	for (size_t i = 1, outer = 0; i < n; i++) {
		const struct kcore_segment *a = by_off[outer];
		struct kcore_segment *b = by_off[i];

		if (b->offset >= a->offset + a->filesz) {
			outer = i;
			continue;
		}
		if (alias_pages(a, b)) {
			b->paddr = a->paddr + (b->offset - a->offset);
			continue;
		}
		if (!same_pages(a, b)) {
			err = kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, b->offset,
				"program headers %u and %u overlap in the file "
				"at offset 0x%" PRIx64,
				a->index, b->index, b->offset);
			break;
		}
	}
	free(by_off);
	return err;
}

/* ---- reading the file: an ELF core file or /proc/kcore ---- */

static bool elf_probe(const unsigned char *magic, size_t len)
{
	return len >= SELFMAG && memcmp(magic, ELFMAG, SELFMAG) == 0;
}

static struct kcore_error *file_pread(struct kcore_source *src, void *buf,
				      size_t len, uint64_t offset, size_t *done)
{
	return kcore_pread_all(src->io, src->fd, src->path, buf, len, offset,
			       done);
}

static struct kcore_error *file_next_data(struct kcore_source *src,
					  uint64_t offset, uint64_t end,
					  uint64_t *data, uint64_t *data_end)
{
	off_t d, h;

	*data = *data_end = end;
	if (offset >= end)
		return NULL;
	d = lseek(src->fd, (off_t)offset, SEEK_DATA);
	if (d < 0) {
		if (errno == ENXIO) /* only a hole up to EOF */
			return NULL;
		if (errno == EINVAL) { /* no hole support: all data */
			*data = offset;
			return NULL;
		}
		return kcore_error_create_at(KCORE_ERR_OS, errno, src->path,
					     offset, "SEEK_DATA failed");
	}
	if ((uint64_t)d >= end)
		return NULL;
	h = lseek(src->fd, d, SEEK_HOLE);
	if (h < 0)
		return kcore_error_create_at(KCORE_ERR_OS, errno, src->path,
					     (uint64_t)d, "SEEK_HOLE failed");
	*data = (uint64_t)d;
	*data_end = (uint64_t)h < end ? (uint64_t)h : end;
	return NULL;
}

/*
 * Whether SEEK_DATA/SEEK_HOLE say something: always for regular files;
 * for /proc/kcore only on kernels that implement them (stock kernels
 * report the whole file as data).
 */
static bool file_knows_holes(struct kcore_source *src)
{
	off_t hole;

	if (src->info.is_regular)
		return true;
	if (src->info.kind != KCORE_SOURCE_LIVE_KCORE)
		return false;
	hole = lseek(src->fd, 0, SEEK_HOLE);
	return hole > 0 && (uint64_t)hole < src->info.file_size;
}

struct kcore_error *kcore_source_parse(struct kcore_source *src, bool live,
				       const struct kcore_open_opts *opts)
{
	static const struct kcore_open_opts no_opts;
	unsigned char hdr[sizeof(Elf64_Ehdr)];
	struct kcore_error *err;

	if (!opts)
		opts = &no_opts;
	err = check_ident(src, hdr);
	if (err)
		return err;
	if (src->image)
		src->elf = elf_memory((char *)src->image, src->image_size);
	else
		src->elf = elf_begin(src->fd, ELF_C_READ, NULL);
	if (!src->elf || elf_kind(src->elf) != ELF_K_ELF)
		return libelf_error(src->path, "cannot parse the ELF header");
	err = read_phdrs(src, hdr);
	if (err)
		return err;
	if (!live) {
		err = check_overlaps(src);
		if (err)
			return err;
	}
	for (size_t i = 0; i < src->nsegments; i++) {
		if (src->segments[i].type != PT_NOTE)
			continue;
		err = kcore_elf_read_notes(src, &src->segments[i]);
		if (err)
			return err;
	}
	err = kcore_elf_parse_vmcoreinfo(src);
	if (err)
		return err;
	kcore_elf_decide_kind(src, live);
	kcore_elf_fill_process_info(src);
	kcore_elf_read_completeness(src);
	if (src->info.truncated_bytes) {
		src->info.incomplete = true;
		src->info.unreadable_bytes += src->info.truncated_bytes;
		src->info.unreadable_ranges += src->info.truncated_segments;
		if (!src->info.incomplete_origin)
			src->info.incomplete_origin = "truncated file";
	}
	err = kcore_classify_segments(src);
	if (err)
		return err;
	if (live && !src->vmcoreinfo) {
		err = kcore_elf_vmcoreinfo_sysfs(src, opts->sysroot);
		if (err)
			return err;
		if (src->vmcoreinfo) {
			err = kcore_classify_segments(src);
			if (err)
				return err;
		}
	}
	if (!src->image)
		src->knows_holes = file_knows_holes(src);
	return NULL;
}

const struct kcore_reader_ops kcore_read_elf = {
	.name = "file",
	.title = "ELF",
	.probe = elf_probe,
	.pread = file_pread,
	.next_data = file_next_data,
};
