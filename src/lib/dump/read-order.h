/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the read phases of the volatile-first order
 * (read-order.c), as the plan's segment bytes: the kernel image, then the
 * page-table pages of the kernel's address space, each in the plan
 * segments that hold them (a shared segment's bytes in the one it shares).
 */
#ifndef KCOREDUMP_READ_ORDER_H
#define KCOREDUMP_READ_ORDER_H

#include "kcoredump/dump.h"

/* The most read phases of page tables (nearby tables are read as one). */
#define KCORE_READ_TABLE_PHASES 32

/* What to read first of plan, at most budget bytes, page-aligned: *ret
 * (malloc()ed, *ret_n; none: NULL, 0).  Only out of memory fails. */
struct kcore_error *kcore_read_phases(struct kcore_source *src,
				      const struct kcore_plan *plan,
				      uint64_t page, uint64_t budget,
				      struct kcore_read_phase **ret,
				      size_t *ret_n);

#endif
