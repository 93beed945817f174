// SPDX-License-Identifier: MIT
/*
 * One moment, one copy: /proc/kcore lists the kernel image twice, as its
 * TEXT segment and inside RAM, and a live kernel changes between two reads
 * of the same page.  A kcore-shaped core (the image's PT_LOAD first, then
 * the RAM that holds it) is dumped through I/O that stamps every page with
 * a read counter, so no two reads of a page agree.  In the ELF written (a
 * sparse file, .zst and a pipe) the same bytes through the image's
 * PT_LOAD and through RAM's must be equal (drgn reads the first, crash the
 * second), the image's PT_LOAD must share RAM's file bytes, and the dump
 * must verify.
 *
 * The read order (issue 51): the same stamps say which page was read
 * when.  With --read-order volatile-first every page of the image is read
 * before any other page of RAM (and the note and the result list the
 * image as the one part read first, in RAM's segment at the image's
 * physical address); in address order the RAM below the image comes
 * first.  The output's layout is the same either way: the checks above
 * hold for both orders, in a sparse file, a .zst and a pipe.
 */
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kcoredump/dump.h"
#include "kcoredump/kcore.h"
#include "kcoredump/notes.h"
#include "kcoredump/source.h"
#include "kcoredump/verify.h"
#include "elfcore.h"
#include "pattern.h"
#include "tap.h"

#define HDR	  0x1000ull
#define PAGESZ	  4096ull
#define DIRECT	  0xffff888000000000ull
#define TEXT_VA	  0xffffffff81000000ull
#define TEXT_PA	  0x1000000ull
#define TEXT_SIZE (1ull << 20)
#define RAM_SIZE  (32ull << 20)

/* A live source: every page of memory a read returns starts with a new
 * number (the headers stay as they are). */
static uint64_t reads;

static ssize_t live_pread(void *ctx, int fd, void *buf, size_t len,
			  uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);
	unsigned char *p = buf;

	(void)ctx;
	for (uint64_t at = 0; n > 0 && at < (uint64_t)n;) {
		uint64_t page_end = (off + at) / PAGESZ * PAGESZ + PAGESZ;
		uint64_t stamp = ++reads;

		if (off + at >= HDR && (off + at) % PAGESZ == 0 &&
		    (uint64_t)n - at >= 8)
			memcpy(p + at, &stamp, 8);
		at = page_end - off;
	}
	return n;
}

static void make_core(const char *path)
{
	static unsigned char hdr[HDR];
	static const char vi[] = "OSRELEASE=6.12.0-test\nPAGESIZE=4096\n"
				 "NUMBER(phys_base)=0\nKERNELOFFSET=0\n"
				 "SYMBOL(_stext)=ffffffff81000000\n"
				 "NUMBER(page_offset_base)=ffff888000000000\n";
	Elf64_Phdr *ph = kc_elfcore_header(hdr, 3);
	unsigned char *ram = malloc(RAM_SIZE);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (!ram || fd < 0)
		tap_skip_all("cannot write the test core");
	ph[0].p_filesz = kc_elfcore_vmcoreinfo(hdr + 0x200, vi, sizeof(vi) - 1);
	/* As kcore: the image first, RAM after; both read the same memory,
	 * here two equal copies in the file. */
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W | PF_X,
			      .p_offset = HDR,
			      .p_vaddr = TEXT_VA,
			      .p_paddr = TEXT_PA,
			      .p_filesz = TEXT_SIZE,
			      .p_memsz = TEXT_SIZE,
			      .p_align = PAGESZ };
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W | PF_X,
			      .p_offset = HDR + TEXT_SIZE,
			      .p_vaddr = DIRECT,
			      .p_paddr = 0,
			      .p_filesz = RAM_SIZE,
			      .p_memsz = RAM_SIZE,
			      .p_align = PAGESZ };
	kc_pattern_fill(ram, DIRECT, RAM_SIZE, 5);
	if (write(fd, hdr, sizeof(hdr)) != sizeof(hdr) ||
	    write(fd, ram + TEXT_PA, TEXT_SIZE) != (ssize_t)TEXT_SIZE ||
	    write(fd, ram, RAM_SIZE) != (ssize_t)RAM_SIZE)
		tap_skip_all("cannot write the test core");
	close(fd);
	free(ram);
}

static enum kcore_read_order order = KCORE_READ_ORDER_DEFAULT;
static struct kcore_read_phase phase; /* the last dump's first phase */
static size_t nphases;

static struct kcore_error *dump(const char *core, const char *out,
				enum kcore_compress c)
{
	struct kcore_io_ops ops = { .pread = live_pread };
	struct kcore_open_opts oo = { .io = &ops };
	struct kcore_selection sel = { 0 };
	struct kcore_dump_opts opts = { .output = out,
					.force = true,
					.format = KCORE_FORMAT_ELF,
					.compress = c,
					.threads = 2,
					.block_size = 1u << 20,
					.read_order = order };
	struct kcore_dump_result res;
	struct kcore_source *src;
	struct kcore_plan *plan;
	struct kcore_error *err;

	err = kcore_source_open(core, &oo, &src);
	if (err)
		return err;
	err = kcore_plan_create(src, &sel, &plan);
	if (!err) {
		err = kcore_dump(src, plan, &opts, &res);
		nphases = res.nread_phases;
		if (nphases)
			phase = res.read_phases[0];
		if (!err)
			kcore_dump_result_deinit(&res);
		kcore_plan_destroy(plan);
	}
	kcore_source_destroy(src);
	return err;
}

static void check(const char *what, const char *path, bool plain)
{
	unsigned char *a = malloc(TEXT_SIZE), *b = malloc(TEXT_SIZE);
	struct kcore_verify_result vr;
	struct kcore_source *s = NULL;
	struct kcore_error *err = kcore_source_open(path, NULL, &s);

	ok(!err, "%s: opens", what);
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
		free(a);
		free(b);
		return;
	}
	err = kcore_source_read_vaddr(s, TEXT_VA, a, TEXT_SIZE);
	if (!err)
		err = kcore_source_read_vaddr(s, DIRECT + TEXT_PA, b,
					      TEXT_SIZE);
	ok(!err && !memcmp(a, b, TEXT_SIZE),
	   "%s: the image through its PT_LOAD and through RAM's is one copy",
	   what);
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
	}
	kcore_source_destroy(s);
	if (plain) {
		/* The program headers themselves: the image's p_offset is
		 * RAM's at the image's physical address. */
		int fd = open(path, O_RDONLY);
		Elf64_Phdr ph[3];
		bool shared = false;

		if (fd >= 0 && pread(fd, ph, sizeof(ph), sizeof(Elf64_Ehdr)) ==
				       (ssize_t)sizeof(ph))
			shared = ph[1].p_vaddr == DIRECT &&
				 ph[2].p_vaddr == TEXT_VA &&
				 ph[2].p_offset == ph[1].p_offset + TEXT_PA;
		if (fd >= 0)
			close(fd);
		ok(shared, "%s: the image's PT_LOAD shares RAM's file bytes",
		   what);
	}
	err = kcore_verify(path, NULL, -1, NULL, &vr);
	ok(!err && vr.match && vr.has_expected, "%s: verifies", what);
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
	} else {
		kcore_verify_result_deinit(&vr);
	}
	free(a);
	free(b);
}

/* The stamps of the dump's RAM pages [lo, hi): their smallest and
 * largest. */
static bool stamps(struct kcore_source *s, uint64_t lo, uint64_t hi,
		   uint64_t *min, uint64_t *max)
{
	*min = UINT64_MAX;
	*max = 0;
	for (uint64_t pa = lo; pa < hi; pa += PAGESZ) {
		uint64_t v;
		struct kcore_error *err =
			kcore_source_read_vaddr(s, DIRECT + pa, &v, sizeof(v));

		if (err) {
			kcore_error_destroy(err);
			return false;
		}
		*min = v < *min ? v : *min;
		*max = v > *max ? v : *max;
	}
	return true;
}

/* Which pages a dump in order o read first, and what its note says. */
static void check_order(const char *core, const char *out,
			enum kcore_read_order o)
{
	const char *name = kcore_read_order_name(o);
	struct kcore_source *s = NULL;
	struct kcore_error *err;
	uint64_t img_min, img_max, lo_min, lo_max, hi_min, hi_max;
	bool all;

	order = o;
	err = dump(core, out, KCORE_COMPRESS_NONE);
	order = KCORE_READ_ORDER_DEFAULT;
	ok(!err, "%s: dumped", name);
	if (!err)
		err = kcore_source_open(out, NULL, &s);
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
		return;
	}
	all = stamps(s, TEXT_PA, TEXT_PA + TEXT_SIZE, &img_min, &img_max) &&
	      stamps(s, 0, TEXT_PA, &lo_min, &lo_max) &&
	      stamps(s, TEXT_PA + TEXT_SIZE, RAM_SIZE, &hi_min, &hi_max);
	ok(all, "%s: the stamps read back", name);
	if (o == KCORE_READ_ORDER_VOLATILE_FIRST) {
		ok(all && img_max < lo_min && img_max < hi_min,
		   "%s: every page of the image was read before the rest "
		   "(image %" PRIu64 "-%" PRIu64 ", RAM from %" PRIu64 ")",
		   name, img_min, img_max, lo_min < hi_min ? lo_min : hi_min);
		ok(nphases == 1 && !strcmp(phase.what, "image") &&
			   phase.segment == 0 && phase.offset == TEXT_PA &&
			   phase.length == TEXT_SIZE &&
			   phase.bytes == TEXT_SIZE,
		   "%s: one phase, the image in RAM's segment at its physical "
		   "address",
		   name);
	} else {
		ok(all && lo_max < img_min && img_max < hi_min,
		   "%s: RAM below the image, the image, RAM above it", name);
		ok(nphases == 0, "%s: no phase read first", name);
	}
	/* The note: the order and its phase. */
	static const char want[] = "what=image segment=0 "
				   "offset=0x0000000001000000 "
				   "length=0x0000000000100000 start_us=";
	bool noted = false;

	for (size_t i = 0; i < kcore_source_nnotes(s); i++) {
		const struct kcore_note *n = kcore_source_note(s, i);
		struct kcore_metadata md;
		const char *v, *p;

		if (strcmp(n->name, "KCOREDUMP") != 0 ||
		    kcore_note_metadata(s, n, &md))
			continue;
		v = kcore_metadata_get(&md, "read_order");
		p = kcore_metadata_get(&md, "read_phase");
		noted = v && !strcmp(v, name) &&
			(o == KCORE_READ_ORDER_VOLATILE_FIRST
				 ? p && !strncmp(p, want, strlen(want))
				 : !p);
		kcore_metadata_deinit(&md);
	}
	ok(noted, "%s: the note says read_order=%s and its phases", name, name);
	kcore_source_destroy(s);
	check(name, out, true);
}

int main(void)
{
	char dir[] = "/tmp/t-onecopy.XXXXXX", core[64], out[64], zst[64];
	char piped[64];
	struct kcore_error *err;

	if (!mkdtemp(dir))
		tap_skip_all("no temp dir");
	snprintf(core, sizeof(core), "%s/kcore", dir);
	snprintf(out, sizeof(out), "%s/ram.elf", dir);
	snprintf(zst, sizeof(zst), "%s/ram.elf.zst", dir);
	snprintf(piped, sizeof(piped), "%s/piped.elf", dir);
	make_core(core);

	err = dump(core, out, KCORE_COMPRESS_NONE);
	ok(!err, "sparse ELF: dumped");
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		kcore_error_destroy(err);
	} else
		check("sparse ELF", out, true);

	err = dump(core, zst, KCORE_COMPRESS_ZSTD);
	ok(!err, ".zst ELF: dumped");
	if (err)
		kcore_error_destroy(err);
	else
		check(".zst ELF", zst, false);

	/* A pipe: the stream layer's in-order writes, into a file; in both
	 * orders (volatile-first keeps what it read first in memory). */
	for (int k = 0; k < 2; k++) {
		int fds[2], saved, fd;
		pid_t pid;

		fflush(stdout);
		if (pipe(fds))
			tap_skip_all("no pipe");
		pid = fork();
		if (pid == 0) {
			char buf[65536];
			ssize_t n;

			close(fds[1]);
			fd = open(piped, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			while (fd >= 0 &&
			       (n = read(fds[0], buf, sizeof(buf))) > 0)
				if (write(fd, buf, (size_t)n) != n)
					_exit(1);
			_exit(fd < 0);
		}
		close(fds[0]);
		saved = dup(STDOUT_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[1]);
		order = k ? KCORE_READ_ORDER_VOLATILE_FIRST
			  : KCORE_READ_ORDER_ADDRESS;
		err = dump(core, "-", KCORE_COMPRESS_NONE);
		order = KCORE_READ_ORDER_DEFAULT;
		dup2(saved, STDOUT_FILENO);
		close(saved);
		waitpid(pid, NULL, 0);
		ok(!err && nphases == (size_t)k, "piped ELF, %s: dumped",
		   kcore_read_order_name(k ? KCORE_READ_ORDER_VOLATILE_FIRST
					   : KCORE_READ_ORDER_ADDRESS));
		if (err)
			kcore_error_destroy(err);
		else
			check(k ? "piped ELF, volatile-first" : "piped ELF",
			      piped, true);
	}

	/* A file source is read in address order unless asked. */
	order = KCORE_READ_ORDER_VOLATILE_FIRST;
	err = dump(core, zst, KCORE_COMPRESS_ZSTD);
	order = KCORE_READ_ORDER_DEFAULT;
	ok(!err && nphases == 1, "volatile-first .zst: dumped, image first");
	if (err)
		kcore_error_destroy(err);
	else
		check("volatile-first .zst", zst, false);
	check_order(core, out, KCORE_READ_ORDER_VOLATILE_FIRST);
	check_order(core, out, KCORE_READ_ORDER_ADDRESS);
	err = dump(core, out, KCORE_COMPRESS_NONE);
	ok(!err && nphases == 0, "a file source: address order by default");
	if (err)
		kcore_error_destroy(err);

	unlink(core);
	unlink(out);
	unlink(zst);
	unlink(piped);
	rmdir(dir);
	return tap_done();
}
