// SPDX-License-Identifier: MIT
/*
 * kpread: an independent, minimal reader of /proc/kcore for the VM tests.
 * It parses the ELF program headers itself (no libelf, no libkcore) so the
 * tests can compare kcoredump's view with plain pread()s.
 *
 *   kpread [--file F] --phdrs                one line per program header
 *   kpread [--file F] --vaddr A --len N      raw bytes at vaddr A to stdout
 *   kpread [--file F] --bench [--max-mib M]  1 MiB pread loop over the RAM
 *                                            segments, prints throughput
 *
 * Built static so it runs in the initramfs without libraries.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* x86_64 __START_KERNEL_map: kernel text lives above it (KASLR moves text
 * within that area, never below it), the direct map below. */
#define KERNEL_MAP_START 0xffffffff80000000ULL

static Elf64_Phdr *phdrs;
static size_t nphdrs;

static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("kpread: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("pread at offset 0x%" PRIx64 ": %s", off,
			    strerror(errno));
		if (n == 0) /* past EOF: the rest reads as zeros */
			break;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	memset(p, 0, len);
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static void load_phdrs(int fd)
{
	Elf64_Ehdr eh;

	pread_all(fd, &eh, sizeof(eh), 0);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		die("not an ELF64 file");
	if (eh.e_phentsize != sizeof(Elf64_Phdr))
		die("unexpected e_phentsize %u", eh.e_phentsize);
	nphdrs = eh.e_phnum;
	if (nphdrs == PN_XNUM) {
		Elf64_Shdr sh;

		if (!eh.e_shoff)
			die("PN_XNUM without section header 0");
		pread_all(fd, &sh, sizeof(sh), eh.e_shoff);
		nphdrs = sh.sh_info;
	}
	phdrs = calloc(nphdrs ? nphdrs : 1, sizeof(*phdrs));
	if (!phdrs)
		die("out of memory");
	pread_all(fd, phdrs, nphdrs * sizeof(*phdrs), eh.e_phoff);
}

static const char *ptype(uint32_t t)
{
	switch (t) {
	case PT_LOAD:
		return "LOAD";
	case PT_NOTE:
		return "NOTE";
	case PT_INTERP:
		return "INTERP";
	case PT_DYNAMIC:
		return "DYNAMIC";
	default:
		return "OTHER";
	}
}

/* arm64: the linear map lies below the kernel's upper half, which holds
 * the modules, vmalloc (with the kernel image) and vmemmap:
 * _PAGE_END(VA_BITS_MIN) = -(1 << 47) for 48- and 52-bit VAs alike. */
#define ARM64_PAGE_END 0xffff800000000000ull

static bool is_ram(const Elf64_Phdr *ph)
{
#if defined(__aarch64__)
	const uint64_t ram_end = ARM64_PAGE_END;
#else
	const uint64_t ram_end = KERNEL_MAP_START;
#endif
	return ph->p_type == PT_LOAD && ph->p_paddr != (Elf64_Addr)-1 &&
	       ph->p_paddr != 0 && ph->p_vaddr < ram_end;
}

static void cmd_phdrs(void)
{
	/* index type vaddr paddr offset filesz memsz ram */
	for (size_t i = 0; i < nphdrs; i++) {
		const Elf64_Phdr *ph = &phdrs[i];

		printf("%zu %s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
		       " %" PRIu64 " %" PRIu64 " %d\n",
		       i, ptype(ph->p_type), ph->p_vaddr, ph->p_paddr,
		       ph->p_offset, ph->p_filesz, ph->p_memsz, is_ram(ph));
	}
}

static void cmd_read(int fd, uint64_t vaddr, uint64_t len)
{
	static char buf[1 << 20];

	for (size_t i = 0; i < nphdrs; i++) {
		const Elf64_Phdr *ph = &phdrs[i];

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr ||
		    vaddr - ph->p_vaddr >= ph->p_memsz)
			continue;
		if (len > ph->p_memsz - (vaddr - ph->p_vaddr))
			die("range 0x%" PRIx64 "+%" PRIu64
			    " crosses the end of segment %zu",
			    vaddr, len, i);
		uint64_t rel = vaddr - ph->p_vaddr;

		while (len) {
			size_t n =
				len < sizeof(buf) ? (size_t)len : sizeof(buf);

			if (rel >= ph->p_filesz)
				memset(buf, 0, n);
			else if (rel + n > ph->p_filesz) {
				memset(buf, 0, n);
				pread_all(fd, buf, (size_t)(ph->p_filesz - rel),
					  ph->p_offset + rel);
			} else
				pread_all(fd, buf, n, ph->p_offset + rel);
			write_all(STDOUT_FILENO, buf, n);
			rel += n;
			len -= n;
		}
		return;
	}
	die("address 0x%" PRIx64 " is in no PT_LOAD segment", vaddr);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void cmd_bench(int fd, uint64_t max_bytes)
{
	const size_t chunk = 1 << 20;
	char *buf = aligned_alloc(4096, chunk);
	uint64_t total = 0;
	double t0 = now();

	if (!buf)
		die("out of memory");
	for (size_t i = 0; i < nphdrs && total < max_bytes; i++) {
		const Elf64_Phdr *ph = &phdrs[i];
		uint64_t done = 0;

		if (!is_ram(ph))
			continue;
		while (done < ph->p_filesz && total < max_bytes) {
			uint64_t n = ph->p_filesz - done;

			if (n > chunk)
				n = chunk;
			pread_all(fd, buf, (size_t)n, ph->p_offset + done);
			done += n;
			total += n;
		}
	}
	double secs = now() - t0;

	printf("bytes %" PRIu64 "\nseconds %.3f\nmbps %.1f\n", total, secs,
	       secs > 0 ? (double)total / 1e6 / secs : 0.0);
	free(buf);
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s)
		die("bad number '%s'", s);
	return v;
}

int main(int argc, char **argv)
{
	const char *file = "/proc/kcore";
	enum { NONE, PHDRS, READ, BENCH } mode = NONE;
	uint64_t vaddr = 0, len = 0, max_bytes = UINT64_MAX;
	bool have_vaddr = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--file") && i + 1 < argc)
			file = argv[++i];
		else if (!strcmp(a, "--phdrs"))
			mode = PHDRS;
		else if (!strcmp(a, "--bench"))
			mode = BENCH;
		else if (!strcmp(a, "--vaddr") && i + 1 < argc) {
			vaddr = num(argv[++i]);
			have_vaddr = true;
			mode = READ;
		} else if (!strcmp(a, "--len") && i + 1 < argc)
			len = num(argv[++i]);
		else if (!strcmp(a, "--max-mib") && i + 1 < argc)
			max_bytes = num(argv[++i]) << 20;
		else
			die("usage: kpread [--file F] (--phdrs | --vaddr A "
			    "--len N | --bench [--max-mib M])");
	}
	if (mode == NONE || (mode == READ && !have_vaddr))
		die("nothing to do (see --phdrs, --vaddr, --bench)");

	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("'%s': %s", file, strerror(errno));
	load_phdrs(fd);
	switch (mode) {
	case PHDRS:
		cmd_phdrs();
		break;
	case READ:
		cmd_read(fd, vaddr, len);
		break;
	case BENCH:
		cmd_bench(fd, max_bytes);
		break;
	default:
		break;
	}
	if (fflush(stdout))
		die("write: %s", strerror(errno));
	return 0;
}
