/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the counting the smear check (smear.c) and
 * verify --live (smear-live.c) share, into a struct kcore_smear: pages by
 * class and by the gap since their read, and the changed pages joined
 * into runs.  Defined in smear.c.
 */
#ifndef KCOREDUMP_SMEAR_TALLY_H
#define KCOREDUMP_SMEAR_TALLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/dump.h"

/* The last changed page (a run goes on from it) and the room for runs. */
struct smear_tally {
	size_t last_seg;
	uint64_t last_end;
	bool any_change;
	size_t changes_cap;
};

/* The bucket of kcore_smear_gap_limits a gap in seconds falls in. */
unsigned kcore_smear_gap_bucket(double gap);
/* One page compared: of class cls, gap bucket gap. */
void kcore_smear_count(struct kcore_smear *ret, enum kcore_segment_class cls,
		       unsigned gap, bool changed);
/* A changed page of segment si (at vaddr, offset off in it): joined to
 * the run before it when it follows it; a run that finds no memory is
 * counted (nchanges) but not listed. */
void kcore_smear_note_change(struct smear_tally *t, struct kcore_smear *ret,
			     size_t si, uint64_t vaddr, uint64_t off,
			     uint64_t len, double gap);
/* CLOCK_MONOTONIC in ns: the check's seconds. */
uint64_t kcore_smear_mono_ns(void);

#endif
