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
 *                      holds the store's totals (see below), so that
 *                      storing a core does not cost more with more
 *                      cores stored
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
#define STATE_MAGIC 0x6b63647374617432ull /* "kcdstat2" */
/* The slot files' (as before the totals: an older handler still
 * running during an upgrade counts ours, and we count its). */
#define SLOT_MAGIC 0x6b636473746f7265ull /* "kcdstore" */
/* uids the lock file keeps totals for (more: every handler looks). */
#define STATE_MAX_UIDS 1024
/* Look at the whole store again after this long, whatever the totals. */
#define STATE_RECHECK_S 3600

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

static bool totals_were_current(struct ch *ch);
static void totals_keep(struct ch *ch);

bool ch_store_enter(struct ch *ch, const char **ret_why)
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

/*
 * The store's totals, in the lock file (little-endian u64s, written
 * under the lock): STATE_MAGIC, bytes, cores, generation, the time of
 * the last full look, the number of directories and of uids, then per
 * directory (uid or -1 for the top, inode, mtime in ns), per uid (uid,
 * cores, bytes), and a checksum.  Every handler that publishes or
 * removes a core updates them and the directories' mtimes it leaves;
 * a directory whose mtime moved since (a file made, renamed or removed
 * by someone else) makes the totals stale, and the next handler looks
 * at the whole store again.  So does a file of the store changed in
 * place, at the latest STATE_RECHECK_S later.
 */
struct totals_uid {
	int64_t uid;
	uint64_t cores, bytes;
};
struct totals {
	uint64_t bytes, cores, gen, looked;
	struct coredir_stamp *dirs;
	size_t ndirs;
	struct totals_uid *uids;
	size_t nuids;
	bool valid;    /* current: the store is as they say */
	bool too_many; /* more uids than the lock file holds */
};

static void totals_free(struct totals *t)
{
	free(t->dirs);
	free(t->uids);
	memset(t, 0, sizeof(*t));
}

static uint64_t checksum(const unsigned char *b, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int64_t realtime_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

/* The totals as the lock file says (t->valid not yet decided); false
 * when it holds none (made by an older version, or torn). */
static bool totals_load(struct ch *ch, struct totals *t)
{
	size_t max = 8 * (8 + 3 * (size_t)(STATE_MAX_UIDS + 1) +
			  3 * (size_t)STATE_MAX_UIDS);
	unsigned char *b = malloc(max);
	ssize_t n;
	size_t words, at = 7;
	bool ok = false;

	memset(t, 0, sizeof(*t));
	if (!b)
		return false;
	n = pread(ch->store.lock_fd, b, max, 0);
	if (n < 7 * 8 || kcore_load(b, 8, false) != STATE_MAGIC)
		goto out;
	t->bytes = kcore_load(b + 8, 8, false);
	t->cores = kcore_load(b + 16, 8, false);
	t->gen = kcore_load(b + 24, 8, false);
	t->looked = kcore_load(b + 32, 8, false);
	t->ndirs = (size_t)kcore_load(b + 40, 8, false);
	t->nuids = (size_t)kcore_load(b + 48, 8, false);
	if (t->ndirs < 1 || t->ndirs > STATE_MAX_UIDS + 1 ||
	    t->nuids > STATE_MAX_UIDS)
		goto out;
	words = 7 + 3 * t->ndirs + 3 * t->nuids;
	if ((size_t)n < 8 * (words + 1) ||
	    checksum(b, 8 * words) != kcore_load(b + 8 * words, 8, false))
		goto out;
	t->dirs = calloc(t->ndirs, sizeof(*t->dirs));
	t->uids = calloc(t->nuids ? t->nuids : 1, sizeof(*t->uids));
	if (!t->dirs || !t->uids)
		goto out;
	for (size_t i = 0; i < t->ndirs; i++, at += 3) {
		t->dirs[i].uid = (int64_t)kcore_load(b + 8 * at, 8, false);
		t->dirs[i].ino = kcore_load(b + 8 * at + 8, 8, false);
		t->dirs[i].mtime_ns =
			(int64_t)kcore_load(b + 8 * at + 16, 8, false);
	}
	for (size_t i = 0; i < t->nuids; i++, at += 3) {
		t->uids[i].uid = (int64_t)kcore_load(b + 8 * at, 8, false);
		t->uids[i].cores = kcore_load(b + 8 * at + 8, 8, false);
		t->uids[i].bytes = kcore_load(b + 8 * at + 16, 8, false);
	}
	ok = true;
out:
	free(b);
	if (!ok) {
		uint64_t gen = t->gen;

		totals_free(t);
		t->gen = gen;
	}
	return ok;
}

/* Whether the store's directories are as the totals left them. */
static bool totals_current(struct ch *ch, const struct totals *t)
{
	int64_t now = realtime_s();

	if (!t->looked || (int64_t)t->looked > now ||
	    now - (int64_t)t->looked >= STATE_RECHECK_S)
		return false;
	for (size_t i = 0; i < t->ndirs; i++) {
		struct coredir_stamp st;

		if (!kcore_coredir_stamp(ch->o->dir_fd, t->dirs[i].uid, &st) ||
		    st.ino != t->dirs[i].ino ||
		    st.mtime_ns != t->dirs[i].mtime_ns)
			return false;
	}
	return true;
}

/* Write them back, with the directories' mtimes after our changes. */
static void totals_store(struct ch *ch, struct totals *t)
{
	size_t words = 7 + 3 * t->ndirs + 3 * t->nuids;
	unsigned char *b;

	for (size_t i = 0; i < t->ndirs; i++)
		if (!kcore_coredir_stamp(ch->o->dir_fd, t->dirs[i].uid,
					 &t->dirs[i]))
			t->looked = 0; /* gone: look again */
	t->gen++;
	b = malloc(8 * (words + 1));
	if (!b)
		return;
	if (t->too_many)
		t->looked = 0;
	kcore_store_le(b, STATE_MAGIC, 8);
	kcore_store_le(b + 8, t->bytes, 8);
	kcore_store_le(b + 16, t->cores, 8);
	kcore_store_le(b + 24, t->gen, 8);
	kcore_store_le(b + 32, t->looked, 8);
	kcore_store_le(b + 40, t->ndirs, 8);
	kcore_store_le(b + 48, t->nuids, 8);
	for (size_t i = 0, at = 7; i < t->ndirs; i++, at += 3) {
		kcore_store_le(b + 8 * at, (uint64_t)t->dirs[i].uid, 8);
		kcore_store_le(b + 8 * at + 8, t->dirs[i].ino, 8);
		kcore_store_le(b + 8 * at + 16, (uint64_t)t->dirs[i].mtime_ns,
			       8);
	}
	for (size_t i = 0, at = 7 + 3 * t->ndirs; i < t->nuids; i++, at += 3) {
		kcore_store_le(b + 8 * at, (uint64_t)t->uids[i].uid, 8);
		kcore_store_le(b + 8 * at + 8, t->uids[i].cores, 8);
		kcore_store_le(b + 8 * at + 16, t->uids[i].bytes, 8);
	}
	kcore_store_le(b + 8 * words, checksum(b, 8 * words), 8);
	if (pwrite(ch->store.lock_fd, b, 8 * (words + 1), 0) !=
	    (ssize_t)(8 * (words + 1)))
		kcore_store_le(b, 0, 8); /* a best effort: the next looks */
	free(b);
}

static struct totals_uid *totals_uid(struct totals *t, int64_t uid, bool add)
{
	struct totals_uid *u;

	for (size_t i = 0; i < t->nuids; i++)
		if (t->uids[i].uid == uid)
			return &t->uids[i];
	if (!add)
		return NULL;
	if (t->nuids >= STATE_MAX_UIDS) {
		t->too_many = true;
		return NULL;
	}
	u = realloc(t->uids, (t->nuids + 1) * sizeof(*u));
	if (!u) {
		t->too_many = true;
		return NULL;
	}
	t->uids = u;
	u = &t->uids[t->nuids++];
	u->uid = uid;
	u->cores = u->bytes = 0;
	return u;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* A core of uid (cores 1) or other bytes (cores 0) added or removed. */
static void totals_add(struct totals *t, int64_t uid, uint64_t cores,
		       uint64_t bytes, bool remove)
{
	struct totals_uid *u = cores ? totals_uid(t, uid, !remove) : NULL;

	t->bytes = remove ? sub_sat(t->bytes, bytes) : t->bytes + bytes;
	t->cores = remove ? sub_sat(t->cores, cores) : t->cores + cores;
	if (u) {
		u->bytes = remove ? sub_sat(u->bytes, bytes) : u->bytes + bytes;
		u->cores = remove ? sub_sat(u->cores, cores) : u->cores + cores;
	}
}

/* The totals of a full look (its entries not removed). */
static bool totals_from_scan(const struct coredir_scan *sc, struct totals *t)
{
	uint64_t gen = t->gen;

	totals_free(t);
	t->gen = gen;
	t->looked = (uint64_t)realtime_s();
	t->dirs = calloc(sc->ndfds ? sc->ndfds : 1, sizeof(*t->dirs));
	if (!t->dirs)
		return false;
	memcpy(t->dirs, sc->stamps, sc->ndfds * sizeof(*t->dirs));
	t->ndirs = sc->ndfds;
	if (t->ndirs > STATE_MAX_UIDS + 1) {
		t->ndirs = STATE_MAX_UIDS + 1;
		t->too_many = true;
	}
	for (size_t i = 0; i < sc->n; i++) {
		const struct coredir_entry *e = &sc->e[i];

		if (!e->removed)
			totals_add(t, e->uid, e->kind >= COREDIR_FOREIGN,
				   e->bytes, false);
	}
	t->valid = true;
	return true;
}

static bool totals_were_current(struct ch *ch)
{
	struct totals t;
	bool r = totals_load(ch, &t) && totals_current(ch, &t);

	totals_free(&t);
	return r;
}

static void totals_keep(struct ch *ch)
{
	struct totals t;

	if (totals_load(ch, &t))
		totals_store(ch, &t);
	totals_free(&t);
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
static unsigned over(struct ch *ch, struct totals *t, uint64_t need, bool core)
{
	const struct kcore_ch_opts *o = ch->o;
	struct ch_store *s = &ch->store;
	uint64_t res_others, pend_others, have = have_bytes(ch), pend, avail;
	struct totals_uid *u;
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
	u = totals_uid(t, o->crash.uid, false);
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
			  bool core, struct totals *t,
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

		totals_free(t);
		if (totals_load(ch, t) && totals_current(ch, t)) {
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
			totals_from_scan(s->scan, t);
			break;
		}
		gen = t->gen;
		if (tries >= 2) {
			/* The others keep changing it: under the lock. */
			if (!look(ch, true))
				goto failed;
			s->scan_gen = gen;
			totals_from_scan(s->scan, t);
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
			totals_free(t);
			return 0;
		}
	}
	/* Nobody writes orphans any more: they only take room. */
	while ((v = kcore_coredir_next_victim(s->scan)) &&
	       v->kind <= COREDIR_ORPHAN_CORE) {
		uint64_t b = kcore_coredir_remove(s->scan, v);

		if (!v->existed)
			continue;
		totals_add(t, -1, 0, b, true);
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
			if (look(ch, true) && totals_from_scan(s->scan, t))
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
		totals_add(t, v->uid, v->kind >= COREDIR_FOREIGN, b, true);
		ch_log(ch, KCORE_CH_LOG_NOTICE,
		       "removed the older core '%s' (%" PRIu64 " bytes) for %s",
		       v->core ? v->core : v->meta, b,
		       r & 8   ? "--max-cores-per-user"
		       : r & 1 ? "--max-use"
		       : r & 2 ? "--keep-free"
			       : "--max-cores");
		ch->res->removed++;
	}
	totals_store(ch, t);
	return fit;
failed:
	totals_free(t);
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
		struct totals t;
		bool locked;

		fit = make_room(ch, need, step, false, &t, &why, &locked);
		totals_free(&t);
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
 * stream, the metadata and NO_SPACE_ROOM still fit: it is then finished
 * and decodes whole.  The data bytes (of len) that may be handed to the
 * compressor now.  The free space is looked at again when half of what
 * was left has been handed over (fstatvfs() per run would be costly for
 * cores of scattered pages).
 */
#define NO_SPACE_ROOM (64u << 10)
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
	end = 128 * frames + META_RESERVE + CH_HEADER_ROOM + NO_SPACE_ROOM;
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
		if (off > ch->zpos)
			ch->zruns++;
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
			    (err->errnum == ENOSPC || err->errnum == EDQUOT ||
			     err->errnum == EFBIG)) {
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

	/* The stack windows (zeros are there already). */
	for (size_t w = 0; buf && w < ch->nwins; w++) {
		const struct ch_window *win = &ch->wins[w];
		uint64_t from = win->off > bstart ? win->off : bstart;
		uint64_t to =
			win->off + win->len < bend ? win->off + win->len : bend;

		if (to > from)
			memcpy(ch->win_buf + win->buf_off + (from - win->off),
			       buf + (from - bstart), to - from);
	}

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
	struct totals t = { 0 };
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
	if (o->max_use || o->keep_free || o->max_cores ||
	    o->max_cores_per_user) {
		enum kcore_ch_reason why;

		locked = lock_store(ch);
		if (locked) {
			/* Ours counts as reserved until it is published:
			 * make room for anything beyond, and for one more
			 * core. */
			uint64_t have = ch->stored + meta_bytes;

			uint64_t more = have > ch->store.reserved
						? have - ch->store.reserved
						: 0;
			uint64_t fit;

			fit = make_room(ch, more, more, true, &t, &why,
					&locked);
			if (locked && fit < more)
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
	} else if (locked && t.valid) {
		int64_t uid = o->crash.uid;
		bool listed = ch->subdir_fd == o->dir_fd;

		totals_add(&t, uid, 1, ch->stored + meta_bytes, false);
		for (size_t i = 0; i < t.ndirs && !listed; i++)
			listed = t.dirs[i].uid == uid;
		if (!listed)
			t.looked = 0; /* a directory the totals miss */
		totals_store(ch, &t);
	}
	if (locked && err && t.valid)
		totals_store(ch, &t); /* nothing of ours stayed */
	totals_free(&t);
	ch->store.reserved = 0;
	write_slot(ch);
	if (locked)
		unlock_store(ch);
	kcore_output_destroy(mo);
	return err;
}

void ch_store_plan_stacks(struct ch *ch)
{
	size_t total = 0;

	if (!ch->os || !ch->o->backtrace_timeout_ms)
		return;
	for (size_t t = 0; t < ch->nsps; t++) {
		uint64_t sp = ch->sps[t] & ~(uint64_t)(PAGE - 1);
		struct ch_window *win = NULL;
		uint64_t rel, end;
		size_t i;

		for (i = 0; i < ch->phnum; i++)
			if (ch->ph[i].type == PT_LOAD &&
			    sp >= ch->ph[i].vaddr &&
			    sp - ch->ph[i].vaddr < ch->ph[i].filesz)
				break;
		if (i == ch->phnum)
			continue;
		rel = sp - ch->ph[i].vaddr;
		end = ch->ph[i].filesz - rel < CH_STACK_WINDOW
			      ? ch->ph[i].filesz
			      : rel + CH_STACK_WINDOW;
		/* One window a segment: threads sharing one widen it. */
		for (size_t w = 0; w < ch->nwins && !win; w++)
			if (ch->wins[w].ph == i)
				win = &ch->wins[w];
		if (win) {
			uint64_t ws = win->off - ch->ph[i].offset,
				 we = ws + win->len;

			ws = rel < ws ? rel : ws;
			we = end > we ? end : we;
			if (we - ws > 2 * CH_STACK_WINDOW)
				continue;
			total += (we - ws) - win->len;
			win->off = ch->ph[i].offset + ws;
			win->len = we - ws;
			continue;
		}
		win = &ch->wins[ch->nwins++];
		win->ph = i;
		win->off = ch->ph[i].offset + rel;
		win->len = end - rel;
		total += win->len;
	}
	if (!ch->nwins)
		return;
	ch->win_buf = calloc(1, total);
	if (!ch->win_buf) {
		ch->nwins = 0;
		return;
	}
	total = 0;
	for (size_t w = 0; w < ch->nwins; w++) {
		ch->wins[w].buf_off = total;
		total += ch->wins[w].len;
	}
}

unsigned char *ch_store_first_pages_core(struct ch *ch, size_t *ret_len)
{
	size_t shsize = ch->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t wlen = 0, len, end;
	unsigned char *img;

	for (size_t w = 0; w < ch->nwins; w++)
		wlen += ch->wins[w].len;
	len = ch->prefix_len + ch->cap_len + wlen + 8 + shsize;
	end = ch->prefix_len + ch->cap_len + wlen;
	img = calloc(1, len);
	if (!img)
		return NULL;
	memcpy(img, ch->prefix, ch->prefix_len);
	if (ch->cap_len)
		memcpy(img + ch->prefix_len, ch->cap, ch->cap_len);
	if (wlen)
		memcpy(img + ch->prefix_len + ch->cap_len, ch->win_buf, wlen);
	for (size_t i = 0; i < ch->phnum; i++)
		if (ch->ph[i].type == PT_LOAD)
			ch_put_phdr_file(ch, img, i,
					 ch->prefix_len + ch->caps[i].off,
					 ch->caps[i].len);
	/* A stack segment shows its window (its first page is of no
	 * use: no file starts there). */
	for (size_t w = 0; w < ch->nwins; w++) {
		const struct ch_window *win = &ch->wins[w];
		const struct ch_phdr *ph = &ch->ph[win->ph];
		uint64_t rel = win->off - ph->offset;

		ch_put_phdr_file(ch, img, win->ph,
				 ch->prefix_len + ch->cap_len + win->buf_off,
				 win->len);
		ch_put_phdr_vaddr(ch, img, win->ph, ph->vaddr + rel,
				  ph->memsz - rel);
	}
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
	free(ch->win_buf);
	free(ch->recs);
}
