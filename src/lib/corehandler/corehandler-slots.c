// SPDX-License-Identifier: MIT
/*
 * The handler slots and the store lock (corehandler-slots.h): the small
 * files of ours in the store through which the handlers running at once
 * share its limits (the design is in corehandler-vacuum.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "coredir.h"
#include "corehandler-slots.h"
#include "corehandler-vacuum.h"

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

void ch_slot_write(struct ch *ch)
{
	struct ch_store *s = &ch->store;
	uint64_t v[4] = { SLOT_MAGIC, s->reserved, ch->stored,
			  (uint64_t)getpid() };

	if (s->slot_fd >= 0)
		put_u64s(s->slot_fd, v, 4);
}

/* The store lock, waited for a bounded time: a stuck handler must not
 * hold every other one up. */
bool ch_store_lock(struct ch *ch)
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

void ch_store_unlock(struct ch *ch)
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
	locked = ch_store_lock(ch);
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
			ch_slot_write(ch);
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
		ch_store_unlock(ch);
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
void ch_slots_others(struct ch *ch, uint64_t *ret_reserved,
		     uint64_t *ret_pending)
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
