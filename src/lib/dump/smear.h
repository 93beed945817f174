/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the smear check (smear.c).  While the dump reads,
 * each block's pages are hashed (64 bits a page, by the workers, of the
 * bytes as read); after the read, the blocks are read again and each page
 * whose hash differs has changed in between.
 */
#ifndef KCOREDUMP_SMEAR_H
#define KCOREDUMP_SMEAR_H

#include <signal.h>

#include "extent.h"
#include "write.h"

struct kcore_smear_state;

/* For a dump of plan from src, fraction of the blocks (0 < f <= 1), the
 * ring's slots. */
struct kcore_error *kcore_smear_start(struct kcore_source *src,
				      const struct kcore_plan *plan,
				      double fraction, uint64_t page,
				      size_t slots,
				      struct kcore_smear_state **ret);
/* The reading thread: ring slot slot holds segment seg's bytes [off,
 * off + len) (a shared segment's copy: not checked), whose reads began at
 * t (kcore_read_times_now(): the earliest, when a read phase of the
 * volatile-first order held some of them). */
void kcore_smear_block(struct kcore_smear_state *s, size_t slot, size_t seg,
		       uint64_t off, uint64_t len, bool shared, uint64_t t);
/* A worker: block b as read (holes and unreadable pages are skipped). */
void kcore_smear_hash(struct kcore_smear_state *s, const struct kcore_block *b);
/* After the reads: read the blocks again, into *ret. */
struct kcore_error *kcore_smear_check(struct kcore_smear_state *s,
				      volatile sig_atomic_t *cancel,
				      struct kcore_smear *ret);
void kcore_smear_destroy(struct kcore_smear_state *s);

#endif
