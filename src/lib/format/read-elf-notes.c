// SPDX-License-Identifier: MIT
/*
 * The ELF reader's notes (read-elf.c parses the headers): every PT_NOTE's
 * notes checked and kept, the source's kind from them, our metadata's
 * completeness, VMCOREINFO (from the notes or, before Linux v4.19,
 * /sys/kernel/vmcoreinfo) and a process core's pid, signal and name.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "elf-parse.h"
#include "bytes.h"
#include "metanote.h"
#include "read-elf.h"
#include "read.h"
#include "source-impl.h"

/* Notes larger than this are refused rather than read into memory. */
#define MAX_NOTE_SEGMENT (256u << 20)

/* libelf's last error; elf_errmsg(-1) says "no error" when libelf set
 * none (it refused without saying why). */
const char *kcore_elf_reason(void)
{
	int e = elf_errno();

	return e ? elf_errmsg(e) : "libelf gives no reason";
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

struct kcore_error *kcore_elf_read_notes(struct kcore_source *src,
					 const struct kcore_segment *seg)
{
	Elf_Data *data;
	struct kcore_elf_notes it;
	struct kcore_elf_note n;
	enum kcore_elf_note_next r;

	if (seg->filesz == 0)
		return NULL;
	if (seg->filesz > MAX_NOTE_SEGMENT)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, src->path, seg->offset,
			"PT_NOTE %u is 0x%" PRIx64 " bytes, more than the "
			"0x%x this tool reads",
			seg->index, seg->filesz, MAX_NOTE_SEGMENT);
	data = elf_getdata_rawchunk(src->elf, (int64_t)seg->offset, seg->filesz,
				    ELF_T_BYTE);
	if (!data)
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     seg->offset,
					     "cannot read PT_NOTE %u: %s",
					     seg->index, kcore_elf_reason());
	/* Every note padded to the segment's alignment, as libelf has it. */
	kcore_elf_notes_init(&it, data->d_buf, data->d_size,
			     src->info.big_endian, seg->align == 8 ? 8 : 4,
			     true);
	while ((r = kcore_elf_notes_next(&it, &n)) == KCORE_ELF_NOTE_OK) {
		struct kcore_note note;
		char name[256];
		struct kcore_error *err;

		kcore_elf_note_fill(&n, seg->offset, seg->index, name,
				    sizeof(name), &note);
		err = add_note(src, &note);
		if (err)
			return err;
	}
	if (r == KCORE_ELF_NOTE_END ||
	    all_zero(it.buf + n.offset, it.len - n.offset))
		return NULL; /* trailing padding is not a note */
	if (r == KCORE_ELF_NOTE_SHORT_HEADER)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, seg->offset + n.offset,
			"PT_NOTE %u: truncated note header at offset 0x%" PRIx64
			" (0x%" PRIx64 " bytes left)",
			seg->index, seg->offset + n.offset, it.len - n.offset);
	return kcore_error_create_at(
		KCORE_ERR_FORMAT, 0, src->path, seg->offset + n.offset,
		"PT_NOTE %u: note at offset 0x%" PRIx64 " has namesz 0x%" PRIx32
		" and descsz 0x%" PRIx32 " but only 0x%" PRIx64 " bytes remain",
		seg->index, seg->offset + n.offset, n.namesz, n.descsz,
		it.len - n.offset - 12);
}

static bool is_kernel_note(const struct kcore_note *note)
{
	return strcmp(note->name, "VMCOREINFO") == 0 ||
	       (strcmp(note->name, "CORE") == 0 && note->type == NT_TASKSTRUCT);
}

void kcore_elf_decide_kind(struct kcore_source *src, bool live)
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

/*
 * An ELF dump whose file was hashed as it was written (or that went
 * through a pipe) ends with its final metadata: the text, its length
 * (le64) and "KCDTRL01"; its note holds the first text and says
 * digests=trailer.  Where the end can be read (a file, a seekable .zst or
 * .xz), the note's descriptor becomes the trailer's text, so every reader
 * of the note sees the final one.  False when there is none to read.
 */
static bool note_from_trailer(struct kcore_source *src, struct kcore_note *n)
{
	uint64_t size = src->info.file_size, len;
	unsigned char tail[16];
	struct kcore_error *err;
	char *text;

	if (src->image ? src->reader != &kcore_read_stream
		       : !src->info.is_regular)
		return false;
	if (size < 16)
		return false;
	err = kcore_source_pread(src, tail, 16, size - 16);
	if (err || memcmp(tail + 8, "KCDTRL01", 8)) {
		kcore_error_destroy(err);
		return false;
	}
	len = kcore_load(tail, 8, false);
	text = len <= (1u << 20) && len <= size - 16 ? malloc(len + 1) : NULL;
	if (!text)
		return false;
	err = kcore_source_pread(src, text, len, size - 16 - len);
	if (err) {
		kcore_error_destroy(err);
		free(text);
		return false;
	}
	text[len] = '\0';
	free(src->trailer_text);
	src->trailer_text = text;
	n->desc = (const unsigned char *)text;
	n->descsz = len + 1;
	return true;
}

/* Whether the dump says it is incomplete (kcore_source_info.incomplete):
 * our note (or trailer), else an ELF vmcore's e_flags; a kdump header's
 * status was looked at by its reader. */
void kcore_elf_read_completeness(struct kcore_source *src)
{
	struct kcore_source_info *in = &src->info;

	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *n = &src->notes[i];
		const char *text = (const char *)n->desc, *where;
		size_t len = strnlen(text, n->descsz), wlen;

		if (strcmp(n->name, KCORE_META_NOTE_NAME))
			continue;
		where = metadata_value(text, len, "digests", &wlen);
		if (where && wlen == 7 && !memcmp(where, "trailer", 7)) {
			if (!note_from_trailer(src, &src->notes[i]))
				return; /* a pipe: not known here */
			text = (const char *)src->notes[i].desc;
			len = strnlen(text, src->notes[i].descsz);
		}
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

struct kcore_error *kcore_elf_parse_vmcoreinfo(struct kcore_source *src)
{
	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *note = &src->notes[i];

		if (strcmp(note->name, "VMCOREINFO") != 0)
			continue;
		src->info.vmcoreinfo_origin =
			src->vmcoreinfo_in_memory ? "memory" : "note";
		return kcore_vmcoreinfo_parse((const char *)note->desc,
					      note->descsz, &src->vmcoreinfo);
	}
	return NULL;
}

void kcore_elf_fill_process_info(struct kcore_source *src)
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

/*
 * Before Linux v4.19 (commit 23c85094fe18) /proc/kcore had no VMCOREINFO
 * note; /sys/kernel/vmcoreinfo says where it is in RAM.
 */
struct kcore_error *kcore_elf_vmcoreinfo_sysfs(struct kcore_source *src,
					       const char *sysroot)
{
	char path[PATH_MAX];
	uint64_t paddr;
	uint32_t size;
	unsigned char *note;
	struct kcore_elf_notes it;
	struct kcore_elf_note n;
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
	kcore_elf_notes_init(&it, note, size, src->info.big_endian, 4, false);
	if (kcore_elf_notes_next(&it, &n) != KCORE_ELF_NOTE_OK ||
	    !kcore_elf_note_is(&n, "VMCOREINFO")) {
		free(note);
		return kcore_error_create_at(KCORE_ERR_FORMAT, 0, src->path,
					     paddr,
					     "no VMCOREINFO note at physical "
					     "address 0x%llx given by %s",
					     (unsigned long long)paddr, path);
	}
	err = kcore_vmcoreinfo_parse((const char *)n.desc, n.descsz,
				     &src->vmcoreinfo);
	if (err) {
		free(note);
		return err;
	}
	src->vmcoreinfo_note = note;
	src->info.vmcoreinfo_origin = "sysfs";
	return NULL;
}
