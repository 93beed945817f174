/* SPDX-License-Identifier: MIT */
/*
 * The store's limits (not installed): how much of a core the limits let
 * it keep, and the older cores removed to make room, as systemd-coredump's
 * vacuum does (the oldest core of the uid with the most cores first).
 *
 *   --max-size            bytes one core may take on disk
 *   --max-use             bytes the whole store may take
 *   --keep-free           bytes of the file system to leave free
 *   --max-cores           cores the store may hold
 *   --max-cores-per-user  cores of one uid it may hold
 *
 * Handlers run at once, one per crash.  They share the directory through
 * two kinds of small files of their own in it:
 *
 *   .kcoredump.slot.N  one per handler allowed to store at once; a
 *                      handler holds one with flock(LOCK_EX) while it
 *                      runs and writes into it what it has reserved of
 *                      the limits and written so far
 *   .kcoredump.lock    flock()ed around every decision about the limits:
 *                      reserving, removing older cores, publishing; it
 *                      holds the store's totals (corehandler-totals.h),
 *                      so that storing a core does not cost more with
 *                      more cores stored
 *
 * A core being written is an O_TMPFILE inode (or a locked temporary
 * file), invisible to the others and to the vacuum, so its reservation
 * is what they count for it, and it is never the one removed.  Data is
 * written only inside what was reserved: the limits hold however many
 * handlers run.  What the limits count comes from fstat() of the files
 * and from the lock file the handlers write, never from a file a user
 * could edit; only regular files the scan saw are removed (coredir.h).
 */
#ifndef KCOREDUMP_COREHANDLER_VACUUM_H
#define KCOREDUMP_COREHANDLER_VACUUM_H

#include "corehandler-internal.h"
#include "corehandler-totals.h"

/* Room kept for the metadata when the file system fills up. */
#define CH_NO_SPACE_ROOM (64u << 10)

/* Take a handler slot; false (with *ret_why) when all are taken. */
bool ch_vacuum_enter(struct ch *ch, const char **ret_why);
void ch_vacuum_leave(struct ch *ch);

/*
 * How many of len bytes may be stored now (a multiple of CH_PAGE, or
 * len); sets *ret_reason when fewer.  Older cores are removed to make
 * room as the limits say.
 */
uint64_t ch_vacuum_allowance(struct ch *ch, uint64_t len,
			     enum kcore_ch_reason *ret_reason);

/* Publishing a core under the store lock, between begin and end. */
struct ch_vacuum_publish {
	struct ch_totals t;
	bool locked;
};
/* With limits: the lock, and room for bytes on disk (the core and its
 * metadata, beyond what was reserved) and for one more core. */
void ch_vacuum_publish_begin(struct ch *ch, uint64_t bytes,
			     struct ch_vacuum_publish *p);
/* The totals with the core (published) or without, the reservation
 * dropped, the lock let go. */
void ch_vacuum_publish_end(struct ch *ch, struct ch_vacuum_publish *p,
			   bool published, uint64_t bytes);

#endif
