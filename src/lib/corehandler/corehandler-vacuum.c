// SPDX-License-Identifier: MIT
/*
 * The store's limits: reserving room as the copy goes, and removing older
 * cores to make it (the design is in corehandler-vacuum.h; the handler
 * slots and the store lock are corehandler-slots.c's).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "coredir.h"
#include "corehandler-slots.h"
#include "corehandler-vacuum.h"

#define PAGE CH_PAGE
/* Reserve up to this much more than asked at a time. */
#define RESERVE_STEP (16u << 20)
/* Room kept for the metadata file while the core is written (its real
 * size is reserved when it is published). */
#define META_RESERVE 4096u
static uint64_t free_bytes(struct ch *ch)
{
	struct statvfs sv;

	if (fstatvfs(ch->o->dir_fd, &sv) < 0)
		return UINT64_MAX;
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* What a compressed core's frames still being compressed may take once
 * written: their uncompressed size, at most the bytes the compressor
 * can hold. */
static uint64_t inflight_bytes(const struct ch *ch)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t threads = ch->o->threads ? ch->o->threads
			   : cpus > 0	  ? (uint64_t)cpus
					  : 1;
	uint64_t inflight = (2 * threads + 2) * (4u << 20);

	return ch->zdata < inflight ? ch->zdata : inflight;
}

/*
 * The bytes this handler's core takes (or may take) now, for the limits:
 * the file's bytes and the room kept for the metadata.  A compressed
 * core's frames still being compressed count with their uncompressed
 * size, at most the bytes the compressor can hold.
 */
static uint64_t have_bytes(const struct ch *ch)
{
	uint64_t have = ch->stored;

	if (ch->os)
		have = kcore_ostream_bytes_out(ch->os) + inflight_bytes(ch);
	return have + META_RESERVE;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Whether the directories are still as when the look began. */
static bool scan_current(struct ch *ch, const struct coredir_scan *sc)
{
	for (size_t i = 0; i < sc->ndfds; i++) {
		struct coredir_stamp st;

		if (!kcore_coredir_stamp(ch->o->dir_fd, sc->stamps[i].uid,
					 &st) ||
		    st.ino != sc->stamps[i].ino ||
		    st.mtime_ns != sc->stamps[i].mtime_ns)
			return false;
	}
	return true;
}

/* A full look at the store, kept in ch->store.scan; false if it failed. */
static bool look(struct ch *ch, bool locked)
{
	struct ch_store *s = &ch->store;
	struct kcore_error *err;

	if (s->scan)
		kcore_coredir_scan_free(s->scan);
	else
		s->scan = malloc(sizeof(*s->scan));
	if (!s->scan)
		return false;
	err = kcore_coredir_scan(ch->o->dir_fd, s->scan);
	if (err) {
		char *d = kcore_error_describe(err);

		ch_log(ch, KCORE_CH_LOG_WARNING,
		       "cannot look at the store for the limits: %s",
		       d ? d : "out of memory");
		free(d);
		kcore_error_destroy(err);
		free(s->scan);
		s->scan = NULL;
		return false;
	}
	/* Counted by the tests: with current totals there is none. */
	ch_log(ch, KCORE_CH_LOG_INFO,
	       "looked at the whole store (%zu entries, %s the lock)",
	       s->scan->n, locked ? "under" : "outside");
	return true;
}

/* What the limits say of need more bytes (with core: and one more core)
 * now: bit 0 max-use, 1 keep-free, 2 max-cores, 3 max-cores-per-user. */
static unsigned over(struct ch *ch, struct ch_totals *t, uint64_t need,
		     bool core)
{
	const struct kcore_ch_opts *o = ch->o;
	struct ch_store *s = &ch->store;
	uint64_t res_others, pend_others, have = have_bytes(ch), pend, avail;
	struct ch_totals_uid *u;
	unsigned r = 0;

	ch_slots_others(ch, &res_others, &pend_others);
	pend = pend_others + sub_sat(s->reserved, have);
	if (o->max_use &&
	    t->bytes + res_others + s->reserved + need > o->max_use)
		r |= 1;
	if (o->keep_free) {
		avail = free_bytes(ch);
		if (avail == UINT64_MAX || avail < o->keep_free + pend + need)
			r |= 2;
	}
	if (core && o->max_cores && t->cores + 1 > o->max_cores)
		r |= 4;
	u = ch_totals_uid(t, o->crash.uid, false);
	if (core && o->max_cores_per_user && u &&
	    u->cores + 1 > o->max_cores_per_user)
		r |= 8;
	return r;
}

/*
 * Under the lock: room for need more bytes (core: and for one more
 * core), older cores removed while it would not fit; the bytes that fit
 * (up to need; step when that fits without removing anything).  With
 * current totals in the lock file and room, nothing is looked at: the
 * cost does not grow with the cores stored.  Otherwise the store is
 * looked at in full outside the lock, and that look is used under it
 * when nothing changed meanwhile (else, when the totals are current
 * again, only as the list of what to remove: each file is checked
 * before it goes).  The lock may be dropped on the way: *ret_locked
 * false when it could not be taken back.  *t: the totals (t->valid when
 * current) for the caller to update.
 */
static uint64_t make_room(struct ch *ch, uint64_t need, uint64_t step,
			  bool core, struct ch_totals *t,
			  enum kcore_ch_reason *ret_reason, bool *ret_locked)
{
	const struct kcore_ch_opts *o = ch->o;
	struct ch_store *s = &ch->store;
	uint64_t fit = need;
	struct coredir_entry *v;
	bool fresh = false;
	unsigned r;

	*ret_reason = KCORE_CH_COMPLETE;
	*ret_locked = true;
	memset(t, 0, sizeof(*t));
	for (int tries = 0;; tries++) {
		uint64_t gen;

		ch_totals_free(t);
		if (ch_totals_load(ch->store.lock_fd, t) &&
		    ch_totals_current(ch->o->dir_fd, t)) {
			t->valid = true;
			if (step > need && !over(ch, t, step, core))
				return step;
			if (!over(ch, t, need, core))
				return need;
			if (s->scan)
				break;
		}
		if (s->scan && t->gen == s->scan_gen &&
		    scan_current(ch, s->scan)) {
			ch_totals_from_scan(s->scan, t);
			break;
		}
		gen = t->gen;
		if (tries >= 2) {
			/* The others keep changing it: under the lock. */
			if (!look(ch, true))
				goto failed;
			s->scan_gen = gen;
			ch_totals_from_scan(s->scan, t);
			if (!scan_current(ch, s->scan))
				t->looked = 0; /* changed meanwhile */
			break;
		}
		ch_store_unlock(ch);
		if (!look(ch, false)) {
			*ret_locked = ch_store_lock(ch);
			goto failed;
		}
		s->scan_gen = gen;
		if (!ch_store_lock(ch)) {
			*ret_locked = false;
			*ret_reason = KCORE_CH_LOCK_TIMEOUT;
			ch_log(ch, KCORE_CH_LOG_WARNING,
			       "the store lock stayed taken; storing no more");
			ch_totals_free(t);
			return 0;
		}
	}
	/* Nobody writes orphans any more: they only take room. */
	while ((v = kcore_coredir_next_victim(s->scan)) &&
	       v->kind <= COREDIR_ORPHAN_CORE) {
		uint64_t b = kcore_coredir_remove(s->scan, v);

		if (!v->existed)
			continue;
		ch_totals_add(t, -1, 0, b, true);
		ch_log(ch, KCORE_CH_LOG_NOTICE,
		       "removed the orphaned %s '%s' (%" PRIu64 " bytes)",
		       v->kind == COREDIR_ORPHAN_TMP ? "temporary file"
						     : "core without metadata",
		       v->core, b);
	}
	while ((r = over(ch, t, need, core))) {
		uint64_t b;

		v = r & 8 ? kcore_coredir_next_victim_uid(s->scan, o->crash.uid)
			  : NULL;
		if (!v && (r & 7))
			v = kcore_coredir_next_victim(s->scan);
		/* The list came from a look outside the lock (or an earlier
		 * one): cores published since are not in it.  Once, look
		 * again, under the lock, before settling for less. */
		if (!v && !fresh) {
			fresh = true;
			if (look(ch, true) && ch_totals_from_scan(s->scan, t))
				continue;
			if (!s->scan)
				goto failed;
		}
		if (!v) {
			/* Nothing more to remove: what fits. */
			uint64_t a = UINT64_MAX, c = UINT64_MAX;
			uint64_t res_others, pend_others, avail, pend;

			ch_slots_others(ch, &res_others, &pend_others);
			pend = pend_others +
			       sub_sat(s->reserved, have_bytes(ch));
			avail = free_bytes(ch);
			if (r & 1)
				a = sub_sat(o->max_use, t->bytes + res_others +
								s->reserved);
			if (r & 2)
				c = avail != UINT64_MAX
					    ? sub_sat(avail,
						      o->keep_free + pend)
					    : 0;
			if (r & 3) {
				fit = a < c ? a : c;
				if (fit > need)
					fit = need;
				*ret_reason = a <= c ? KCORE_CH_MAX_USE
						     : KCORE_CH_KEEP_FREE;
			} else {
				ch_log(ch, KCORE_CH_LOG_WARNING,
				       "no older core to remove for %s",
				       r & 8 ? "--max-cores-per-user"
					     : "--max-cores");
			}
			break;
		}
		b = kcore_coredir_remove(s->scan, v);
		if (!v->existed)
			continue; /* gone since the look */
		ch_totals_add(t, v->uid, v->kind >= COREDIR_FOREIGN, b, true);
		ch_log(ch, KCORE_CH_LOG_NOTICE,
		       "removed the older core '%s' (%" PRIu64 " bytes) for %s",
		       v->core ? v->core : v->meta, b,
		       r & 8   ? "--max-cores-per-user"
		       : r & 1 ? "--max-use"
		       : r & 2 ? "--keep-free"
			       : "--max-cores");
		ch->res->removed++;
	}
	ch_totals_store(ch->store.lock_fd, ch->o->dir_fd, t);
	return fit;
failed:
	ch_totals_free(t);
	*ret_reason = !*ret_locked ? KCORE_CH_LOCK_TIMEOUT
		      : o->max_use ? KCORE_CH_MAX_USE
				   : KCORE_CH_KEEP_FREE;
	return 0;
}

/*
 * Reserve room for want more bytes beyond have_bytes(); false with
 * *ret_reason when the limits refuse some of it (*ret_room is what may
 * still be written).
 */
static bool reserve(struct ch *ch, uint64_t want, uint64_t *ret_room,
		    enum kcore_ch_reason *ret_reason)
{
	struct ch_store *s = &ch->store;
	uint64_t have = have_bytes(ch), need, fit, step;
	enum kcore_ch_reason why = KCORE_CH_COMPLETE;

	*ret_reason = KCORE_CH_COMPLETE;
	if (have + want <= s->reserved) {
		*ret_room = s->reserved - have;
		return true;
	}
	if (s->limits_full)
		goto refused;
	/* Whole pages; more at a time for big cores (an eighth of what is
	 * stored, at most RESERVE_STEP) while there is room: fewer lock
	 * round trips, at most that much reserved and not used. */
	need = have + want - s->reserved;
	need = (need + PAGE - 1) / PAGE * PAGE;
	step = have / 8 < RESERVE_STEP ? have / 8 : RESERVE_STEP;
	step = step > need ? (step + PAGE - 1) / PAGE * PAGE : need;
	if (!ch_store_lock(ch)) {
		ch_log(ch, KCORE_CH_LOG_WARNING,
		       "the store lock stayed taken; storing no more");
		why = KCORE_CH_LOCK_TIMEOUT;
		fit = 0;
	} else {
		struct ch_totals t;
		bool locked;

		fit = make_room(ch, need, step, false, &t, &why, &locked);
		ch_totals_free(&t);
		s->reserved += fit;
		ch_slot_write(ch);
		if (locked)
			ch_store_unlock(ch);
	}
	if (have + want <= s->reserved) {
		*ret_room = s->reserved - have;
		return true;
	}
	s->limits_full = true;
	s->full_reason = why;
refused:
	*ret_reason = s->full_reason;
	*ret_room = s->reserved > have ? s->reserved - have : 0;
	return false;
}

/*
 * A compressed stream that hits ENOSPC is dead (its frames in flight, its
 * seek table or index lost), and it cannot be cut back: without
 * --keep-free (which counts the same), the free space is watched instead,
 * and the core cut while the frames the compressor holds, the end of the
 * stream, the metadata and CH_NO_SPACE_ROOM still fit: it is then finished
 * and decodes whole.  The data bytes (of len) that may be handed to the
 * compressor now.  The free space is looked at again when half of what
 * was left has been handed over (fstatvfs() per run would be costly for
 * cores of scattered pages).
 */
static uint64_t space_left(struct ch *ch, uint64_t len)
{
	uint64_t avail, frames, end, hold, used;

	used = ch->zpos - ch->space_at;
	if (ch->space_known && used < ch->space_room / 2 &&
	    len < ch->space_room / 2 - used)
		return len;
	avail = free_bytes(ch);
	if (avail == UINT64_MAX) {
		ch->space_known = false;
		return len; /* unknown: as before, a write fails */
	}
	/* Compressed frames may be a little larger than their input; each
	 * frame and zero run costs a seek table or index entry and a hole
	 * map entry (a zero frame: ~100 bytes; frames end at zero runs). */
	frames = ch->zpos / KCORE_STREAM_DEFAULT_FRAME + 2 * ch->zruns + 4;
	end = 128 * frames + META_RESERVE + CH_HEADER_ROOM + CH_NO_SPACE_ROOM;
	hold = inflight_bytes(ch);
	hold += hold / 64;
	ch->space_known = true;
	ch->space_at = ch->zpos;
	ch->space_room = avail > end + hold ? avail - end - hold : 0;
	/* Data handed over now adds to what is held, compressed later. */
	ch->space_room -= ch->space_room / 64;
	return len < ch->space_room ? len : ch->space_room;
}

/*
 * How many of len bytes may be stored now (a multiple of PAGE, or len);
 * sets *ret_reason when fewer.  --max-size counts a .zst's compressed
 * bytes as they are written, so it is enforced a few frames late; the
 * store's limits count what the compressor holds too, and are exact.
 */
uint64_t ch_vacuum_allowance(struct ch *ch, uint64_t len,
			     enum kcore_ch_reason *ret_reason)
{
	const struct kcore_ch_opts *o = ch->o;
	uint64_t stored = ch->os ? kcore_ostream_bytes_out(ch->os) : ch->stored;
	uint64_t want = ch->os ? 0 : len; /* .zst: checked after the fact */
	uint64_t allow = len, room;
	enum kcore_ch_reason why;

	*ret_reason = KCORE_CH_COMPLETE;
	if (o->max_size && stored + want > o->max_size) {
		uint64_t left = o->max_size > stored ? o->max_size - stored : 0;

		allow = ch->os ? 0 : left;
		*ret_reason = KCORE_CH_MAX_SIZE;
	}
	if ((o->max_use || o->keep_free) && !reserve(ch, len, &room, &why) &&
	    room < allow) {
		allow = room;
		*ret_reason = why;
	}
	if (ch->os && !o->keep_free && (room = space_left(ch, len)) < allow) {
		allow = room;
		*ret_reason = KCORE_CH_NO_SPACE;
	}
	if (allow < len)
		allow -= allow % PAGE;
	else
		*ret_reason = KCORE_CH_COMPLETE;
	return allow;
}

void ch_vacuum_publish_begin(struct ch *ch, uint64_t bytes,
			     struct ch_vacuum_publish *p)
{
	const struct kcore_ch_opts *o = ch->o;
	struct ch_store *s = &ch->store;
	enum kcore_ch_reason why;
	uint64_t more, fit;

	memset(p, 0, sizeof(*p));
	if (!o->max_use && !o->keep_free && !o->max_cores &&
	    !o->max_cores_per_user)
		return;
	p->locked = ch_store_lock(ch);
	if (!p->locked)
		return;
	/* Ours counts as reserved until it is published: make room for
	 * anything beyond, and for one more core. */
	more = sub_sat(bytes, s->reserved);
	fit = make_room(ch, more, more, true, &p->t, &why, &p->locked);
	if (p->locked && fit < more)
		ch_log(ch, KCORE_CH_LOG_WARNING,
		       "the core and its metadata take %" PRIu64 " bytes "
		       "more than the limits left for them",
		       more - fit);
	s->reserved += fit;
}

void ch_vacuum_publish_end(struct ch *ch, struct ch_vacuum_publish *p,
			   bool published, uint64_t bytes)
{
	const struct kcore_ch_opts *o = ch->o;

	if (p->locked && p->t.valid && published) {
		int64_t uid = o->crash.uid;
		bool listed = ch->subdir_fd == o->dir_fd;

		ch_totals_add(&p->t, uid, 1, bytes, false);
		for (size_t i = 0; i < p->t.ndirs && !listed; i++)
			listed = p->t.dirs[i].uid == uid;
		if (!listed)
			p->t.looked = 0; /* a directory the totals miss */
	}
	/* Unpublished: nothing of ours stayed, the removals did. */
	if (p->locked && p->t.valid)
		ch_totals_store(ch->store.lock_fd, o->dir_fd, &p->t);
	ch_totals_free(&p->t);
	ch->store.reserved = 0;
	ch_slot_write(ch);
	if (p->locked)
		ch_store_unlock(ch);
	p->locked = false;
}
