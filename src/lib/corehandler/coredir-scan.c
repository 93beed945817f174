// SPDX-License-Identifier: MIT
/*
 * What the store's limits see of the core directory (coredir.h): every
 * core with its metadata, in the directory and its user.UID directories,
 * in the order the limits remove them (as systemd-coredump's vacuum:
 * orphans first, then the oldest core of the uid with the most), and
 * removing one.  Only regular files the scan saw are removed, never
 * through a symlink; only metadata owned by us is believed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coredir.h"
#include "kcoredump/output.h"

static struct kcore_error *scan_add(struct coredir_scan *s,
				    const struct coredir_entry *e)
{
	if (s->n == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 16;
		struct coredir_entry *m = realloc(s->e, c * sizeof(*m));

		if (!m)
			return &kcore_error_nomem;
		s->e = m;
		s->cap = c;
	}
	s->e[s->n++] = *e;
	s->total += e->bytes;
	return NULL;
}

static struct kcore_error *scan_dir(struct coredir_scan *s, int fd)
{
	struct kcore_error *err;
	char **names;
	size_t count;
	bool *used;

	err = kcore_coredir_read_names(fd, &names, &count);
	if (err)
		return err;
	if (count)
		qsort(names, count, sizeof(*names), kcore_coredir_cmp_str);
	used = calloc(count ? count : 1, sizeof(*used));
	if (!used) {
		kcore_coredir_free_names(names, count);
		return &kcore_error_nomem;
	}
	/* Metadata first, each with the core beside it. */
	for (size_t i = 0; !err && i < count; i++) {
		struct coredir_entry e = { .dfd = fd, .uid = -1 };
		struct stat ms = { 0 }, cs = { 0 };
		char **core;
		char *text;

		if (!kcore_coredir_name_ok(names[i]) ||
		    !kcore_coredir_has_suffix(names[i], ".json"))
			continue;
		used[i] = true;
		core = kcore_coredir_paired_core(names[i], names, count);
		if (core)
			used[core - names] = true;
		e.meta = strdup(names[i]);
		e.core = core ? strdup(*core) : NULL;
		if (!e.meta || (core && !e.core)) {
			free(e.meta);
			free(e.core);
			err = &kcore_error_nomem;
			break;
		}
		e.bytes = kcore_coredir_allocated(fd, e.meta, &ms) +
			  kcore_coredir_allocated(fd, e.core, &cs);
		e.meta_ino = ms.st_ino;
		e.core_ino = cs.st_ino;
		text = kcore_coredir_read_small(fd, e.meta, &ms);
		e.time = ms.st_mtime;
		e.kind = COREDIR_FOREIGN;
		/* Only our own metadata is believed (and not a hard link
		 * someone made to a file of ours). */
		if (text && ms.st_uid == geteuid() && ms.st_nlink == 1 &&
		    (!e.core || cs.st_uid == geteuid())) {
			struct kcore_stored_core c = { .uid = -1, .time = -1 };

			kcore_coredir_parse_meta(&c, text);
			e.kind = COREDIR_CORE;
			e.uid = c.uid;
			if (c.time >= 0)
				e.time = c.time;
			kcore_coredir_core_deinit(&c);
		} else {
			e.uid = ms.st_uid;
		}
		free(text);
		err = scan_add(s, &e);
		if (err) {
			free(e.meta);
			free(e.core);
		}
	}
	/* Then what no metadata describes. */
	for (size_t i = 0; !err && i < count; i++) {
		struct coredir_entry e = { .dfd = fd, .uid = -1 };
		struct stat st = { 0 };
		uint64_t size;

		if (used[i])
			continue;
		if (names[i][0] == '.') {
			if (!kcore_output_orphan(fd, names[i], &size))
				continue;
			e.kind = COREDIR_ORPHAN_TMP;
			e.bytes = size;
		} else if (kcore_coredir_name_ok(names[i])) {
			e.bytes = kcore_coredir_allocated(fd, names[i], &st);
			if (!S_ISREG(st.st_mode))
				continue;
			e.kind = st.st_uid == geteuid() ? COREDIR_ORPHAN_CORE
							: COREDIR_FOREIGN;
			e.core_ino = st.st_ino;
			e.uid = st.st_uid;
			e.time = st.st_mtime;
		} else {
			continue;
		}
		e.core = strdup(names[i]);
		if (!e.core)
			err = &kcore_error_nomem;
		if (!err)
			err = scan_add(s, &e);
		if (err)
			free(e.core);
	}
	free(used);
	kcore_coredir_free_names(names, count);
	return err;
}

struct kcore_error *kcore_coredir_scan(int dir_fd, struct coredir_scan *ret)
{
	struct kcore_error *err;
	struct coredir_dirs d;

	struct coredir_stamp top;

	memset(ret, 0, sizeof(*ret));
	/* The stamps before the names are read: a change while they are
	 * read shows as a later mtime. */
	if (!kcore_coredir_stamp(dir_fd, -1, &top))
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot stat the core directory");
	err = kcore_coredir_find_dirs(dir_fd, &d);
	if (err)
		return err;
	ret->stamps = calloc(d.n, sizeof(*ret->stamps));
	if (!ret->stamps) {
		kcore_coredir_dirs_free(&d);
		return &kcore_error_nomem;
	}
	ret->stamps[0] = top;
	for (size_t i = 1; i < d.n; i++) {
		struct stat st;
		const char *uid =
			d.names[i] + strlen(KCORE_COREDIR_USER_PREFIX);

		ret->stamps[i].uid = strtoll(uid, NULL, 10);
		if (fstat(d.fds[i], &st) == 0) {
			ret->stamps[i].ino = st.st_ino;
			ret->stamps[i].mtime_ns =
				(int64_t)st.st_mtim.tv_sec * 1000000000 +
				st.st_mtim.tv_nsec;
		}
		free(d.names[i]);
	}
	free(d.names);
	ret->dfds = d.fds;
	ret->ndfds = d.n;
	for (size_t i = 0; !err && i < d.n; i++)
		err = scan_dir(ret, d.fds[i]);
	if (err)
		kcore_coredir_scan_free(ret);
	return err;
}

void kcore_coredir_scan_free(struct coredir_scan *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].core);
		free(s->e[i].meta);
	}
	free(s->e);
	for (size_t i = 1; i < s->ndfds; i++)
		close(s->dfds[i]);
	free(s->dfds);
	free(s->stamps);
	memset(s, 0, sizeof(*s));
}

static int cmp_victims(const void *a, const void *b)
{
	const struct coredir_entry *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->kind == COREDIR_CORE && x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return 0;
}

struct coredir_entry *kcore_coredir_next_victim(struct coredir_scan *s)
{
	struct coredir_entry *best = NULL;
	size_t best_n = 0;

	if (!s->ordered) {
		if (s->n)
			qsort(s->e, s->n, sizeof(*s->e), cmp_victims);
		s->ordered = true;
	}
	while (s->next < s->n && s->e[s->next].kind != COREDIR_CORE) {
		if (!s->e[s->next].removed)
			return &s->e[s->next];
		s->next++;
	}
	/* The cores, grouped by uid and oldest first in each group: the
	 * oldest of the uid with the most cores left. */
	for (size_t i = s->next; i < s->n;) {
		size_t j = i, left = 0;
		struct coredir_entry *first = NULL;

		while (j < s->n && s->e[j].uid == s->e[i].uid) {
			if (!s->e[j].removed) {
				left++;
				if (!first)
					first = &s->e[j];
			}
			j++;
		}
		if (first && (left > best_n ||
			      (left == best_n && first->time < best->time))) {
			best = first;
			best_n = left;
		}
		i = j;
	}
	return best;
}

struct coredir_entry *kcore_coredir_next_victim_uid(struct coredir_scan *s,
						    int64_t uid)
{
	if (!s->ordered) {
		if (s->n)
			qsort(s->e, s->n, sizeof(*s->e), cmp_victims);
		s->ordered = true;
	}
	/* Sorted by kind, then (cores) by uid and time: the first one. */
	for (size_t i = 0; i < s->n; i++)
		if (!s->e[i].removed && s->e[i].uid == uid &&
		    s->e[i].kind >= COREDIR_FOREIGN)
			return &s->e[i];
	return NULL;
}

/* Only regular files are removed, and only the one the scan saw:
 * unlinkat() never follows a symlink, and a symlink or directory with
 * our name is left alone.  The bytes it took. */
static uint64_t remove_file(int dir_fd, const char *name, uint64_t ino,
			    bool *found)
{
	struct stat st;

	if (name && fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && (!ino || st.st_ino == ino) &&
	    unlinkat(dir_fd, name, 0) == 0) {
		*found = true;
		return (uint64_t)st.st_blocks * 512;
	}
	return 0;
}

uint64_t kcore_coredir_remove(struct coredir_scan *s, struct coredir_entry *e)
{
	uint64_t b;

	if (e->removed)
		return 0;
	/* The core first: metadata without a core is still listed. */
	e->existed = false;
	b = remove_file(e->dfd, e->core, e->core_ino, &e->existed);
	b += remove_file(e->dfd, e->meta, e->meta_ino, &e->existed);
	e->removed = true;
	s->total -= e->bytes < s->total ? e->bytes : s->total;
	return b;
}

bool kcore_coredir_stamp(int dir_fd, int64_t uid, struct coredir_stamp *ret)
{
	struct stat st;
	char name[32];

	if (uid < 0) {
		if (fstat(dir_fd, &st) < 0)
			return false;
	} else {
		snprintf(name, sizeof(name),
			 KCORE_COREDIR_USER_PREFIX "%" PRId64, uid);
		if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			return false;
	}
	ret->uid = uid;
	ret->ino = st.st_ino;
	ret->mtime_ns =
		(int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return true;
}
