// SPDX-License-Identifier: MIT
/*
 * The core handler's store: where a core goes, how much of it the limits
 * let it keep, and publishing it with its metadata.
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
 *                      holds the bytes published cores take
 *
 * A core being written is an O_TMPFILE inode (or a locked temporary
 * file), invisible to the others, so its reservation is what they count
 * for it.  Data is written only inside what was reserved: the limits hold
 * however many handlers run.  What the limits count comes from fstat() of
 * the files and from the lock file the handlers write, never from a file
 * a user could edit.
 */
#include <elf.h>
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

#include "coredir.h"
#include "corehandler-internal.h"

#define PAGE  CH_PAGE
#define BLOCK CH_BLOCK
/* Re-read the free space after this many bytes written. */
#define STATVFS_EVERY (64u << 20)
/* Reserve up to this much more than asked at a time. */
#define RESERVE_STEP (16u << 20)
/* Room kept for the metadata file while the core is written (its real
 * size is reserved when it is published). */
#define META_RESERVE 4096u
/* How long to wait for the store lock before giving up on the limits. */
#define LOCK_WAIT_NS (10ull * 1000000000u)

#define LOCK_NAME   ".kcoredump.lock"
#define SLOT_FMT    ".kcoredump.slot.%u"
#define STATE_MAGIC 0x6b636473746f7265ull /* "kcdstore" */

/* The little-endian records in the lock and slot files. */
struct store_state {
	uint64_t magic, published;
};
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
	return v[0] == STATE_MAGIC;
}

static void write_slot(struct ch *ch)
{
	struct ch_store *s = &ch->store;
	uint64_t v[4] = { STATE_MAGIC, s->reserved, ch->stored,
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

bool ch_store_enter(struct ch *ch, const char **ret_why)
{
	struct ch_store *s = &ch->store;
	unsigned n = ch->o->max_handlers ? ch->o->max_handlers : 16;
	bool locked;

	if (n > CH_MAX_HANDLERS)
		n = CH_MAX_HANDLERS;
	s->slot = -1;
	s->slot_fd = -1;
	s->nslots = n;
	s->lock_fd = open_private(ch->o->dir_fd, LOCK_NAME);
	/* Slots are taken under the lock, where the others look at them;
	 * the first free one (files are made as needed). */
	locked = lock_store(ch);
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

void ch_store_leave(struct ch *ch)
{
	struct ch_store *s = &ch->store;

	if (s->slot_fd >= 0)
		close(s->slot_fd); /* drops our flock */
	s->slot_fd = -1;
	s->slot = -1;
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	s->lock_fd = -1;
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

static uint64_t published(struct ch *ch)
{
	uint64_t v[2];

	return get_u64s(ch->store.lock_fd, v, 2) ? v[1] : UINT64_MAX;
}

static void set_published(struct ch *ch, uint64_t bytes)
{
	uint64_t v[2] = { STATE_MAGIC, bytes };

	put_u64s(ch->store.lock_fd, v, 2);
}

static uint64_t free_bytes(struct ch *ch)
{
	struct statvfs sv;

	if (fstatvfs(ch->o->dir_fd, &sv) < 0)
		return UINT64_MAX;
	return (uint64_t)sv.f_bavail * sv.f_frsize;
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

	if (ch->os) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		uint64_t threads = ch->o->threads ? ch->o->threads
				   : cpus > 0	  ? (uint64_t)cpus
						  : 1;
		uint64_t inflight = (2 * threads + 2) * (4u << 20);

		have = kcore_ostream_bytes_out(ch->os) +
		       (ch->zdata < inflight ? ch->zdata : inflight);
	}
	return have + META_RESERVE;
}

/*
 * Under the lock: a fresh look at the store (orphans are cleaned on the
 * way), then older cores removed while need more bytes would not fit.
 * Returns the bytes that fit (up to need).
 */
static uint64_t make_room(struct ch *ch, uint64_t need,
			  enum kcore_ch_reason *ret_reason)
{
	const struct kcore_ch_opts *o = ch->o;
	struct ch_store *s = &ch->store;
	uint64_t res_others, pend_others, fit = need;
	struct coredir_scan scan;
	struct kcore_error *err;
	struct coredir_entry *v;

	*ret_reason = KCORE_CH_COMPLETE;
	err = kcore_coredir_scan(o->dir_fd, &scan);
	if (err) {
		char *d = kcore_error_describe(err);

		ch_log(ch, KCORE_CH_LOG_WARNING,
		       "cannot look at the store for the limits: %s",
		       d ? d : "out of memory");
		free(d);
		kcore_error_destroy(err);
		*ret_reason =
			o->max_use ? KCORE_CH_MAX_USE : KCORE_CH_KEEP_FREE;
		return 0;
	}
	/* Nobody writes orphans any more: they only take room. */
	while ((v = kcore_coredir_next_victim(&scan)) &&
	       v->kind <= COREDIR_ORPHAN_CORE) {
		uint64_t b = kcore_coredir_remove(&scan, v);

		ch_log(ch, KCORE_CH_LOG_NOTICE,
		       "removed the orphaned %s '%s' (%" PRIu64 " bytes)",
		       v->kind == COREDIR_ORPHAN_TMP ? "temporary file"
						     : "core without metadata",
		       v->core, b);
	}
	others(ch, &res_others, &pend_others);
	for (;;) {
		uint64_t use = scan.total + res_others + s->reserved + need;
		uint64_t avail = free_bytes(ch), pend;
		bool over_use = o->max_use && use > o->max_use;
		bool over_free = false;

		pend = pend_others + (s->reserved > have_bytes(ch)
					      ? s->reserved - have_bytes(ch)
					      : 0);
		if (o->keep_free)
			over_free = avail == UINT64_MAX ||
				    avail < o->keep_free + pend + need;
		if (!over_use && !over_free)
			break;
		v = kcore_coredir_next_victim(&scan);
		if (!v) {
			/* Nothing more to remove: what fits. */
			uint64_t a = UINT64_MAX, b = UINT64_MAX;

			if (over_use)
				a = o->max_use > use - need
					    ? o->max_use - (use - need)
					    : 0;
			if (over_free)
				b = avail != UINT64_MAX &&
						    avail > o->keep_free + pend
					    ? avail - o->keep_free - pend
					    : 0;
			fit = a < b ? a : b;
			if (fit > need)
				fit = need;
			*ret_reason =
				a <= b ? KCORE_CH_MAX_USE : KCORE_CH_KEEP_FREE;
			break;
		}
		ch_log(ch, KCORE_CH_LOG_NOTICE,
		       "removed the older core '%s' (%" PRIu64 " bytes) for %s",
		       v->core ? v->core : v->meta, v->bytes,
		       over_use ? "--max-use" : "--keep-free");
		kcore_coredir_remove(&scan, v);
		ch->res->removed++;
	}
	set_published(ch, scan.total);
	kcore_coredir_scan_free(&scan);
	return fit;
}

/* Whether need more bytes fit the limits without removing anything. */
static bool fits(const struct ch *ch, uint64_t pub, uint64_t res_others,
		 uint64_t avail, uint64_t pend, uint64_t need)
{
	const struct kcore_ch_opts *o = ch->o;

	if (pub == UINT64_MAX)
		return false; /* no total yet: look at the store */
	if (o->max_use &&
	    pub + res_others + ch->store.reserved + need > o->max_use)
		return false;
	return !o->keep_free ||
	       (avail != UINT64_MAX && avail >= o->keep_free + pend + need);
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
	uint64_t have = have_bytes(ch), need, fit, pub, res_others, pend_others,
		 avail, pend, step;
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
		/* Quick: the published total the others keep up to date,
		 * and the free space; a full look only when short. */
		pub = published(ch);
		others(ch, &res_others, &pend_others);
		avail = free_bytes(ch);
		pend = pend_others +
		       (s->reserved > have ? s->reserved - have : 0);
		/* The first time, a full look: files may have come and gone
		 * behind the handlers' backs. */
		if (s->scanned && fits(ch, pub, res_others, avail, pend, step))
			fit = step;
		else if (s->scanned &&
			 fits(ch, pub, res_others, avail, pend, need))
			fit = need;
		else
			fit = make_room(ch, need, &why);
		s->scanned = true;
		s->reserved += fit;
		write_slot(ch);
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
 * How many of len bytes may be stored now (a multiple of PAGE, or len);
 * sets *ret_reason when fewer.  --max-size counts a .zst's compressed
 * bytes as they are written, so it is enforced a few frames late; the
 * store's limits count what the compressor holds too, and are exact.
 */
static uint64_t allowance(struct ch *ch, uint64_t len,
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
	if (allow < len)
		allow -= allow % PAGE;
	else
		*ret_reason = KCORE_CH_COMPLETE;
	return allow;
}

/* ---- writing ---- */

static struct kcore_error *write_at(struct ch *ch, uint64_t off,
				    const void *buf, size_t len)
{
	struct kcore_error *err;

	if (!ch->os) {
		err = kcore_pwrite_all(NULL, ch->out->fd, ch->out->tmp, buf,
				       len, off);
	} else {
		if (off < ch->zpos)
			return kcore_error_create_at(KCORE_ERR_INVALID, 0,
						     ch->out->tmp, off,
						     "stream written out of "
						     "order");
		err = kcore_ostream_write_zeros(ch->os, off - ch->zpos);
		if (!err)
			err = kcore_ostream_write(ch->os, buf, len);
		ch->zpos = off + len;
	}
	if (!err) {
		if (ch->os)
			ch->zdata += len;
		else
			ch->stored += len;
	}
	return err;
}

/*
 * The copy ends at off: where a limit, the time or the stream stopped
 * it.  A cut core ends at a page boundary (the headers and notes are
 * always kept whole), so every segment it keeps holds whole pages.
 */
void ch_store_set_cut(struct ch *ch, uint64_t off, enum kcore_ch_reason why)
{
	if (ch->cut != UINT64_MAX)
		return;
	if (off > ch->prefix_len) {
		off -= off % PAGE;
		if (off < ch->prefix_len)
			off = ch->prefix_len;
	}
	ch->cut = off;
	ch->res->reason = why;
}

/*
 * The file system filled up writing at run (in the block at bstart),
 * limits or not: the core is cut and published like one a limit stopped,
 * the headers and notes always kept.  The cut leaves room for the
 * metadata (which is written next): NO_SPACE_ROOM before run in this
 * block, or, when run starts the block, the whole block before it too
 * (its digest record dropped: the digest then ends at a block boundary).
 */
#define NO_SPACE_ROOM (64u << 10)
static void no_space(struct ch *ch, uint64_t bstart, uint64_t run)
{
	uint64_t at =
		run - bstart >= NO_SPACE_ROOM ? run - NO_SPACE_ROOM : bstart;

	if (at == bstart && bstart >= BLOCK &&
	    bstart - BLOCK >= ch->prefix_len) {
		at = bstart - BLOCK;
		while (ch->nrecs && kcore_load(ch->recs + 40 * (ch->nrecs - 1),
					       8, false) >= at / BLOCK)
			ch->nrecs--;
	}
	ch_store_set_cut(ch, at, KCORE_CH_NO_SPACE);
}

/* Write the non-zero pages of block [bstart, bstart + n) past the headers. */
static struct kcore_error *store_block(struct ch *ch, const unsigned char *buf,
				       uint64_t bstart, size_t n)
{
	uint64_t run = 0, run_len = 0;
	size_t i = 0;

	if (bstart + n <= ch->prefix_len)
		return NULL;
	if (bstart < ch->prefix_len)
		i = (size_t)(ch->prefix_len - bstart);
	while (i <= n) {
		size_t pend = (i / PAGE + 1) * PAGE;
		bool zero = false;

		if (i < n) {
			if (pend > n)
				pend = n;
			zero = kcore_is_zero(buf + i, pend - i);
			if (zero)
				ch->res->zero_bytes += pend - i;
			else
				ch->res->data_bytes += pend - i;
		}
		if (i < n && !zero) {
			if (!run_len)
				run = bstart + i;
			run_len += pend - i;
			i = pend;
			continue;
		}
		if (run_len) {
			enum kcore_ch_reason why;
			uint64_t allow = allowance(ch, run_len, &why);
			struct kcore_error *err = NULL;

			if (allow)
				err = write_at(ch, run, buf + (run - bstart),
					       (size_t)allow);
			if (err && !ch->os &&
			    (err->errnum == ENOSPC || err->errnum == EDQUOT)) {
				kcore_error_destroy(err);
				no_space(ch, bstart, run);
				ch->res->data_bytes -= run_len;
				return NULL;
			}
			if (err)
				return err;
			if (allow < run_len) {
				ch_store_set_cut(ch, run + allow, why);
				ch->res->data_bytes -= run_len - allow;
				return NULL;
			}
			run_len = 0;
		}
		if (i == n)
			break;
		i = pend;
	}
	return NULL;
}

/* For a .zst, keep the first page of each PT_LOAD as it passes (for the
 * build IDs; a sparse ELF is read back instead); buf NULL: n zeros. */
static void capture(struct ch *ch, const unsigned char *buf, uint64_t bstart,
		    size_t n)
{
	uint64_t bend = bstart + n;

	while (ch->os && ch->next_cap < ch->norder && !ch->cap_full) {
		size_t idx = ch->order[ch->next_cap];
		const struct ch_phdr *p = &ch->ph[idx];
		struct ch_capture *c = &ch->caps[idx];
		uint64_t cs = p->offset,
			 ce = p->offset + (p->filesz < PAGE ? p->filesz : PAGE);
		uint64_t from, to;

		if (cs >= bend)
			return;
		if (!c->len && !c->done) {
			if (ch->cap_len + PAGE > CH_MAX_CAPTURE) {
				ch->cap_full = true;
				return;
			}
			if (ch->cap_len + PAGE > ch->cap_size) {
				size_t size = ch->cap_size ? 2 * ch->cap_size
							   : 64 * PAGE;
				unsigned char *m = realloc(ch->cap, size);

				if (!m) {
					ch->cap_full = true;
					return;
				}
				ch->cap = m;
				ch->cap_size = size;
			}
			c->off = ch->cap_len;
		}
		from = cs > bstart ? cs : bstart;
		to = ce < bend ? ce : bend;
		if (to > from) {
			if (buf)
				memcpy(ch->cap + c->off + (from - cs),
				       buf + (from - bstart), to - from);
			else
				memset(ch->cap + c->off + (from - cs), 0,
				       to - from);
			if (to - cs > c->len)
				c->len = (uint32_t)(to - cs);
		}
		if (ce > bend)
			return;
		c->done = true;
		if (!c->len || kcore_is_zero(ch->cap + c->off, c->len))
			c->len = 0; /* nothing to learn; reuse the room */
		else
			ch->cap_len = c->off + c->len;
		ch->next_cap++;
	}
}

static struct kcore_error *add_record(struct ch *ch, uint64_t index,
				      const unsigned char *data, size_t len)
{
	unsigned char *r;

	if (kcore_is_zero(data, len))
		return NULL;
	if (ch->nrecs == ch->caprecs) {
		size_t cap = ch->caprecs ? 2 * ch->caprecs : 256;
		unsigned char *m = realloc(ch->recs, cap * 40);

		if (!m)
			return &kcore_error_nomem;
		ch->recs = m;
		ch->caprecs = cap;
	}
	r = ch->recs + ch->nrecs++ * 40;
	for (int i = 0; i < 8; i++)
		r[i] = (unsigned char)(index >> (8 * i));
	kcore_sha256(data, len, r + 8);
	return NULL;
}

struct kcore_error *ch_store_finish_digest(struct ch *ch, uint64_t size)
{
	struct kcore_seg_hasher *h;
	struct kcore_error *err = kcore_seg_hasher_create(size, &h);

	if (err)
		return err;
	for (size_t i = 0; !err && i < ch->nrecs; i++) {
		const unsigned char *r = ch->recs + 40 * i;

		err = kcore_seg_hasher_add(h, kcore_load(r, 8, false), r + 8);
	}
	if (!err)
		kcore_seg_hasher_finish(h, ch->res->sha256);
	kcore_seg_hasher_destroy(h);
	return err;
}

/* Whether the stream stops at the end of this block: then only its whole
 * pages are stored (a cut core ends at a page boundary). */
static bool stopping(const struct ch *ch)
{
	return ch->stopped || (ch->eof && ch->res->stream_bytes < ch->expected);
}

struct kcore_error *ch_store_copy(struct ch *ch)
{
	unsigned char *buf = aligned_alloc(PAGE, BLOCK);
	struct kcore_error *err = NULL;

	if (!buf)
		return &kcore_error_nomem;
	for (uint64_t bstart = 0;; bstart += BLOCK) {
		size_t n = 0, got;
		uint64_t keep, run;

		if (bstart < ch->prefix_len) {
			n = ch->prefix_len - bstart < BLOCK
				    ? (size_t)(ch->prefix_len - bstart)
				    : BLOCK;
			memcpy(buf, ch->prefix + bstart, n);
		} else if ((run = ch_holes_run(ch->holes, bstart, BLOCK))) {
			uint64_t done, whole;

			err = ch_drain(ch, bstart, run, &done);
			if (err)
				break;
			whole = done - done % BLOCK;
			if (whole) {
				/* Zeros: nothing to store or to hash. */
				ch->res->zero_bytes += whole;
				capture(ch, NULL, bstart, whole);
				bstart += whole;
			}
			n = (size_t)(done - whole);
			memset(buf, 0, n);
		}
		if (n < BLOCK) {
			err = ch_fill(ch, buf + n, BLOCK - n, &got);
			if (err)
				break;
			n += got;
		}
		if (ch->o->cancel && *ch->o->cancel && !ch->stopped) {
			ch->stopped = true;
			ch->stop_reason = KCORE_CH_CANCELLED;
		}
		if (stopping(ch) && bstart + n > ch->prefix_len) {
			uint64_t end = bstart + n;

			end -= end % PAGE;
			if (end < ch->prefix_len)
				end = ch->prefix_len;
			n = end > bstart ? (size_t)(end - bstart) : 0;
		}
		if (!n) {
			if (stopping(ch))
				ch_store_set_cut(ch, bstart,
						 ch->stopped ? ch->stop_reason
							     : KCORE_CH_SHORT);
			break;
		}
		err = store_block(ch, buf, bstart, n);
		if (err)
			break;
		capture(ch, buf, bstart, n);
		keep = ch->cut == UINT64_MAX || ch->cut >= bstart + n ? n
		       : ch->cut > bstart ? ch->cut - bstart
					  : 0;
		err = add_record(ch, bstart / BLOCK, buf, (size_t)keep);
		if (err || ch->cut != UINT64_MAX)
			break;
		if (stopping(ch)) {
			ch_store_set_cut(ch, bstart + n,
					 ch->stopped ? ch->stop_reason
						     : KCORE_CH_SHORT);
			break;
		}
		if (ch->eof || n < BLOCK)
			break;
		if (ch->deadline_ns && ch_mono_ns() >= ch->deadline_ns) {
			ch_store_set_cut(ch, bstart + n, KCORE_CH_TIMEOUT);
			break;
		}
	}
	free(buf);
	return err;
}

/* ---- names and files ---- */

/* "core.COMM.UID.PID.TIME[.K]" free in the core's directory. */
static char *pick_base(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	const char *c = o->crash.comm && *o->crash.comm ? o->crash.comm
			: ch->fname && *ch->fname	? ch->fname
							: "unknown";
	char comm[64];
	size_t n = 0;

	/* File-name-safe: %e and pr_fname are the task's comm, any bytes. */
	for (; *c && n < sizeof(comm) - 1; c++)
		comm[n++] =
			(*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
					(*c >= '0' && *c <= '9') || *c == '-' ||
					*c == '_' || *c == '+' || *c == '.'
				? *c
				: '_';
	comm[n] = '\0';
	for (int k = 0; k < 100; k++) {
		static const char *const suffixes[] = { "", ".zst", ".xz",
							".json" };
		char *base;
		bool taken = false;

		if ((k ? asprintf(&base,
				  "core.%s.%" PRIu32 ".%" PRId64 ".%" PRId64
				  ".%d",
				  comm, o->crash.uid, o->crash.pid,
				  o->crash.time, k)
		       : asprintf(&base,
				  "core.%s.%" PRIu32 ".%" PRId64 ".%" PRId64,
				  comm, o->crash.uid, o->crash.pid,
				  o->crash.time)) < 0)
			return NULL;
		for (size_t i = 0; i < 4 && !taken; i++) {
			char *name;

			if (asprintf(&name, "%s%s", base, suffixes[i]) < 0) {
				free(base);
				return NULL;
			}
			taken = faccessat(ch->subdir_fd, name, F_OK,
					  AT_SYMLINK_NOFOLLOW) == 0 ||
				errno != ENOENT;
			free(name);
		}
		if (!taken)
			return base;
		free(base);
	}
	return NULL;
}

/* Where the core goes: user.UID (readable by the crashing user) or the
 * directory itself (root's only). */
static void choose_dir(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	char name[32];
	int fd;

	ch->subdir_fd = o->dir_fd;
	if (!ch->user_access)
		return;
	fd = kcore_coredir_user_dir(o->dir_fd, o->crash.uid, true);
	if (fd < 0 || ch_priv_grant_read(fd, o->crash.uid, true) < 0 ||
	    ch_priv_grant_search(o->dir_fd, o->crash.uid) < 0) {
		snprintf(ch->access_why, sizeof(ch->access_why),
			 "the directory cannot give uid %" PRIu32 " access: %s",
			 o->crash.uid, strerror(errno));
		ch->user_access = false;
		if (fd >= 0)
			close(fd);
		ch_log(ch, KCORE_CH_LOG_WARNING, "%s; the core stays root's",
		       ch->access_why);
		return;
	}
	snprintf(name, sizeof(name), KCORE_COREDIR_USER_PREFIX "%" PRIu32,
		 o->crash.uid);
	ch->res->subdir = strdup(name);
	ch->subdir_fd = fd;
}

struct kcore_error *ch_store_open(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_error *err;
	char *base;

	choose_dir(ch);
	base = pick_base(ch);
	if (!base)
		return kcore_error_create(KCORE_ERR_EXISTS, 0, o->dir,
					  "no free name for the core");
	if (asprintf(&ch->res->core_name, "%s%s", base,
		     o->compress == KCORE_COMPRESS_ZSTD ? ".zst"
		     : o->compress == KCORE_COMPRESS_XZ ? ".xz"
							: "") < 0 ||
	    asprintf(&ch->res->meta_name, "%s.json", base) < 0) {
		free(base);
		return &kcore_error_nomem;
	}
	free(base);
	err = kcore_output_openat(ch->subdir_fd, ch->res->core_name, o->sync,
				  &ch->out);
	if (err)
		return err;
	if (o->compress != KCORE_COMPRESS_NONE) {
		struct kcore_ostream_opts so = {
			.method = o->compress,
			.level = o->level,
			.threads = o->threads,
		};

		err = kcore_ostream_create(ch->out->fd, ch->out->tmp, &so,
					   &ch->os);
		if (err)
			return err;
	}
	return NULL;
}

/* Publish one file of ours, made in the core's directory. */
static struct kcore_error *write_meta(struct ch *ch, const char *text,
				      size_t len, struct kcore_output **ret)
{
	struct kcore_output *mo = NULL;
	struct kcore_error *err;

	err = kcore_output_openat(ch->subdir_fd, ch->res->meta_name,
				  ch->o->sync, &mo);
	if (!err)
		err = kcore_write_all(NULL, mo->fd, mo->tmp, text, len);
	if (!err && ch->user_access &&
	    ch_priv_grant_read(mo->fd, ch->o->crash.uid, false) < 0)
		err = kcore_error_create(KCORE_ERR_OS, errno,
					 ch->res->meta_name,
					 "cannot give uid %u read access",
					 (unsigned)ch->o->crash.uid);
	if (err) {
		kcore_output_destroy(mo);
		return err;
	}
	*ret = mo;
	return NULL;
}

struct kcore_error *ch_store_publish(struct ch *ch, const char *meta,
				     size_t meta_len)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_output *mo = NULL;
	struct kcore_error *err;
	bool locked = false;
	uint64_t meta_bytes = 0;
	struct stat st;

	if (ch->user_access &&
	    ch_priv_grant_read(ch->out->fd, o->crash.uid, false) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno,
					  ch->res->core_name,
					  "cannot give uid %u read access",
					  (unsigned)o->crash.uid);
	err = write_meta(ch, meta, meta_len, &mo);
	if (err)
		return err;
	/* The real sizes now, for the others. */
	if (fstat(ch->out->fd, &st) == 0)
		ch->stored = (uint64_t)st.st_blocks * 512;
	if (fstat(mo->fd, &st) == 0)
		meta_bytes = (uint64_t)st.st_blocks * 512;
	if (ch->os)
		ch->zdata = 0;
	if (o->max_use || o->keep_free) {
		enum kcore_ch_reason why;

		locked = lock_store(ch);
		if (locked) {
			/* Ours counts as reserved until it is published:
			 * make room for anything beyond. */
			uint64_t have = ch->stored + meta_bytes;

			uint64_t more = have > ch->store.reserved
						? have - ch->store.reserved
						: 0;
			uint64_t fit;

			/* A full look, whatever the others wrote down. */
			fit = make_room(ch, more, &why);
			if (fit < more)
				ch_log(ch, KCORE_CH_LOG_WARNING,
				       "the core and its metadata take "
				       "%" PRIu64 " bytes more than the "
				       "limits left for them",
				       more - fit);
			ch->store.reserved += fit;
		}
	}
	/* The metadata first: a core is never visible without it. */
	err = kcore_output_commit(mo, meta_len);
	if (!err)
		err = kcore_output_commit(ch->out, ch->res->file_size);
	if (err) {
		if (!mo->tmp)
			unlinkat(ch->subdir_fd, ch->res->meta_name, 0);
	} else if (locked) {
		uint64_t pub = published(ch);

		if (pub != UINT64_MAX)
			set_published(ch, pub + ch->stored + meta_bytes);
	}
	ch->store.reserved = 0;
	write_slot(ch);
	if (locked)
		unlock_store(ch);
	kcore_output_destroy(mo);
	return err;
}

unsigned char *ch_store_first_pages_core(struct ch *ch, size_t *ret_len)
{
	size_t shsize = ch->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t len = ch->prefix_len + ch->cap_len + 8 + shsize;
	size_t end = ch->prefix_len + ch->cap_len;
	unsigned char *img = calloc(1, len);

	if (!img)
		return NULL;
	memcpy(img, ch->prefix, ch->prefix_len);
	if (ch->cap_len)
		memcpy(img + ch->prefix_len, ch->cap, ch->cap_len);
	for (size_t i = 0; i < ch->phnum; i++)
		if (ch->ph[i].type == PT_LOAD)
			ch_put_phdr_file(ch, img, i,
					 ch->prefix_len + ch->caps[i].off,
					 ch->caps[i].len);
	if (ch->xnum) {
		end = (end + 7) & ~(size_t)7;
		ch_put_shoff(ch, img, end, 1, ch->shstrndx);
		end += ch_xnum_shdr(ch, img + end);
	} else {
		ch_put_shoff(ch, img, 0, 0, 0);
	}
	*ret_len = end;
	return img;
}

void ch_store_deinit(struct ch *ch)
{
	kcore_ostream_destroy(ch->os);
	ch->os = NULL;
	kcore_output_destroy(ch->out);
	ch->out = NULL;
	if (ch->subdir_fd >= 0 && ch->subdir_fd != ch->o->dir_fd)
		close(ch->subdir_fd);
	ch->subdir_fd = -1;
	ch_store_leave(ch);
	free(ch->cap);
	free(ch->recs);
}
