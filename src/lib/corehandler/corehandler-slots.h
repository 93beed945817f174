/* SPDX-License-Identifier: MIT */
/*
 * Internal to the core handler: the handler slots and the store lock
 * (corehandler-slots.c), under which the limits (corehandler-vacuum.c)
 * decide.  ch_vacuum_enter() and ch_vacuum_leave() (corehandler-vacuum.h)
 * take and drop a slot and open the lock file.
 */
#ifndef KCOREDUMP_COREHANDLER_SLOTS_H
#define KCOREDUMP_COREHANDLER_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

#include "corehandler-internal.h"

/* The store lock, waited for at most 10 s; false if not taken. */
bool ch_store_lock(struct ch *ch);
void ch_store_unlock(struct ch *ch);
/* Our slot file says what we reserved and wrote. */
void ch_slot_write(struct ch *ch);
/* What the other running handlers have reserved, and of that, what they
 * have not written yet; a slot counts only while its handler holds it. */
void ch_slots_others(struct ch *ch, uint64_t *ret_reserved,
		     uint64_t *ret_pending);

#endif
