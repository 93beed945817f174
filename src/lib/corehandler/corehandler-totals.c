// SPDX-License-Identifier: MIT
/*
 * The store's totals in its lock file: reading, checking and writing
 * them back (the format is in corehandler-totals.h).  Bounded and
 * checksummed: a torn or foreign lock file holds no totals, and the
 * handler looks at the whole store instead.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "corehandler-totals.h"

#define STATE_MAGIC 0x6b63647374617432ull /* "kcdstat2" */

void ch_totals_free(struct ch_totals *t)
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
bool ch_totals_load(int lock_fd, struct ch_totals *t)
{
	size_t max = 8 * (8 + 3 * (size_t)(CH_TOTALS_MAX_UIDS + 1) +
			  3 * (size_t)CH_TOTALS_MAX_UIDS);
	unsigned char *b = malloc(max);
	ssize_t n;
	size_t words, at = 7;
	bool ok = false;

	memset(t, 0, sizeof(*t));
	if (!b)
		return false;
	n = pread(lock_fd, b, max, 0);
	if (n < 7 * 8 || kcore_load(b, 8, false) != STATE_MAGIC)
		goto out;
	t->bytes = kcore_load(b + 8, 8, false);
	t->cores = kcore_load(b + 16, 8, false);
	t->gen = kcore_load(b + 24, 8, false);
	t->looked = kcore_load(b + 32, 8, false);
	t->ndirs = (size_t)kcore_load(b + 40, 8, false);
	t->nuids = (size_t)kcore_load(b + 48, 8, false);
	if (t->ndirs < 1 || t->ndirs > CH_TOTALS_MAX_UIDS + 1 ||
	    t->nuids > CH_TOTALS_MAX_UIDS)
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

		ch_totals_free(t);
		t->gen = gen;
	}
	return ok;
}

/* Whether the store's directories are as the totals left them. */
bool ch_totals_current(int dir_fd, const struct ch_totals *t)
{
	int64_t now = realtime_s();

	if (!t->looked || (int64_t)t->looked > now ||
	    now - (int64_t)t->looked >= CH_TOTALS_RECHECK_S)
		return false;
	for (size_t i = 0; i < t->ndirs; i++) {
		struct coredir_stamp st;

		if (!kcore_coredir_stamp(dir_fd, t->dirs[i].uid, &st) ||
		    st.ino != t->dirs[i].ino ||
		    st.mtime_ns != t->dirs[i].mtime_ns)
			return false;
	}
	return true;
}

/* Write them back, with the directories' mtimes after our changes. */
void ch_totals_store(int lock_fd, int dir_fd, struct ch_totals *t)
{
	size_t words = 7 + 3 * t->ndirs + 3 * t->nuids;
	unsigned char *b;

	for (size_t i = 0; i < t->ndirs; i++)
		if (!kcore_coredir_stamp(dir_fd, t->dirs[i].uid, &t->dirs[i]))
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
	if (pwrite(lock_fd, b, 8 * (words + 1), 0) !=
	    (ssize_t)(8 * (words + 1)))
		kcore_store_le(b, 0, 8); /* a best effort: the next looks */
	free(b);
}

struct ch_totals_uid *ch_totals_uid(struct ch_totals *t, int64_t uid, bool add)
{
	struct ch_totals_uid *u;

	for (size_t i = 0; i < t->nuids; i++)
		if (t->uids[i].uid == uid)
			return &t->uids[i];
	if (!add)
		return NULL;
	if (t->nuids >= CH_TOTALS_MAX_UIDS) {
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
void ch_totals_add(struct ch_totals *t, int64_t uid, uint64_t cores,
		   uint64_t bytes, bool remove)
{
	struct ch_totals_uid *u = cores ? ch_totals_uid(t, uid, !remove) : NULL;

	t->bytes = remove ? sub_sat(t->bytes, bytes) : t->bytes + bytes;
	t->cores = remove ? sub_sat(t->cores, cores) : t->cores + cores;
	if (u) {
		u->bytes = remove ? sub_sat(u->bytes, bytes) : u->bytes + bytes;
		u->cores = remove ? sub_sat(u->cores, cores) : u->cores + cores;
	}
}

/* The totals of a full look (its entries not removed). */
bool ch_totals_from_scan(const struct coredir_scan *sc, struct ch_totals *t)
{
	uint64_t gen = t->gen;

	ch_totals_free(t);
	t->gen = gen;
	t->looked = (uint64_t)realtime_s();
	t->dirs = calloc(sc->ndfds ? sc->ndfds : 1, sizeof(*t->dirs));
	if (!t->dirs)
		return false;
	memcpy(t->dirs, sc->stamps, sc->ndfds * sizeof(*t->dirs));
	t->ndirs = sc->ndfds;
	if (t->ndirs > CH_TOTALS_MAX_UIDS + 1) {
		t->ndirs = CH_TOTALS_MAX_UIDS + 1;
		t->too_many = true;
	}
	for (size_t i = 0; i < sc->n; i++) {
		const struct coredir_entry *e = &sc->e[i];

		if (!e->removed)
			ch_totals_add(t, e->uid, e->kind >= COREDIR_FOREIGN,
				      e->bytes, false);
	}
	t->valid = true;
	return true;
}
