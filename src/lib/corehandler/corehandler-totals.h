/* SPDX-License-Identifier: MIT */
/*
 * The store's totals, kept in its lock file (not installed).
 *
 * The lock file (.kcoredump.lock) holds little-endian u64s, written
 * under the lock: STATE_MAGIC, bytes, cores, generation, the time of
 * the last full look, the number of directories and of uids, then per
 * directory (uid or -1 for the top, inode, mtime in ns), per uid (uid,
 * cores, bytes), and a checksum.  Every handler that publishes or
 * removes a core updates them and the directories' mtimes it leaves;
 * a directory whose mtime moved since (a file made, renamed or removed
 * by someone else) makes the totals stale, and the next handler looks
 * at the whole store again.  So does a file of the store changed in
 * place, at the latest CH_TOTALS_RECHECK_S later.
 *
 * Nothing here takes the lock: the callers hold it (corehandler-vacuum.c).
 */
#ifndef KCOREDUMP_COREHANDLER_TOTALS_H
#define KCOREDUMP_COREHANDLER_TOTALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coredir.h"

/* uids the lock file keeps totals for (more: every handler looks). */
#define CH_TOTALS_MAX_UIDS 1024
/* Look at the whole store again after this long, whatever the totals. */
#define CH_TOTALS_RECHECK_S 3600

struct ch_totals_uid {
	int64_t uid;
	uint64_t cores, bytes;
};

struct ch_totals {
	uint64_t bytes, cores, gen, looked;
	struct coredir_stamp *dirs;
	size_t ndirs;
	struct ch_totals_uid *uids;
	size_t nuids;
	bool valid;    /* current: the store is as they say */
	bool too_many; /* more uids than the lock file holds */
};

void ch_totals_free(struct ch_totals *t);
/* The totals as the lock file says (t->valid not yet decided); false
 * when it holds none (made by an older version, or torn), t->gen
 * still as read. */
bool ch_totals_load(int lock_fd, struct ch_totals *t);
/* Whether the store's directories (in dir_fd) are as the totals left
 * them, and the last full look is recent. */
bool ch_totals_current(int dir_fd, const struct ch_totals *t);
/* Write them back, with the directories' mtimes after our changes, and
 * the generation moved on. */
void ch_totals_store(int lock_fd, int dir_fd, struct ch_totals *t);
/* uid's entry (made with add), or NULL. */
struct ch_totals_uid *ch_totals_uid(struct ch_totals *t, int64_t uid, bool add);
/* A core of uid (cores 1) or other bytes (cores 0) added or removed. */
void ch_totals_add(struct ch_totals *t, int64_t uid, uint64_t cores,
		   uint64_t bytes, bool remove);
/* The totals of a full look (its entries not removed). */
bool ch_totals_from_scan(const struct coredir_scan *sc, struct ch_totals *t);

#endif
