// SPDX-License-Identifier: MIT
/*
 * The store's limits: the handler slots, the store lock, reserving room
 * as the copy goes, and removing older cores to make it (the design is
 * in corehandler-vacuum.h).
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
#include "corehandler-vacuum.h"

#define PAGE CH_PAGE
/* Reserve up to this much more than asked at a time. */
#define RESERVE_STEP (16u << 20)
/* Room kept for the metadata file while the core is written (its real
 * size is reserved when it is published). */
#define META_RESERVE 4096u
/* How long to wait for the store lock before giving up on the limits. */
#define LOCK_WAIT_NS (10ull * 1000000000u)

#define LOCK_NAME ".kcoredump.lock"
#define SLOT_FMT  ".kcoredump.slot.%u"
/* The slot files' (as before the totals: an older handler still
 * running during an upgrade counts ours, and we count its). */
#define SLOT_MAGIC 0x6b636473746f7265ull /* "kcdstore" */

/* The little-endian record in a slot file. */
struct slot_state {
	uint64_t magic, reserved, written, pid;
};

/* A regular file of ours in the store, made if missing. */
static int open_private(int dir_fd, const char *name)
{
	int fd = openat(dir_fd, name,
			O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
				O_NONBLOCK,
			0600);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid()) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

static void put_u64s(int fd, const uint64_t *v, size_t n)
{
	unsigned char b[64];

	for (size_t i = 0; i < n; i++)
		kcore_store_le(b + 8 * i, v[i], 8);
	if (pwrite(fd, b, 8 * n, 0) != (ssize_t)(8 * n))
		return; /* a best effort: the next scan corrects it */
}

static bool get_u64s(int fd, uint64_t *v, size_t n)
{
	unsigned char b[64];

	if (pread(fd, b, 8 * n, 0) != (ssize_t)(8 * n))
		return false;
	for (size_t i = 0; i < n; i++)
		v[i] = kcore_load(b + 8 * i, 8, false);
	return v[0] == SLOT_MAGIC;
}

static void write_slot(struct ch *ch)
{
	struct ch_store *s = &ch->store;
	uint64_t v[4] = { SLOT_MAGIC, s->reserved, ch->stored,
			  (uint64_t)getpid() };

	if (s->slot_fd >= 0)
		put_u64s(s->slot_fd, v, 4);
}

/* The store lock, waited for a bounded time: a stuck handler must not
 * hold every other one up. */
static bool lock_store(struct ch *ch)
{
	uint64_t until = ch_mono_ns() + LOCK_WAIT_NS;

	if (ch->store.lock_fd < 0)
		return false;
	while (flock(ch->store.lock_fd, LOCK_EX | LOCK_NB) < 0) {
		struct timespec ts = { 0, 2000000 };

		if (errno != EWOULDBLOCK && errno != EINTR)
			return false;
		if (ch_mono_ns() >= until)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

static void unlock_store(struct ch *ch)
{
	flock(ch->store.lock_fd, LOCK_UN);
}

static bool totals_were_current(struct ch *ch)
{
	struct ch_totals t;
	bool r = ch_totals_load(ch->store.lock_fd, &t) &&
		 ch_totals_current(ch->o->dir_fd, &t);

	ch_totals_free(&t);
	return r;
}

static void totals_keep(struct ch *ch)
{
	struct ch_totals t;

	if (ch_totals_load(ch->store.lock_fd, &t))
		ch_totals_store(ch->store.lock_fd, ch->o->dir_fd, &t);
	ch_totals_free(&t);
}

bool ch_vacuum_enter(struct ch *ch, const char **ret_why)
{
	struct ch_store *s = &ch->store;
	unsigned n = ch->o->max_handlers ? ch->o->max_handlers : 16;
	bool locked, current = false;

	if (n > CH_MAX_HANDLERS)
		n = CH_MAX_HANDLERS;
	s->slot = -1;
	s->slot_fd = -1;
	s->nslots = n;
	s->lock_fd = open_private(ch->o->dir_fd, LOCK_NAME);
	/* Slots are taken under the lock, where the others look at them;
	 * the first free one (files are made as needed). */
	locked = lock_store(ch);
	if (locked)
		current = totals_were_current(ch);
	for (unsigned i = 0; i < n && s->slot < 0; i++) {
		char name[64];
		int fd;

		snprintf(name, sizeof(name), SLOT_FMT, i);
		fd = open_private(ch->o->dir_fd, name);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
			s->slot = (int)i;
			s->slot_fd = fd;
			write_slot(ch);
		} else if (fd >= 0) {
			close(fd);
		}
	}
	/* The build-ID helper's root, an empty directory of ours, removed
	 * at once: made here, under the lock. */
	if (s->slot >= 0 && geteuid() == 0 && ch->o->build_id_timeout_ms) {
		char name[64];

		snprintf(name, sizeof(name), ".kcoredump.empty.%d",
			 (int)getpid());
		if (mkdirat(ch->o->dir_fd, name, 0700) == 0 ||
		    errno == EEXIST) {
			s->empty_fd = openat(ch->o->dir_fd, name,
					     O_RDONLY | O_DIRECTORY |
						     O_NOFOLLOW | O_CLOEXEC);
			s->has_empty = s->empty_fd >= 0;
			unlinkat(ch->o->dir_fd, name, AT_REMOVEDIR);
		}
	}
	/* A slot file or that directory moved the directory's mtime: ours,
	 * not a change the totals miss. */
	if (current && !totals_were_current(ch))
		totals_keep(ch);
	if (locked)
		unlock_store(ch);
	if (s->slot < 0) {
		*ret_why = s->lock_fd < 0 ? "the store's lock file cannot be "
					    "opened"
					  : "every handler slot is taken";
		return false;
	}
	return true;
}

void ch_vacuum_leave(struct ch *ch)
{
	struct ch_store *s = &ch->store;

	if (s->slot_fd >= 0)
		close(s->slot_fd); /* drops our flock */
	s->slot_fd = -1;
	s->slot = -1;
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	s->lock_fd = -1;
	if (s->scan)
		kcore_coredir_scan_free(s->scan);
	free(s->scan);
	s->scan = NULL;
	if (s->has_empty)
		close(s->empty_fd);
	s->has_empty = false;
}

/*
 * What the other running handlers have reserved, and of that, what they
 * have not written yet (free space they will take).  A slot counts only
 * while its handler holds it.
 */
static void others(struct ch *ch, uint64_t *ret_reserved, uint64_t *ret_pending)
{
	struct ch_store *s = &ch->store;

	*ret_reserved = *ret_pending = 0;
	for (unsigned i = 0; i < s->nslots; i++) {
		uint64_t v[4];
		char name[64];
		int fd;

		if ((int)i == s->slot)
			continue;
		/* Our own descriptor would conflict with nothing we hold:
		 * a second open file tells whether another process does. */
		snprintf(name, sizeof(name), SLOT_FMT, i);
		fd = openat(ch->o->dir_fd, name,
			    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
			close(fd); /* nobody holds it */
			continue;
		}
		if (get_u64s(fd, v, 4)) {
			*ret_reserved += v[1];
			*ret_pending += v[1] > v[2] ? v[1] - v[2] : 0;
		}
		close(fd);
	}
}

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

	others(ch, &res_others, &pend_others);
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
		unlock_store(ch);
		if (!look(ch, false)) {
			*ret_locked = lock_store(ch);
			goto failed;
		}
		s->scan_gen = gen;
		if (!lock_store(ch)) {
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

			others(ch, &res_others, &pend_others);
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
	if (!lock_store(ch)) {
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
		write_slot(ch);
		if (locked)
			unlock_store(ch);
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
	p->locked = lock_store(ch);
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
	write_slot(ch);
	if (p->locked)
		unlock_store(ch);
	p->locked = false;
}
