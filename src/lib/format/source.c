// SPDX-License-Identifier: MIT
/*
 * Opening an ELF core source: ELF header, program headers and notes, each
 * checked against the file before anything trusts it.  libelf parses the
 * headers; segment payloads are read with our own pread layer.
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

#include "read.h"
#include "internal.h"

#define PROC_SUPER_MAGIC 0x9fa0
/* Notes larger than this are refused rather than read into memory. */
#define MAX_NOTE_SEGMENT (256u << 20)

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

/* libelf's last error; elf_errmsg(-1) says "no error" when libelf set
 * none (it refused without saying why). */
static const char *libelf_reason(void)
{
	int e = elf_errno();

	return e ? elf_errmsg(e) : "libelf gives no reason";
}

static struct kcore_error *libelf_error(const char *path, const char *what)
{
	return kcore_error_create(KCORE_ERR_FORMAT, 0, path, "%s: %s", what,
				  libelf_reason());
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
			libelf_reason());
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
				libelf_reason());
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
					     seg->index, libelf_reason());
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

/* ---- the file backend: an ELF core file or /proc/kcore ---- */

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

static const struct kcore_backend file_backend = {
	.name = "file",
	.pread = file_pread,
	.next_data = file_next_data,
};

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

/* Formats recognised by their first bytes; ELF is the default. */
const struct kcore_input_format *const kcore_input_formats[] = {
	&kcore_format_kdump, &kcore_format_flattened, &kcore_format_lime,
	&kcore_format_avml,  &kcore_format_stream,    NULL,
};

static struct kcore_error *open_format(struct kcore_source *src, bool *found)
{
	unsigned char magic[64];
	size_t done = 0;
	struct kcore_error *err;

	*found = false;
	err = kcore_pread_all(src->io, src->fd, src->path, magic, sizeof(magic),
			      0, &done);
	if (err) {
		if (err->code != KCORE_ERR_FORMAT)
			return err;
		kcore_error_destroy(err); /* short file: probe what is there */
	}
	if (done >= SELFMAG && memcmp(magic, ELFMAG, SELFMAG) == 0)
		return NULL;
	for (size_t i = 0; kcore_input_formats[i]; i++) {
		if (!kcore_input_formats[i]->probe(magic, done))
			continue;
		*found = true;
		return kcore_input_formats[i]->open(src);
	}
	return NULL; /* check_ident explains what is wrong */
}

/*
 * path against the working directory, without resolving symbolic links
 * (the name that was opened); "." and ".." components are left as they
 * are, only a leading "./" is dropped.  NULL when out of memory.
 */
static char *absolute_path(const char *path)
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
	src->backend = &file_backend;
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

struct kcore_error *kcore_source_open(const char *path,
				      const struct kcore_open_opts *opts,
				      struct kcore_source **ret)
{
	static const struct kcore_open_opts no_opts;
	struct kcore_source *src;
	struct kcore_error *err;
	struct statfs sfs;
	struct stat st;
	bool live, other_format;

	if (!opts)
		opts = &no_opts;
	err = kcore_source_alloc(path, opts, &src);
	if (err)
		return err;
	src->abs_path = absolute_path(path);
	if (!src->abs_path) {
		kcore_source_destroy(src);
		return &kcore_error_nomem;
	}
	src->info.abs_path = src->abs_path;
	src->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (src->fd < 0) {
		err = kcore_explain_open_error(
			path, errno,
			opts->force_live || strcmp(path, "/proc/kcore") == 0,
			opts->sysroot);
		goto fail;
	}
	if (fstat(src->fd, &st) < 0) {
		err = kcore_error_create(KCORE_ERR_OS, errno, path,
					 "cannot stat");
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		err = kcore_error_create(KCORE_ERR_UNSUPPORTED, EISDIR, path,
					 "not a core file");
		goto fail;
	}
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
		/* Every format needs random access, even a flattened kdump
		 * (its records are indexed, not replayed). */
		err = kcore_error_create(KCORE_ERR_UNSUPPORTED, ESPIPE, path,
					 "is a pipe: a source must be a file "
					 "(save the stream first; a flattened "
					 "kdump can also be rearranged with "
					 "makedumpfile -R)");
		goto fail;
	}
	live = opts->force_live ||
	       (fstatfs(src->fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC);
	src->info.is_regular = S_ISREG(st.st_mode) && !live;
	src->info.file_size = (uint64_t)st.st_size;
	src->info.file_blocks = (uint64_t)st.st_blocks * 512;
	if (live)
		src->info.kind = KCORE_SOURCE_LIVE_KCORE;
	if (!live) {
		err = open_format(src, &other_format);
		if (err)
			goto fail;
		if (other_format)
			src->info.is_regular = false;
	}
	err = kcore_source_parse(src, live, opts);
	if (err)
		goto fail;
	*ret = src;
	return NULL;
fail:
	kcore_source_destroy(src);
	return err;
}

void kcore_source_destroy(struct kcore_source *src)
{
	if (!src)
		return;
	if (src->elf)
		elf_end(src->elf);
	if (src->backend && src->backend->destroy)
		src->backend->destroy(src);
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
		err = src->backend->pread(src, (unsigned char *)buf + head,
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
	if (!src->knows_holes || !src->backend->next_data) {
		*data = offset;
		*data_end = end;
		return NULL;
	}
	return src->backend->next_data(src, offset, end, data, data_end);
}

bool kcore_source_knows_holes(const struct kcore_source *src)
{
	return src->knows_holes;
}

const char *kcore_source_format(const struct kcore_source *src)
{
	return src->backend->name;
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
	    src->info.kind == KCORE_SOURCE_VMCORE &&
	    (src->info.machine == EM_X86_64 ||
	     src->info.machine == EM_AARCH64) &&
	    src->vmcoreinfo) {
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
