/* SPDX-License-Identifier: MIT */
/*
 * kdump-check: an independent check of our kdump-compressed and LiME
 * outputs against an ELF core of the same physical memory (e.g. a
 * `kcoredump dump --segments ram` of the same source).  It parses the
 * files itself from the published layouts (makedumpfile IMPLEMENTATION,
 * crash diskdump.h, LiME's format doc), without libkcore:
 *
 *   kdump: header fields (signature, version 6, block size, nr_cpus,
 *          utsname machine and release, codec status bit), the sub-header
 *          (phys_base, VMCOREINFO and note offsets inside the note copy,
 *          max_mapnr_64), bitmap 1 = exactly the ELF's physical pages,
 *          bitmap 2 a subset of it, one page_desc per bitmap-2 bit with
 *          data inside the file, every page decompressing to the ELF's
 *          page, excluded pages zero in the ELF, and every zero page
 *          sharing one stored copy.  A flattened file is rearranged in
 *          memory first.
 *   lime:  32-byte headers (magic, version 1, inclusive end), ranges
 *          ascending and disjoint, covering the ELF's physical segments,
 *          content equal to the ELF's.
 *
 * With --live (a kdump and an ELF dump taken one after the other from a
 * running kernel), pages may differ: they are counted, not failures.
 *
 * Usage: kdump-check kdump FILE ELF RELEASE PHYS_BASE CODEC [--live]
 *        kdump-check lime FILE ELF
 * Prints "ok ..." lines; exits 1 on the first difference.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lzo/lzo1x.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#define PAGE	      4096u
#define KDUMP_DESC(i) ((i)*24)

/*
 * Whether file bytes [off, off + len) may hold data (SEEK_DATA), so the
 * holes of sparse multi-GiB files are never touched.  Queries ascend;
 * the next data offset is cached per file.
 */
struct sparse {
	int fd;
	uint64_t from, next_data;
	bool valid;
};

static bool has_data(struct sparse *s, uint64_t off, uint64_t len)
{
	if (!s->valid || off < s->from || off >= s->next_data) {
		off_t d = lseek(s->fd, (off_t)off, SEEK_DATA);

		s->from = off;
		s->next_data = d < 0 ? UINT64_MAX : (uint64_t)d;
		s->valid = true;
	}
	return off + len > s->next_data;
}

/* Map a file (sparse multi-GiB files stay cheap). */
static unsigned char *load_fd(const char *path, size_t *ret_len, int *ret_fd)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	void *p;

	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		exit(2);
	}
	p = mmap(NULL, st.st_size ? (size_t)st.st_size : 1, PROT_READ,
		 MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror(path);
		exit(2);
	}
	*ret_fd = fd;
	*ret_len = (size_t)st.st_size;
	return p;
}

static unsigned char *load(const char *path, size_t *ret_len)
{
	int fd;
	unsigned char *p = load_fd(path, ret_len, &fd);

	close(fd);
	return p;
}

/* Messages take two numbers (unused ones are 0 and left out of fmt). */
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
static void fail(const char *fmt, unsigned long long a, unsigned long long b)
{
	printf("FAIL: ");
	printf(fmt, a, b);
	printf("\n");
	exit(1);
}

static uint64_t get(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	memcpy(&v, p, n);
	return v;
}

static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The ELF's PT_LOADs with a physical address. */
struct load {
	uint64_t paddr, size, offset;
};
static struct load loads[64];
static size_t nloads;
static unsigned char *elf;
static size_t elf_len;
static bool live;
static uint64_t live_diffs;
static struct sparse elf_sparse;

static void read_elf(const char *path)
{
	elf = load_fd(path, &elf_len, &elf_sparse.fd);
	if (elf_len < 64 || memcmp(elf, ELFMAG, 4) || elf[EI_CLASS] != 2)
		fail("the ELF input is not an ELF64 file", 0, 0);
	uint64_t phoff = get(elf + 32, 8);
	unsigned phnum = (unsigned)get(elf + 56, 2);

	for (unsigned i = 0; i < phnum; i++) {
		const unsigned char *ph = elf + phoff + 56 * i;

		if (get(ph, 4) != PT_LOAD || get(ph + 24, 8) == UINT64_MAX)
			continue;
		if (nloads == 64)
			fail("too many loads", 0, 0);
		loads[nloads++] =
			(struct load){ get(ph + 24, 8), get(ph + 40, 8),
				       get(ph + 8, 8) };
	}
}

static const unsigned char zero_page[PAGE];

/* The ELF's page at paddr, or NULL if no segment holds it; *ret_hole
 * says whether it lies in a file hole (reads as zeros).  A hole's page is
 * a static page of zeros, not the mapping: faulting in a 4 GiB sparse
 * ELF's holes page by page costs a minute and 4 GiB of page cache. */
static const unsigned char *elf_page_at(uint64_t paddr, bool *ret_hole)
{
	for (size_t i = 0; i < nloads; i++)
		if (paddr >= loads[i].paddr &&
		    paddr < loads[i].paddr + loads[i].size) {
			uint64_t off = loads[i].offset + paddr - loads[i].paddr;

			if (off + PAGE > elf_len)
				fail("ELF page at 0x%llx past EOF %llu", paddr,
				     0);
			*ret_hole = !has_data(&elf_sparse, off, PAGE);
			return *ret_hole ? zero_page : elf + off;
		}
	return NULL;
}

static bool zero(const unsigned char *p)
{
	return !memcmp(p, zero_page, PAGE);
}

/* Rearrange a flattened file: records placed at their offsets. */
static unsigned char *unflatten(unsigned char *in, size_t in_len,
				size_t *ret_len)
{
	size_t pos = 4096, len = 0, records = 0;
	unsigned char *out;

	if (be64(in + 16) != 1 || be64(in + 24) != 1)
		fail("flattened header type %llu version %llu", be64(in + 16),
		     be64(in + 24));
	for (; pos + 16 <= in_len; records++) {
		int64_t off = (int64_t)be64(in + pos);
		uint64_t size = be64(in + pos + 8);

		if (off == -1)
			break;
		if (pos + 16 + size > in_len || off < 0)
			fail("bad flattened record at %llu (size %llu)", pos,
			     size);
		if ((uint64_t)off + size > len)
			len = (uint64_t)off + size;
		pos += 16 + size;
	}
	if (pos + 16 > in_len || (int64_t)be64(in + pos) != -1)
		fail("no end record in the flattened file (%llu records)%llu",
		     records, 0);
	out = calloc(1, len);
	if (!out)
		exit(2);
	for (pos = 4096; (int64_t)be64(in + pos) != -1;) {
		uint64_t off = be64(in + pos), size = be64(in + pos + 8);

		memcpy(out + off, in + pos + 16, size);
		pos += 16 + size;
	}
	printf("ok - flattened: %zu records rearranged\n", records);
	*ret_len = len;
	return out;
}

static int check_kdump(const char *path, const char *release,
		       uint64_t phys_base, const char *codec)
{
	size_t len;
	unsigned char *f = load(path, &len), *owned = NULL;

	if (len > 16 && !memcmp(f, "makedumpfile", 13)) {
		f = owned = unflatten(f, len, &len);
	}
	if (len < 2 * PAGE || memcmp(f, "KDUMP   ", 8))
		fail("no KDUMP signature (%llu bytes)%llu", len, 0);
	if (get(f + 8, 4) != 6)
		fail("header_version %llu, expected 6%llu", get(f + 8, 4), 0);
	if (strcmp((char *)f + 12 + 4 * 65, "x86_64"))
		fail("utsname.machine is not x86_64", 0, 0);
	if (strcmp((char *)f + 12 + 2 * 65, release))
		fail("utsname.release differs", 0, 0);
	uint32_t status = (uint32_t)get(f + 424, 4);
	uint32_t want = !strcmp(codec, "zstd")	   ? 0x20
			: !strcmp(codec, "zlib")   ? 0x1
			: !strcmp(codec, "lzo")	   ? 0x2
			: !strcmp(codec, "snappy") ? 0x4
						   : 0;
	if (status != want)
		fail("status 0x%llx, expected 0x%llx", status, want);
	if (get(f + 428, 4) != PAGE)
		fail("block_size %llu", get(f + 428, 4), 0);
	uint64_t sub_blocks = get(f + 432, 4), bm_blocks = get(f + 436, 4);
	int32_t nr_cpus = (int32_t)get(f + 460, 4);
	if (nr_cpus < 1)
		fail("nr_cpus %llu", (unsigned long long)nr_cpus, 0);
	const unsigned char *sub = f + PAGE;
	if (get(sub, 8) != phys_base)
		fail("phys_base 0x%llx, expected 0x%llx", get(sub, 8),
		     phys_base);
	uint64_t max_mapnr = get(sub + 96, 8);
	if (get(f + 440, 4) !=
	    (max_mapnr > UINT32_MAX ? UINT32_MAX : max_mapnr))
		fail("max_mapnr %llu vs max_mapnr_64 %llu", get(f + 440, 4),
		     max_mapnr);
	uint64_t vi_off = get(sub + 32, 8), vi_size = get(sub + 40, 8);
	uint64_t note_off = get(sub + 48, 8), note_size = get(sub + 56, 8);
	uint64_t area_end = (1 + sub_blocks) * PAGE;
	if (note_off != PAGE + 104 || note_off + note_size > area_end)
		fail("notes at %llu+%llu outside the sub-header area", note_off,
		     note_size);
	if (vi_off < note_off || vi_off + vi_size > note_off + note_size ||
	    strncmp((char *)f + vi_off, "OSRELEASE=", 10))
		fail("VMCOREINFO at %llu+%llu not inside the notes", vi_off,
		     vi_size);
	/* The note copy parses and holds VMCOREINFO and our note. */
	bool has_vi = false, has_meta = false;
	for (uint64_t p = note_off; p + 12 <= note_off + note_size;) {
		uint32_t namesz = (uint32_t)get(f + p, 4);
		uint32_t descsz = (uint32_t)get(f + p + 4, 4);
		const char *name = (const char *)f + p + 12;

		if (!namesz)
			break;
		has_vi |= !strcmp(name, "VMCOREINFO") &&
			  p + 12 + ((namesz + 3) & ~3u) == vi_off;
		has_meta |=
			!strcmp(name, "KCOREDUMP") &&
			strstr((const char *)f + p + 12 + ((namesz + 3) & ~3u),
			       "dump_sha256=") != NULL;
		p += 12 + ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
	}
	if (!has_vi || !has_meta)
		fail("notes: VMCOREINFO %llu, KCOREDUMP metadata %llu", has_vi,
		     has_meta);
	printf("ok - header: version 6, x86_64 %s, status 0x%x, nr_cpus %d, "
	       "phys_base 0x%llx, notes with VMCOREINFO and digests\n",
	       release, status, nr_cpus, (unsigned long long)phys_base);
	/* Bitmaps. */
	uint64_t bm_len = bm_blocks * PAGE / 2;
	const unsigned char *bm1 = f + area_end, *bm2 = bm1 + bm_len;
	if (bm_len * 8 < max_mapnr || area_end + 2 * bm_len > len)
		fail("bitmaps of %llu bytes for max_mapnr %llu", bm_len,
		     max_mapnr);
	uint64_t top = 0, ndesc = 0, excluded = 0, data = 0, zeros = 0;
	for (size_t i = 0; i < nloads; i++)
		if (loads[i].paddr + loads[i].size > top)
			top = loads[i].paddr + loads[i].size;
	if (max_mapnr != top / PAGE)
		fail("max_mapnr %llu, expected %llu", max_mapnr, top / PAGE);
	const unsigned char *desc = bm2 + bm_len;
	uint64_t zero_off = 0, zero_size = 0;
	uint32_t zero_flags = 0;
	unsigned char *out = malloc(PAGE);
	for (uint64_t pfn = 0; pfn < bm_len * 8; pfn++) {
		bool b1 = bm1[pfn >> 3] >> (pfn & 7) & 1;
		bool b2 = bm2[pfn >> 3] >> (pfn & 7) & 1;
		bool hole = false;
		const unsigned char *want_page =
			pfn < max_mapnr ? elf_page_at(pfn * PAGE, &hole) : NULL;

		if (b1 != (want_page != NULL))
			fail("bitmap 1 bit of pfn 0x%llx is %llu", pfn, b1);
		if (b2 && !b1)
			fail("pfn 0x%llx dumped but not RAM", pfn, 0);
		if (!b2) {
			if (b1 && !hole && !zero(want_page) && !live)
				fail("pfn 0x%llx excluded but has data", pfn,
				     0);
			excluded += b1;
			continue;
		}
		const unsigned char *d = desc + KDUMP_DESC(ndesc++);
		uint64_t off = get(d, 8), size = get(d + 8, 4);
		uint32_t flags = (uint32_t)get(d + 12, 4);
		if (!off || off + size > len || size > PAGE || !size ||
		    off < (uint64_t)(desc - f))
			fail("pfn 0x%llx: bad page_desc offset %llu", pfn, off);
		if (zeros && off == zero_off && size == zero_size &&
		    flags == zero_flags) {
			/* The shared zero page again: its bytes decompressed
			 * to zeros the first time. */
			memset(out, 0, PAGE);
		} else if (flags & 0x20) {
			if (ZSTD_decompress(out, PAGE, f + off, size) != PAGE)
				fail("pfn 0x%llx: zstd page of %llu bytes", pfn,
				     size);
		} else if (flags & 0x1) {
			uLongf n = PAGE;
			if (uncompress(out, &n, f + off, size) != Z_OK ||
			    n != PAGE)
				fail("pfn 0x%llx: zlib page of %llu bytes", pfn,
				     size);
		} else if (flags & 0x2) {
			lzo_uint n = PAGE;
			if (lzo1x_decompress_safe(f + off, size, out, &n,
						  NULL) != LZO_E_OK ||
			    n != PAGE)
				fail("pfn 0x%llx: lzo page of %llu bytes", pfn,
				     size);
		} else if (flags & 0x4) {
			size_t n = PAGE;
			if (snappy_uncompress((const char *)f + off, size,
					      (char *)out, &n) != SNAPPY_OK ||
			    n != PAGE)
				fail("pfn 0x%llx: snappy page of %llu bytes",
				     pfn, size);
		} else if (flags == 0 && size == PAGE) {
			memcpy(out, f + off, PAGE);
		} else {
			fail("pfn 0x%llx: flags 0x%llx", pfn, flags);
		}
		if (flags && flags != want)
			fail("pfn 0x%llx: page flags 0x%llx, not the codec's",
			     pfn, flags);
		if (strcmp(codec, "none") == 0 && flags)
			fail("pfn 0x%llx compressed (flags 0x%llx) with codec "
			     "none",
			     pfn, flags);
		if (memcmp(out, want_page, PAGE) && live)
			live_diffs++;
		else if (memcmp(out, want_page, PAGE))
			fail("pfn 0x%llx differs from the ELF page", pfn, 0);
		if (zero(out)) {
			if (zeros++ && off != zero_off)
				fail("zero page at %llu, not shared (%llu)",
				     off, zero_off);
			zero_off = off;
			zero_size = size;
			zero_flags = flags;
		} else {
			data++;
		}
	}
	free(out);
	if (live)
		printf("# --live: %llu pages changed between the two dumps\n",
		       (unsigned long long)live_diffs);
	printf("ok - %llu pages decompress to the ELF's (%llu with data, "
	       "%llu zero sharing one copy), %llu excluded pages are zero\n",
	       (unsigned long long)ndesc, (unsigned long long)data,
	       (unsigned long long)zeros, (unsigned long long)excluded);
	free(owned);
	return 0;
}

static int check_lime(const char *path)
{
	size_t len, pos = 0, n = 0;
	struct sparse sp = { 0 };
	unsigned char *f = load_fd(path, &len, &sp.fd);
	uint64_t prev_end = 0, covered = 0, total = 0;

	while (pos < len) {
		if (pos + 32 > len)
			fail("truncated LiME header at %llu", pos, 0);
		uint64_t s = get(f + pos + 8, 8), e = get(f + pos + 16, 8);
		if (get(f + pos, 4) != 0x4C694D45 ||
		    memcmp(f + pos, "EMiL", 4) || get(f + pos + 4, 4) != 1 ||
		    get(f + pos + 24, 8))
			fail("bad LiME header at %llu", pos, 0);
		if (e < s || (n && s <= prev_end) || pos + 32 + e - s + 1 > len)
			fail("range 0x%llx-0x%llx not ascending or truncated",
			     s, e);
		for (uint64_t a = s; a <= e; a += PAGE) {
			bool hole;
			const unsigned char *want = elf_page_at(a, &hole);

			if (want && hole &&
			    !has_data(&sp, pos + 32 + (a - s), PAGE))
				continue; /* zeros on both sides */
			if (!want || memcmp(want, f + pos + 32 + (a - s), PAGE))
				fail("LiME page at 0x%llx differs", a, 0);
		}
		covered += e - s + 1;
		prev_end = e;
		pos += 32 + e - s + 1;
		n++;
	}
	for (size_t i = 0; i < nloads; i++)
		total += loads[i].size;
	if (covered != total)
		fail("ranges cover %llu bytes, the ELF %llu", covered, total);
	printf("ok - %zu LiME ranges, ascending, inclusive ends, %llu bytes "
	       "equal to the ELF's\n",
	       n, (unsigned long long)covered);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 8 && !strcmp(argv[7], "--live")) {
		live = true;
		argc--;
	}
	if (argc == 7 && !strcmp(argv[1], "kdump")) {
		read_elf(argv[3]);
		return check_kdump(argv[2], argv[4], strtoull(argv[5], NULL, 0),
				   argv[6]);
	}
	if (argc == 4 && !strcmp(argv[1], "lime")) {
		read_elf(argv[3]);
		return check_lime(argv[2]);
	}
	fprintf(stderr, "usage: kdump-check kdump FILE ELF RELEASE PHYS_BASE "
			"CODEC\n       kdump-check lime FILE ELF\n");
	return 2;
}
