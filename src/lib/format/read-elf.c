// SPDX-License-Identifier: MIT
/*
 * The ELF reader: an ELF core file or /proc/kcore, and the parsing every
 * source's ELF core image goes through (a synthetic image too): ELF
 * header, program headers and notes, each checked against the file
 * before anything trusts it.  libelf parses the headers; segment payloads
 * are read with our own pread layer.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
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

/* Check the identification bytes before handing the file to libelf. */
static struct kcore_error *check_ident(struct kcore_source *src)
{
	unsigned char ident[EI_NIDENT];
	size_t done;
	struct kcore_error *err;

	err = kcore_source_pread_partial(src, ident, sizeof(ident), 0, &done);
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
	if (memcmp(ident, ELFMAG, SELFMAG) != 0)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, 0,
					     "not an ELF file: bad magic "
					     "number");
	if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     EI_CLASS,
					     "invalid ELF class %u at offset "
					     "0x%x",
					     ident[EI_CLASS], EI_CLASS);
	if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     EI_DATA,
					     "invalid ELF byte order %u at "
					     "offset 0x%x",
					     ident[EI_DATA], EI_DATA);
	if (ident[EI_VERSION] != EV_CURRENT)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     EI_VERSION,
					     "unknown ELF version %u at offset "
					     "0x%x",
					     ident[EI_VERSION], EI_VERSION);
	src->info.elf_class = ident[EI_CLASS] == ELFCLASS64 ? 64 : 32;
	src->info.big_endian = ident[EI_DATA] == ELFDATA2MSB;
	/* libelf refuses a short header without a reason ("no error"). */
	{
		size_t need = ident[EI_CLASS] == ELFCLASS64
				      ? sizeof(Elf64_Ehdr)
				      : sizeof(Elf32_Ehdr);
		unsigned char ehdr[sizeof(Elf64_Ehdr)];

		err = kcore_source_pread_partial(src, ehdr, need, 0, &done);
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
	}
	return NULL;
}

static struct kcore_error *read_phdrs(struct kcore_source *src)
{
	GElf_Ehdr ehdr;
	size_t phnum, entsize;
	uint64_t table_end;
	/* Sizes are known for regular files and synthetic images. */
	bool regular = (src->info.is_regular &&
			src->info.kind != KCORE_SOURCE_LIVE_KCORE) ||
		       src->image;
	uint64_t size = src->info.file_size;

	if (!gelf_getehdr(src->elf, &ehdr))
		return libelf_error(src->path, "cannot read the ELF header");
	src->info.machine = ehdr.e_machine;
	src->arch = kcore_arch_lookup(ehdr.e_machine);
	src->info.e_type = ehdr.e_type;
	src->info.e_flags = ehdr.e_flags;
	if (ehdr.e_type != ET_CORE)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, 0x10,
			"not an ELF core file (e_type %u, %s)", ehdr.e_type,
			ehdr.e_type == ET_EXEC	? "an executable"
			: ehdr.e_type == ET_DYN ? "a shared object"
			: ehdr.e_type == ET_REL ? "an object file"
						: "unknown type");
	entsize = gelf_fsize(src->elf, ELF_T_PHDR, 1, EV_CURRENT);
	if (ehdr.e_phoff == 0 || ehdr.e_phnum == 0)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, 0,
					     "no program headers");
	if (ehdr.e_phentsize != entsize)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path,
			src->info.elf_class == 64 ? 0x36 : 0x2a,
			"program header entry size is %u, expected %zu",
			ehdr.e_phentsize, entsize);
	/* Check what libelf will read before it reads it, so the error can
	 * say what is wrong. */
	if (ehdr.e_phnum == PN_XNUM &&
	    (ehdr.e_shoff == 0 ||
	     (regular && (ehdr.e_shoff > size ||
			  size - ehdr.e_shoff < gelf_fsize(src->elf, ELF_T_SHDR,
							   1, EV_CURRENT)))))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, ehdr.e_shoff,
			"e_phnum is PN_XNUM but section header 0, which holds "
			"the real count, is missing (e_shoff 0x%" PRIx64 ")",
			(uint64_t)ehdr.e_shoff);
	if (ehdr.e_phnum != PN_XNUM && regular &&
	    (ehdr.e_phoff > size ||
	     (size - ehdr.e_phoff) / entsize < ehdr.e_phnum))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, ehdr.e_phoff,
			"program header table (%u entries at offset 0x%" PRIx64
			") extends past the end of the file (size 0x%" PRIx64
			")",
			ehdr.e_phnum, (uint64_t)ehdr.e_phoff, size);
	if (elf_getphdrnum(src->elf, &phnum) != 0)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, ehdr.e_shoff,
			"cannot count program headers%s: %s",
			ehdr.e_phnum == PN_XNUM ? " (PN_XNUM needs section "
						  "header 0)"
						: "",
			kcore_elf_reason());
	if (phnum == 0)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path, 0,
					     "no program headers");
	if (__builtin_mul_overflow((uint64_t)phnum, entsize, &table_end) ||
	    __builtin_add_overflow(table_end, ehdr.e_phoff, &table_end) ||
	    (regular && table_end > size))
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, ehdr.e_phoff,
			"program header table (%zu entries at offset 0x%" PRIx64
			") extends past the end of the file (size 0x%" PRIx64
			")",
			phnum, (uint64_t)ehdr.e_phoff, size);
	src->segments = calloc(phnum, sizeof(*src->segments));
	if (!src->segments)
		return &kcore_error_nomem;
	for (size_t i = 0; i < phnum; i++) {
		struct kcore_segment *seg = &src->segments[i];
		uint64_t end;
		GElf_Phdr ph;

		if (!gelf_getphdr(src->elf, (int)i, &ph))
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path,
				ehdr.e_phoff + i * entsize,
				"cannot read program header %zu: %s", i,
				kcore_elf_reason());
		seg->index = (unsigned)i;
		seg->type = ph.p_type;
		seg->flags = ph.p_flags;
		seg->vaddr = ph.p_vaddr;
		seg->paddr = ph.p_paddr;
		seg->offset = ph.p_offset;
		seg->filesz = ph.p_filesz;
		seg->memsz = ph.p_memsz;
		seg->align = ph.p_align;
		seg->cls = ph.p_type == PT_NOTE ? KCORE_CLASS_NOTE
						: KCORE_CLASS_OTHER;
		if (ph.p_type != PT_LOAD && ph.p_type != PT_NOTE)
			continue;
		if (__builtin_add_overflow(ph.p_offset, ph.p_filesz, &end) ||
		    end > INT64_MAX)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, ph.p_offset,
				"%s %zu: file range 0x%" PRIx64 "+0x%" PRIx64
				" overflows",
				phdr_type_name(ph.p_type), i,
				(uint64_t)ph.p_offset, (uint64_t)ph.p_filesz);
		if (regular && end > size && ph.p_type == PT_LOAD) {
			/* A truncated core (a full disk, a killed writer,
			 * a size limit): what the file holds is shown and
			 * read, the rest is missing and said to be
			 * (kcore_source_info.truncated_bytes). */
			uint64_t have =
				ph.p_offset < size ? size - ph.p_offset : 0;

			src->info.truncated_bytes += ph.p_filesz - have;
			src->info.truncated_segments++;
		} else if (regular && end > size) {
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, ph.p_offset,
				"%s %zu is truncated: it needs file bytes up "
				"to "
				"0x%" PRIx64 " but the file ends at 0x%" PRIx64,
				phdr_type_name(ph.p_type), i, end, size);
		}
		if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, ph.p_offset,
				"PT_LOAD %zu has p_filesz 0x%" PRIx64
				" larger than p_memsz 0x%" PRIx64,
				i, (uint64_t)ph.p_filesz, (uint64_t)ph.p_memsz);
		if (ph.p_type == PT_LOAD &&
		    __builtin_add_overflow(ph.p_vaddr, ph.p_memsz - 1, &end) &&
		    ph.p_memsz)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path,
				ehdr.e_phoff + i * entsize,
				"PT_LOAD %zu: address range 0x%" PRIx64
				"+0x%" PRIx64 " wraps around",
				i, (uint64_t)ph.p_vaddr, (uint64_t)ph.p_memsz);
	}
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
	struct kcore_error *err;

	if (!opts)
		opts = &no_opts;
	err = check_ident(src);
	if (err)
		return err;
	if (src->image)
		src->elf = elf_memory((char *)src->image, src->image_size);
	else
		src->elf = elf_begin(src->fd, ELF_C_READ, NULL);
	if (!src->elf || elf_kind(src->elf) != ELF_K_ELF)
		return libelf_error(src->path, "cannot parse the ELF header");
	err = read_phdrs(src);
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
