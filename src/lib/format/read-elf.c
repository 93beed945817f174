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

#include "read.h"
#include "internal.h"

/* Notes larger than this are refused rather than read into memory. */
#define MAX_NOTE_SEGMENT (256u << 20)

static struct kcore_error *libelf_error(const char *path, const char *what)
{
	return kcore_error_create(KCORE_ERR_FORMAT, 0, path, "%s: %s", what,
				  elf_errmsg(-1));
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
			elf_errmsg(-1));
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
				elf_errmsg(-1));
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
		if (regular && end > size)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, ph.p_offset,
				"%s %zu is truncated: it needs file bytes up "
				"to "
				"0x%" PRIx64 " but the file ends at 0x%" PRIx64,
				phdr_type_name(ph.p_type), i, end, size);
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

/* Two segments must not claim the same file bytes, but for the same
 * physical pages. */
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
		const struct kcore_segment *a = by_off[outer], *b = by_off[i];

		if (b->offset >= a->offset + a->filesz) {
			outer = i;
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

static struct kcore_error *add_note(struct kcore_source *src,
				    const struct kcore_note *note)
{
	size_t n = src->nnotes;

	if ((n & (n - 1)) == 0) {
		size_t cap = n ? 2 * n : 8;
		struct kcore_note *notes =
			realloc(src->notes, cap * sizeof(*notes));
		char **names;

		if (!notes)
			return &kcore_error_nomem;
		src->notes = notes;
		names = realloc(src->note_names, cap * sizeof(*names));
		if (!names)
			return &kcore_error_nomem;
		src->note_names = names;
	}
	src->note_names[n] = strdup(note->name);
	if (!src->note_names[n])
		return &kcore_error_nomem;
	src->notes[n] = *note;
	src->notes[n].name = src->note_names[n];
	src->nnotes++;
	return NULL;
}

static bool all_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static struct kcore_error *read_notes(struct kcore_source *src,
				      const struct kcore_segment *seg)
{
	Elf_Data *data;
	size_t off = 0;
	Elf_Type type = seg->align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;

	if (seg->filesz == 0)
		return NULL;
	if (seg->filesz > MAX_NOTE_SEGMENT)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, seg->offset,
			"PT_NOTE %u is 0x%" PRIx64 " bytes, more than the "
			"0x%x this tool reads",
			seg->index, seg->filesz, MAX_NOTE_SEGMENT);
	data = elf_getdata_rawchunk(src->elf, (int64_t)seg->offset, seg->filesz,
				    type);
	if (!data)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     seg->offset,
					     "cannot read PT_NOTE %u: %s",
					     seg->index, elf_errmsg(-1));
	while (off < data->d_size) {
		GElf_Nhdr nhdr;
		size_t name_off, desc_off, next;
		const unsigned char *base = data->d_buf;
		struct kcore_note note;
		char name[256];
		struct kcore_error *err;

		next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off);
		if (next == 0) {
			size_t left = data->d_size - off;

			/* Trailing padding is not a note. */
			if (all_zero(base + off, left))
				break;
			if (left < 12)
				return kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, src->path,
					seg->offset + off,
					"PT_NOTE %u: truncated note header at "
					"offset 0x%" PRIx64 " (0x%zx bytes "
					"left)",
					seg->index, seg->offset + off, left);
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path,
				seg->offset + off,
				"PT_NOTE %u: note at offset 0x%" PRIx64
				" has namesz 0x%" PRIx64
				" and descsz 0x%" PRIx64
				" but only 0x%zx bytes remain",
				seg->index, seg->offset + off,
				kcore_load(base + off, 4, src->info.big_endian),
				kcore_load(base + off + 4, 4,
					   src->info.big_endian),
				left - 12);
		}
		size_t nlen = nhdr.n_namesz;
		if (nlen && base[name_off + nlen - 1] == '\0')
			nlen--;
		if (nlen >= sizeof(name))
			nlen = sizeof(name) - 1;
		memcpy(name, base + name_off, nlen);
		name[nlen] = '\0';
		note = (struct kcore_note){
			.name = name,
			.type = nhdr.n_type,
			.desc = base + desc_off,
			.descsz = nhdr.n_descsz,
			.offset = seg->offset + off,
			.segment = seg->index,
		};
		err = add_note(src, &note);
		if (err)
			return err;
		off = next;
	}
	return NULL;
}

static bool is_kernel_note(const struct kcore_note *note)
{
	return strcmp(note->name, "VMCOREINFO") == 0 ||
	       (strcmp(note->name, "CORE") == 0 && note->type == NT_TASKSTRUCT);
}

static void decide_kind(struct kcore_source *src, bool live)
{
	bool kernel = src->vmcoreinfo != NULL, process = false;

	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *note = &src->notes[i];

		if (is_kernel_note(note))
			kernel = true;
		if (strcmp(note->name, "CORE") == 0 &&
		    (note->type == NT_FILE || note->type == NT_AUXV ||
		     note->type == NT_SIGINFO))
			process = true;
	}
	if (live)
		src->info.kind = KCORE_SOURCE_LIVE_KCORE;
	else if (kernel)
		src->info.kind = KCORE_SOURCE_VMCORE;
	else if (process)
		src->info.kind = KCORE_SOURCE_PROCESS_CORE;
	else
		src->info.kind = KCORE_SOURCE_ELF_CORE;
}

/* The value of our metadata's line "key=value" (NULL when none), and
 * its length. */
static const char *metadata_value(const char *text, size_t len, const char *key,
				  size_t *ret_len)
{
	size_t klen = strlen(key);
	const char *p = text, *end = text + len;

	while (p < end && *p) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break;
		if ((size_t)(nl - p) > klen && !memcmp(p, key, klen) &&
		    p[klen] == '=') {
			*ret_len = (size_t)(nl - p) - klen - 1;
			return p + klen + 1;
		}
		p = nl + 1;
	}
	return NULL;
}

static uint64_t metadata_u64(const char *text, size_t len, const char *key)
{
	size_t vlen;
	const char *v = metadata_value(text, len, key, &vlen);

	return v ? strtoull(v, NULL, 10) : 0;
}

/* What our metadata text says of the dump's completeness. */
static void completeness(struct kcore_source_info *in, const char *text,
			 size_t len)
{
	in->unreadable_bytes =
		metadata_u64(text, len, "bytes_unreadable") +
		metadata_u64(text, len, "source_bytes_unreadable");
	in->unreadable_ranges =
		metadata_u64(text, len, "unreadable_ranges") +
		metadata_u64(text, len, "source_unreadable_ranges");
	if (in->unreadable_bytes ||
	    metadata_u64(text, len, "source_incomplete")) {
		in->incomplete = true;
		in->incomplete_origin = "note";
	}
}

/* An ELF dump written to a pipe ends with its final metadata: the text,
 * its length (le64) and "KCDTRL01". */
static void completeness_from_trailer(struct kcore_source *src)
{
	uint64_t size = src->info.file_size, len;
	unsigned char tail[16];
	struct kcore_error *err;
	char *text;

	if (src->image || !src->info.is_regular || size < 16)
		return;
	err = kcore_source_pread(src, tail, 16, size - 16);
	if (err || memcmp(tail + 8, "KCDTRL01", 8)) {
		kcore_error_destroy(err);
		return;
	}
	len = kcore_load(tail, 8, false);
	text = len <= (1u << 20) && len <= size - 16 ? malloc(len + 1) : NULL;
	if (!text)
		return;
	err = kcore_source_pread(src, text, len, size - 16 - len);
	if (!err)
		completeness(&src->info, text, len);
	kcore_error_destroy(err);
	free(text);
}

/* Whether the dump says it is incomplete (kcore_source_info.incomplete):
 * our note (or trailer), else an ELF vmcore's e_flags; a kdump header's
 * status was looked at by its reader. */
static void read_completeness(struct kcore_source *src)
{
	struct kcore_source_info *in = &src->info;

	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *n = &src->notes[i];
		const char *text = (const char *)n->desc, *where;
		size_t len = strnlen(text, n->descsz), wlen;

		if (strcmp(n->name, KCORE_META_NOTE_NAME))
			continue;
		where = metadata_value(text, len, "digests", &wlen);
		if (where && wlen == 7 && !memcmp(where, "trailer", 7))
			completeness_from_trailer(src);
		else
			completeness(in, text, len);
		return;
	}
	/* makedumpfile's DUMP_ELF_INCOMPLETE, as crash reads it: in kernel
	 * vmcores only (other cores' e_flags mean other things). */
	if (!src->image && in->kind == KCORE_SOURCE_VMCORE &&
	    (in->e_flags & 0x1) && !in->incomplete) {
		in->incomplete = true;
		in->incomplete_origin = "ELF e_flags";
	}
}

static struct kcore_error *parse_vmcoreinfo_note(struct kcore_source *src)
{
	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *note = &src->notes[i];

		if (strcmp(note->name, "VMCOREINFO") != 0)
			continue;
		src->info.vmcoreinfo_origin = "note";
		return kcore_vmcoreinfo_parse((const char *)note->desc,
					      note->descsz, &src->vmcoreinfo);
	}
	return NULL;
}

static void fill_process_info(struct kcore_source *src)
{
	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *note = &src->notes[i];
		struct kcore_error *err;

		if (strcmp(note->name, "CORE") != 0)
			continue;
		if (note->type == NT_PRSTATUS) {
			struct kcore_prstatus st;

			src->info.nthreads++;
			err = kcore_note_prstatus(src, note, &st);
			if (err) {
				kcore_error_destroy(err);
				continue;
			}
			if (!src->info.pid)
				src->info.pid = st.pid;
			if (!src->info.signal)
				src->info.signal = st.cursig;
		} else if (note->type == NT_PRPSINFO) {
			struct kcore_prpsinfo ps;

			err = kcore_note_prpsinfo(src, note, &ps);
			if (err) {
				kcore_error_destroy(err);
				continue;
			}
			if (!src->info.process_name)
				src->info.process_name =
					kcore_source_add_label(src, ps.fname);
		} else if (note->type == NT_SIGINFO && !src->info.signal) {
			struct kcore_siginfo si;

			err = kcore_note_siginfo(src, note, &si);
			if (!err)
				src->info.signal = si.signo;
			kcore_error_destroy(err);
		}
	}
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

/*
 * Before Linux v4.19 (commit 23c85094fe18) /proc/kcore had no VMCOREINFO
 * note; /sys/kernel/vmcoreinfo says where it is in RAM.
 */
static struct kcore_error *vmcoreinfo_from_sysfs(struct kcore_source *src,
						 const char *sysroot)
{
	char path[PATH_MAX];
	uint64_t paddr;
	uint32_t size, namesz, descsz;
	unsigned char *note;
	size_t desc_off;
	struct kcore_error *err;

	err = kcore_vmcoreinfo_sysfs(sysroot, path, sizeof(path), &paddr,
				     &size);
	if (err || !size)
		return err;
	note = malloc(size);
	if (!note)
		return &kcore_error_nomem;
	err = kcore_source_read_paddr(src, paddr, note, size);
	if (err) {
		free(note);
		return err;
	}
	namesz = (uint32_t)kcore_load(note, 4, src->info.big_endian);
	descsz = (uint32_t)kcore_load(note + 4, 4, src->info.big_endian);
	desc_off = 12 + (((size_t)namesz + 3) & ~(size_t)3);
	if (namesz != sizeof("VMCOREINFO") ||
	    memcmp(note + 12, "VMCOREINFO", namesz) != 0 || desc_off > size ||
	    descsz > size - desc_off) {
		free(note);
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     paddr,
					     "no VMCOREINFO note at physical "
					     "address 0x%llx given by %s",
					     (unsigned long long)paddr, path);
	}
	err = kcore_vmcoreinfo_parse((const char *)note + desc_off, descsz,
				     &src->vmcoreinfo);
	if (err) {
		free(note);
		return err;
	}
	src->vmcoreinfo_note = note;
	src->info.vmcoreinfo_origin = "sysfs";
	return NULL;
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
		err = read_notes(src, &src->segments[i]);
		if (err)
			return err;
	}
	err = parse_vmcoreinfo_note(src);
	if (err)
		return err;
	decide_kind(src, live);
	fill_process_info(src);
	read_completeness(src);
	err = kcore_classify_segments(src);
	if (err)
		return err;
	if (live && !src->vmcoreinfo) {
		err = vmcoreinfo_from_sysfs(src, opts->sysroot);
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
	.probe = elf_probe,
	.pread = file_pread,
	.next_data = file_next_data,
};
