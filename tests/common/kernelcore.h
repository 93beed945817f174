/* SPDX-License-Identifier: MIT */
/*
 * The kernel-like test core of t-kdump and t-incomplete: a VMCOREINFO note
 * and one 8 MiB direct-map RAM segment of pattern data (seed 9) with one
 * zero page; with compressible set, every fourth page is text.  The
 * constants say where its pages are (the tests make BAD_LEN bytes at
 * BAD_OFFSET of the segment unreadable).
 */
#ifndef KCOREDUMP_TESTS_KERNELCORE_H
#define KCOREDUMP_TESTS_KERNELCORE_H

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfcore.h"
#include "pattern.h"
#include "tap.h"

#define DATA_OFF   0x1000ull
#define SEG_SIZE   (8ull << 20)
#define PAGE	   4096ull
#define PAGE_OFF   0xffff888000000000ull
#define PADDR	   0x100000ull
#define ZERO_PAGE  0x5000ull /* offset in the segment of a zero page */
#define BAD_OFFSET 0x201000ull
#define BAD_LEN	   0x3000ull

static inline void kc_kernel_core(const char *path, bool compressible)
{
	static unsigned char hdr[DATA_OFF];
	static const char vi[] = "OSRELEASE=6.12.0-test\nPAGESIZE=4096\n"
				 "NUMBER(phys_base)=0\n";
	Elf64_Phdr *ph = kc_elfcore_header(hdr, 2);
	unsigned char *buf = malloc(SEG_SIZE);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (!buf || fd < 0)
		tap_skip_all("cannot write the test core");
	ph[0].p_filesz = kc_elfcore_vmcoreinfo(hdr + 0x200, vi, sizeof(vi) - 1);
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W | PF_X,
			      .p_offset = DATA_OFF,
			      .p_vaddr = PAGE_OFF + PADDR,
			      .p_paddr = PADDR,
			      .p_filesz = SEG_SIZE,
			      .p_memsz = SEG_SIZE };
	kc_pattern_fill(buf, PAGE_OFF + PADDR, SEG_SIZE, 9);
	for (uint64_t p = PAGE; compressible && p < SEG_SIZE; p += 4 * PAGE)
		for (uint64_t i = 0; i < PAGE; i += 64)
			snprintf((char *)buf + p + i, 64,
				 "page 0x%08llx line %04llu: compressible",
				 (unsigned long long)p, (unsigned long long)i);
	memset(buf + ZERO_PAGE, 0, PAGE);
	if (write(fd, hdr, sizeof(hdr)) != sizeof(hdr) ||
	    write(fd, buf, SEG_SIZE) != (ssize_t)SEG_SIZE)
		tap_skip_all("cannot write the test core");
	close(fd);
	free(buf);
}

#endif
