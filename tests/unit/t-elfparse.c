// SPDX-License-Identifier: MIT
/* The one ELF parser and note walker (common/elf-parse.c): headers of
 * both classes and byte orders, each kind of malformed header (bad
 * identification, truncated, e_phoff past the end, a program header
 * count that overflows), and notes (alignment, truncated headers, sizes
 * near 4 GiB that must not wrap, missing padding, unaligned buffers);
 * the notes the one builder (format/elfcore.c) writes, walked back and
 * byte for byte those of this test's own writer; then the same files
 * through kcore_source_open(), the reader's use. */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf-parse.h"
/* The library's builder (tests/common/elfcore.h is the tests' own). */
#include "../../src/lib/format/elfcore.h"
#include "source-impl.h"
#include "kcoredump/source.h"
#include "tap.h"

/* Stores of either byte order, independent of the library's writers. */
static void put(unsigned char *p, uint64_t v, unsigned size, bool big)
{
	for (unsigned i = 0; i < size; i++)
		p[big ? size - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

#define PUT_EH(buf, is64, big, f, v)                        \
	((is64) ? put((buf) + offsetof(Elf64_Ehdr, f), (v), \
		      sizeof(((Elf64_Ehdr *)0)->f), (big))  \
		: put((buf) + offsetof(Elf32_Ehdr, f), (v), \
		      sizeof(((Elf32_Ehdr *)0)->f), (big)))
#define PUT_PH(p, is64, big, f, v)                         \
	((is64) ? put((p) + offsetof(Elf64_Phdr, f), (v),  \
		      sizeof(((Elf64_Phdr *)0)->f), (big)) \
		: put((p) + offsetof(Elf32_Phdr, f), (v),  \
		      sizeof(((Elf32_Phdr *)0)->f), (big)))

/* An ET_CORE header with phnum program headers right after it. */
static size_t header(unsigned char *buf, bool is64, bool big, unsigned phnum)
{
	size_t eh = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t ph = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);

	memset(buf, 0, eh);
	memcpy(buf, ELFMAG, SELFMAG);
	buf[EI_CLASS] = is64 ? ELFCLASS64 : ELFCLASS32;
	buf[EI_DATA] = big ? ELFDATA2MSB : ELFDATA2LSB;
	buf[EI_VERSION] = EV_CURRENT;
	PUT_EH(buf, is64, big, e_type, ET_CORE);
	PUT_EH(buf, is64, big, e_machine, is64 ? EM_X86_64 : EM_386);
	PUT_EH(buf, is64, big, e_version, EV_CURRENT);
	PUT_EH(buf, is64, big, e_flags, 0x12345);
	PUT_EH(buf, is64, big, e_phoff, eh);
	PUT_EH(buf, is64, big, e_shoff, 0x777);
	PUT_EH(buf, is64, big, e_ehsize, eh);
	PUT_EH(buf, is64, big, e_phentsize, ph);
	PUT_EH(buf, is64, big, e_phnum, phnum);
	PUT_EH(buf, is64, big, e_shentsize, 7);
	PUT_EH(buf, is64, big, e_shnum, 3);
	PUT_EH(buf, is64, big, e_shstrndx, 2);
	return eh;
}

static void phdr(unsigned char *p, bool is64, bool big, uint32_t type,
		 uint64_t off, uint64_t filesz)
{
	PUT_PH(p, is64, big, p_type, type);
	PUT_PH(p, is64, big, p_flags, PF_R | PF_W);
	PUT_PH(p, is64, big, p_offset, off);
	PUT_PH(p, is64, big, p_vaddr, 0x8000);
	PUT_PH(p, is64, big, p_paddr, 0x9000);
	PUT_PH(p, is64, big, p_filesz, filesz);
	PUT_PH(p, is64, big, p_memsz, filesz + 0x10);
	PUT_PH(p, is64, big, p_align, 4);
}

/* A note at p; returns its size with padding to align. */
static size_t note(unsigned char *p, bool big, const char *name, uint32_t type,
		   const void *desc, uint32_t descsz, unsigned align)
{
	size_t namesz = strlen(name) + 1;
	size_t d = (12 + namesz + align - 1) & ~(size_t)(align - 1);
	size_t end = (d + descsz + align - 1) & ~(size_t)(align - 1);

	memset(p, 0, end);
	put(p, namesz, 4, big);
	put(p + 4, descsz, 4, big);
	put(p + 8, type, 4, big);
	memcpy(p + 12, name, namesz);
	memcpy(p + d, desc, descsz);
	return end;
}

/* Whether err names the offset and says what. */
static bool says(struct kcore_error *err, uint64_t offset, const char *what)
{
	char *msg = err ? kcore_error_describe(err) : NULL;
	bool r = msg && err->has_offset && err->offset == offset &&
		 strstr(msg, what) && strstr(msg, "offset") &&
		 !strchr(msg, '\n');

	if (!r)
		printf("#   got: %s\n", msg ? msg : "(no error)");
	free(msg);
	kcore_error_destroy(err);
	return r;
}

static void ident(void)
{
	unsigned char b[sizeof(Elf64_Ehdr)];

	header(b, true, false, 1);
	ok(!kcore_elf_check_ident(b, sizeof(b), true, "f"), "a valid ident");
	ok(says(kcore_elf_check_ident(b, 3, true, "f"), 0, "not an ELF file"),
	   "three bytes: not an ELF file");
	ok(says(kcore_elf_check_ident(b, 4, true, "f"), EI_CLASS,
		"invalid ELF class"),
	   "the magic only: the class is missing");
	b[0] = 'K';
	ok(says(kcore_elf_check_ident(b, sizeof(b), true, "f"), 0,
		"not an ELF file"),
	   "bad magic: offset 0");
	header(b, true, false, 1);
	b[EI_CLASS] = 3;
	ok(says(kcore_elf_check_ident(b, sizeof(b), true, "f"), EI_CLASS,
		"invalid ELF class 3"),
	   "class 3 named at its offset");
	header(b, true, false, 1);
	b[EI_DATA] = 0;
	ok(says(kcore_elf_check_ident(b, sizeof(b), true, "f"), EI_DATA,
		"byte order 0"),
	   "byte order 0 named at its offset");
	header(b, true, false, 1);
	b[EI_VERSION] = 9;
	ok(says(kcore_elf_check_ident(b, sizeof(b), true, "f"), EI_VERSION,
		"version 9"),
	   "version 9 named when checked");
	ok(!kcore_elf_check_ident(b, sizeof(b), false, "f"),
	   "and passed when not");
}

static void headers(void)
{
	for (int c = 0; c < 4; c++) {
		bool is64 = c & 1, big = c & 2;
		unsigned char b[256];
		size_t eh = header(b, is64, big, 2);
		size_t ps = kcore_elf_phdr_size(is64);
		struct kcore_elf_ehdr e;
		struct kcore_elf_phdr p;
		char what[64];

		snprintf(what, sizeof(what), "%d-bit %s", is64 ? 64 : 32,
			 big ? "big-endian" : "little-endian");
		phdr(b + eh, is64, big, PT_NOTE, 0x100, 0x20);
		phdr(b + eh + ps, is64, big, PT_LOAD, 0x1000, 0x3000);
		kcore_elf_decode_ehdr(b, &e);
		ok(e.is64 == is64 && e.big == big && e.type == ET_CORE &&
			   e.machine == (is64 ? EM_X86_64 : EM_386) &&
			   e.flags == 0x12345 && e.phoff == eh &&
			   e.shoff == 0x777 && e.ehsize == eh &&
			   e.phentsize == ps && e.phnum == 2 &&
			   e.shentsize == 7 && e.shnum == 3 && e.shstrndx == 2,
		   "%s: every header field", what);
		ok(kcore_elf_ehdr_size(is64) == eh, "%s: header size", what);
		kcore_elf_decode_phdr(is64, big, b + eh + ps, &p);
		ok(p.type == PT_LOAD && p.flags == (PF_R | PF_W) &&
			   p.offset == 0x1000 && p.vaddr == 0x8000 &&
			   p.paddr == 0x9000 && p.filesz == 0x3000 &&
			   p.memsz == 0x3010 && p.align == 4,
		   "%s: every program header field", what);
		ok(!kcore_elf_check_phdr_table(&e, 2, eh + 2 * ps, "f"),
		   "%s: a table that ends at the end of the file", what);
		ok(says(kcore_elf_check_phdr_table(&e, 2, eh + 2 * ps - 1, "f"),
			eh, "extends past the end of the file"),
		   "%s: one byte short: truncated", what);
	}
}

static void bounds(void)
{
	unsigned char b[sizeof(Elf64_Ehdr)], sh[sizeof(Elf64_Shdr)] = { 0 };
	struct kcore_elf_ehdr e;

	header(b, true, false, 1);
	PUT_EH(b, true, false, e_phoff, 0x100000);
	kcore_elf_decode_ehdr(b, &e);
	ok(says(kcore_elf_check_phdr_table(&e, 1, 0x1000, "f"), 0x100000,
		"at offset 0x100000"),
	   "e_phoff past the end named");
	e.phoff = UINT64_MAX - 16;
	ok(says(kcore_elf_check_phdr_table(&e, 1, UINT64_MAX, "f"),
		UINT64_MAX - 16, "overflows"),
	   "offset + table overflowing 64 bits, size unknown");
	ok(says(kcore_elf_check_phdr_table(&e, 1, 0x1000, "f"), UINT64_MAX - 16,
		"extends past"),
	   "and with a size");
	e.phoff = 64;
	ok(says(kcore_elf_check_phdr_table(&e, UINT64_MAX / 8, UINT64_MAX, "f"),
		64, "overflows"),
	   "phnum * phentsize overflowing 64 bits");
	/* PN_XNUM: the count is sh_info of section header 0, 32 bits. */
	put(sh + offsetof(Elf64_Shdr, sh_info), 0xfffffffe, 4, false);
	ok(kcore_elf_xnum_count(&e, sh) == 0xfffffffe, "PN_XNUM count read");
	ok(says(kcore_elf_check_phdr_table(&e, kcore_elf_xnum_count(&e, sh),
					   1u << 20, "f"),
		64, "extends past"),
	   "a PN_XNUM count larger than the file");
	ok(kcore_elf_range_past(UINT64_MAX, 1, UINT64_MAX) &&
		   !kcore_elf_range_past(10, 6, 16) &&
		   kcore_elf_range_past(10, 7, 16),
	   "ranges: overflow and the last byte");
}

static int walk(const unsigned char *buf, size_t len, bool big, unsigned align,
		bool padded, struct kcore_elf_note *n, int max)
{
	struct kcore_elf_notes it;
	enum kcore_elf_note_next r;
	int count = 0;

	kcore_elf_notes_init(&it, buf, len, big, align, padded);
	while ((r = kcore_elf_notes_next(&it,
					 &n[count < max ? count : max - 1])) ==
	       KCORE_ELF_NOTE_OK)
		count++;
	return r == KCORE_ELF_NOTE_END ? count : -(int)r;
}

static void notes(void)
{
	unsigned char raw[512 + 1], *b = raw + 1; /* never 4-byte aligned */
	struct kcore_elf_note n[4];
	size_t len;

	for (int big = 0; big < 2; big++) {
		len = note(b, big, "CORE", NT_PRSTATUS, "abcde", 5, 4);
		len += note(b + len, big, "GNU", NT_GNU_BUILD_ID, "12345678", 8,
			    4);
		ok(walk(b, len, big, 4, true, n, 4) == 2,
		   "%s: two notes, then the end", big ? "big" : "little");
		ok(kcore_elf_note_is(&n[0], "CORE") &&
			   n[0].type == NT_PRSTATUS && n[0].descsz == 5 &&
			   n[0].desc == b + 20 &&
			   !memcmp(n[0].desc, "abcde", 5) && n[0].offset == 0,
		   "first note: name, type, descriptor");
		ok(kcore_elf_note_is(&n[1], "GNU") && n[1].offset == 28 &&
			   n[1].desc == b + 44,
		   "second note after the padding");
	}
	/* Alignment 8 (GNU properties): the descriptor and the next note. */
	len = note(b, false, "LINUX", 0x402, "x", 1, 8);
	is_int(len, 32, "an 8-aligned note's size");
	len += note(b + len, false, "GNU", 5, "y", 1, 8);
	ok(walk(b, len, false, 8, true, n, 4) == 2 && n[0].desc == b + 24 &&
		   n[1].offset == 32 && n[1].desc == b + 48,
	   "align 8: descriptors at 24 and 48");
	ok(walk(b, len, false, 4, true, n, 4) < 0,
	   "the same bytes walked at 4 do not parse");

	/* Truncated: a header cut short, and a lone NUL word. */
	len = note(b, false, "CORE", 1, "abcd", 4, 4);
	ok(walk(b, len + 8, false, 4, true, n, 4) ==
			   -KCORE_ELF_NOTE_SHORT_HEADER &&
		   n[1].offset == len,
	   "8 bytes after a note: a short header at its offset");
	ok(walk(b, len - 1, false, 4, false, n, 4) == -KCORE_ELF_NOTE_OVERRUN,
	   "a descriptor one byte short");

	/* Sizes near 4 GiB must not wrap when padded. */
	note(b, false, "CORE", 1, "", 0, 4);
	put(b, 0xfffffff0, 4, false);
	ok(walk(b, 64, false, 4, true, n, 4) == -KCORE_ELF_NOTE_OVERRUN &&
		   n[0].namesz == 0xfffffff0,
	   "namesz 0xfffffff0 runs past the end");
	put(b, 5, 4, false);
	put(b + 4, 0xfffffffd, 4, false);
	ok(walk(b, 64, false, 4, true, n, 4) == -KCORE_ELF_NOTE_OVERRUN &&
		   n[0].descsz == 0xfffffffd,
	   "descsz 0xfffffffd (0 when padded in 32 bits) runs past");
	put(b + 4, 0xffffffff, 4, false);
	ok(walk(b, 64, false, 8, false, n, 4) == -KCORE_ELF_NOTE_OVERRUN,
	   "descsz 0xffffffff at align 8");

	/* The last note's padding: libelf's rule, or the descriptor only. */
	len = note(b, false, "CORE", 1, "abcde", 5, 4);
	ok(walk(b, len - 3, false, 4, true, n, 4) == -KCORE_ELF_NOTE_OVERRUN,
	   "unpadded last note refused when padding is required");
	ok(walk(b, len - 3, false, 4, false, n, 4) == 1,
	   "and taken when only the descriptor must fit");
	ok(walk(b, 0, false, 4, true, n, 4) == 0, "no bytes: no notes");
	ok(walk(NULL, 0, false, 4, true, n, 4) == 0,
	   "no buffer at all: no notes");

	/* Names: namesz covers the NUL. */
	note(b, false, "CORE", 1, "", 0, 4);
	put(b, 4, 4, false);
	ok(walk(b, 16, false, 4, true, n, 4) == 1 &&
		   !kcore_elf_note_is(&n[0], "CORE"),
	   "\"CORE\" without its NUL is not CORE");
}

/* A 64-bit little-endian file's first bytes with one PT_NOTE at 0x100. */
static void first_page(void)
{
	unsigned char b[512];
	size_t eh, len, got = 0;
	const unsigned char *d;

	memset(b, 0, sizeof(b));
	eh = header(b, true, false, 1);
	PUT_EH(b, true, false, e_type, ET_DYN);
	len = note(b + 0x100, false, "GNU", NT_GNU_BUILD_ID, "", 0, 4);
	len += note(b + 0x100 + len, false, "GNU", NT_GNU_BUILD_ID, "ID", 2, 4);
	phdr(b + eh, true, false, PT_NOTE, 0x100, len);
	d = kcore_elf_find_note(b, sizeof(b), "GNU", NT_GNU_BUILD_ID, 1, 64,
				&got);
	ok(d && got == 2 && !memcmp(d, "ID", 2),
	   "find_note: an empty build ID skipped, the next one found");
	ok(kcore_elf_find_note(b, sizeof(b), "GNU", NT_GNU_BUILD_ID, 0, 64,
			       &got) == b + 0x110 &&
		   got == 0,
	   "find_note: the empty one when allowed");
	ok(!kcore_elf_find_note(b, 0x100 + len - 1, "GNU", NT_GNU_BUILD_ID, 1,
				64, &got),
	   "find_note: a segment past the bytes held is not read");
	phdr(b + eh, true, false, PT_NOTE, UINT64_MAX - 4, len);
	ok(!kcore_elf_find_note(b, sizeof(b), "GNU", NT_GNU_BUILD_ID, 1, 64,
				&got),
	   "find_note: p_offset + p_filesz overflowing");
}

/* The reader's parse of whole files, through kcore_source_open(). */
static struct kcore_error *open_bytes(const char *dir, const void *img,
				      size_t len)
{
	char path[256];
	struct kcore_source *src = NULL;
	struct kcore_error *err;
	int fd;

	snprintf(path, sizeof(path), "%s/core", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, img, len) != (ssize_t)len)
		tap_skip_all("cannot write a temp file");
	close(fd);
	err = kcore_source_open(path, NULL, &src);
	if (!err)
		kcore_source_destroy(src);
	unlink(path);
	return err;
}

static void reader(void)
{
	char dir[] = "/tmp/t-elfparse.XXXXXX";
	unsigned char b[0x400];
	size_t eh, len;

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	for (int c = 0; c < 4; c++) {
		bool is64 = c & 1, big = c & 2;

		memset(b, 0, sizeof(b));
		eh = header(b, is64, big, 2);
		len = note(b + 0x100, big, "CORE", NT_PRPSINFO, "", 0, 4);
		phdr(b + eh, is64, big, PT_NOTE, 0x100, len);
		phdr(b + eh + kcore_elf_phdr_size(is64), is64, big, PT_LOAD,
		     0x200, 0x200);
		ok(!open_bytes(dir, b, sizeof(b)), "%d-bit %s core opens",
		   is64 ? 64 : 32, big ? "big-endian" : "little-endian");
	}
	memset(b, 0, sizeof(b));
	eh = header(b, true, false, 2);
	len = note(b + 0x100, false, "CORE", NT_PRPSINFO, "", 0, 4);
	phdr(b + eh, true, false, PT_NOTE, 0x100, len);
	phdr(b + eh + 56, true, false, PT_LOAD, 0x200, 0x200);
	ok(says(open_bytes(dir, b, 40), 40, "truncated: the ELF header"),
	   "a truncated header");
	PUT_EH(b, true, false, e_phoff, 0x100000);
	ok(says(open_bytes(dir, b, sizeof(b)), 0x100000, "extends past"),
	   "e_phoff past the end of the file");
	PUT_EH(b, true, false, e_phoff, eh);
	PUT_EH(b, true, false, e_phnum, 20);
	ok(says(open_bytes(dir, b, sizeof(b)), eh, "(20 entries"),
	   "e_phnum past the end of the file");
	PUT_EH(b, true, false, e_phnum, PN_XNUM);
	PUT_EH(b, true, false, e_shoff, 0);
	ok(says(open_bytes(dir, b, sizeof(b)), 0, "PN_XNUM"),
	   "PN_XNUM without section header 0");
	PUT_EH(b, true, false, e_shoff, 0x380);
	put(b + 0x380 + offsetof(Elf64_Shdr, sh_info), 0xffffff, 4, false);
	ok(says(open_bytes(dir, b, sizeof(b)), eh, "(16777215 entries"),
	   "a PN_XNUM count past the end of the file");
	put(b + 0x380 + offsetof(Elf64_Shdr, sh_info), 2, 4, false);
	ok(!open_bytes(dir, b, sizeof(b)), "PN_XNUM with a good count opens");
	PUT_EH(b, true, false, e_phnum, 2);
	put(b + 0x100 + 4, 0xfffffffd, 4, false);
	ok(says(open_bytes(dir, b, sizeof(b)), 0x100, "descsz 0xfffffffd"),
	   "a note's descsz near 4 GiB, named at its offset");
	put(b + 0x100 + 4, 0, 4, false);
	b[0x100 + len] = 1; /* not padding */
	phdr(b + eh, true, false, PT_NOTE, 0x100, len + 8);
	ok(says(open_bytes(dir, b, sizeof(b)), 0x100 + len,
		"truncated note header"),
	   "a truncated note header");
	/* A PT_NOTE at an odd offset: alignment counts from its start. */
	memset(b + 0x100, 0, 0x100);
	note(b + 0x101, false, "CORE", NT_PRPSINFO, "", 0, 4);
	phdr(b + eh, true, false, PT_NOTE, 0x101, len);
	ok(!open_bytes(dir, b, sizeof(b)), "a PT_NOTE at an odd offset");
	phdr(b + eh, true, false, PT_NOTE, 0x1f8, len);
	ok(says(open_bytes(dir, b, sizeof(b)), 0x200, "overlap"),
	   "a PT_NOTE overlapping the PT_LOAD");
	rmdir(dir);
}

/* The builder's notes: this test's bytes, walked back by the walker. */
static void built_notes(void)
{
	unsigned char got[256], want[256];
	struct kcore_elf_note n[5]; /* the walk's last call writes one more */
	static const struct {
		const char *name;
		uint32_t type;
		const char *desc;
		size_t len;
	} in[] = {
		{ "CORE", NT_PRSTATUS, "abcde", 5 },
		{ "VMCOREINFO", 0, "OSRELEASE=6.1\n", 14 },
		{ "KCOREDUMP", 0x4b43, NULL, 6 }, /* NULL: zeros */
		{ "GNU", NT_GNU_BUILD_ID, "12345678", 8 },
	};
	static const char zeros[8];
	unsigned char *p = got;
	size_t len = 0;

	memset(got, 0xa5, sizeof(got)); /* padding must be written */
	for (size_t i = 0; i < 4; i++) {
		size_t size = kcore_elfcore_note_size(in[i].name, in[i].len);
		unsigned char *end = kcore_elfcore_put_note(
			p, in[i].name, in[i].type, in[i].desc, in[i].len);

		ok(end == p + size && size % 4 == 0,
		   "%s: the note is its size, a multiple of 4", in[i].name);
		len += note(want + len, false, in[i].name, in[i].type,
			    in[i].desc ? in[i].desc : zeros,
			    (uint32_t)in[i].len, 4);
		p = end;
	}
	is_int((long long)(p - got), (long long)len,
	       "the four notes' bytes add up");
	ok(!memcmp(got, want, len), "byte for byte this test's notes");
	ok(walk(got, len, false, 4, true, n, 5) == 4, "walked: four notes");
	for (size_t i = 0; i < 4; i++)
		ok(kcore_elf_note_is(&n[i], in[i].name) &&
			   n[i].type == in[i].type &&
			   n[i].descsz == in[i].len &&
			   (size_t)(n[i].desc - got) - n[i].offset ==
				   kcore_elfcore_note_desc_offset(in[i].name) &&
			   !memcmp(n[i].desc, in[i].desc ? in[i].desc : zeros,
				   in[i].len),
		   "%s: name, type, descriptor and its offset", in[i].name);
}

int main(void)
{
	ident();
	headers();
	bounds();
	notes();
	built_notes();
	first_page();
	reader();
	return tap_done();
}
