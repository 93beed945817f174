/* SPDX-License-Identifier: MIT */
/*
 * The core directory's helpers shared inside libkcore; not installed.
 *
 * What the store holds, for the limits: every core with its metadata,
 * from the top directory and the per-user directories (user.UID).  Only
 * metadata owned by us is believed; the sizes come from fstatat() of the
 * files themselves, never from what a metadata file says.
 */
#ifndef KCOREDUMP_COREDIR_H
#define KCOREDUMP_COREDIR_H

#include <stddef.h>
#include <stdint.h>

#include "kcoredump/corehandler.h"

/* "core." followed by anything without '/'. */
bool kcore_coredir_name_ok(const char *name);

/* The order in which the limits remove entries. */
enum coredir_kind {
	COREDIR_ORPHAN_TMP,  /* a temporary file whose writer is gone */
	COREDIR_ORPHAN_CORE, /* a core without metadata */
	COREDIR_FOREIGN,     /* files not ours (an older --owner user) */
	COREDIR_CORE,	     /* a core (or its metadata alone) */
};

struct coredir_entry {
	int dfd;	   /* the scan's descriptor of its directory */
	char *core, *meta; /* names in dfd; either may be NULL */
	uint64_t bytes;	   /* allocated bytes of both */
	int64_t uid;	   /* the crashing uid, -1 if not known */
	int64_t time;	   /* the crash time (else the mtime) */
	uint64_t core_ino, meta_ino; /* as the scan saw them */
	enum coredir_kind kind;
	bool removed;
	bool existed; /* kcore_coredir_remove() found a file of it */
};

/* A directory of the scan as it was before it was read: a change of its
 * entries (a file made, renamed or removed) moves its mtime. */
struct coredir_stamp {
	int64_t uid; /* user.UID, or -1 for the top directory */
	uint64_t ino;
	int64_t mtime_ns;
};

struct coredir_scan {
	int *dfds; /* [0]: the top directory (not ours to close) */
	size_t ndfds;
	struct coredir_stamp *stamps; /* one per dfds[] */
	struct coredir_entry *e;
	size_t n, cap;
	uint64_t total; /* bytes of the entries not removed */
	size_t next;	/* kcore_coredir_next_victim()'s position */
	bool ordered;
};

struct kcore_error *kcore_coredir_scan(int dir_fd, struct coredir_scan *ret);
void kcore_coredir_scan_free(struct coredir_scan *s);
/* The next entry to remove (orphans, foreign files, then the oldest core
 * of the uid with the most cores, as systemd-coredump's vacuum does), or
 * NULL. */
struct coredir_entry *kcore_coredir_next_victim(struct coredir_scan *s);
/* The next entry of uid to remove (its files not ours first, then its
 * oldest core), or NULL. */
struct coredir_entry *kcore_coredir_next_victim_uid(struct coredir_scan *s,
						    int64_t uid);
/* Remove the entry's regular files that are still the ones the scan saw
 * (same inode): the bytes they took then (e->existed: one was there). */
uint64_t kcore_coredir_remove(struct coredir_scan *s, struct coredir_entry *e);
/* The stamp of a directory now (fstat of dir_fd for uid -1, else of its
 * user.UID); false if it is not there. */
bool kcore_coredir_stamp(int dir_fd, int64_t uid, struct coredir_stamp *ret);

/* ---- shared by coredir.c and coredir-scan.c ---- */
struct stat;
/* The directories to look at: dir_fd itself, then every user.UID. */
struct coredir_dirs {
	int *fds;
	char **names; /* NULL for the top */
	size_t n;
};
struct kcore_error *kcore_coredir_find_dirs(int dir_fd,
					    struct coredir_dirs *ret);
void kcore_coredir_dirs_free(struct coredir_dirs *d);
/* Each name in fd, as a NULL-terminated malloc()ed array. */
struct kcore_error *kcore_coredir_read_names(int fd, char ***ret,
					     size_t *ret_n);
void kcore_coredir_free_names(char **names, size_t n);
/* strcmp() of two char *s, for qsort() and bsearch(). */
int kcore_coredir_cmp_str(const void *a, const void *b);
bool kcore_coredir_has_suffix(const char *s, const char *suffix);
/* The core beside metadata meta ("BASE.json") among the sorted names,
 * or NULL: pairing goes by name only. */
char **kcore_coredir_paired_core(const char *meta, char **names, size_t n);
/* The allocated bytes of a regular file name in dir_fd (0: none). */
uint64_t kcore_coredir_allocated(int dir_fd, const char *name,
				 struct stat *ret);
/* A small regular file's text, and its stat (owner, size); NULL if it is
 * not one. */
char *kcore_coredir_read_small(int dir_fd, const char *name,
			       struct stat *ret_st);
/* The members of our metadata text (one a line) that c keeps. */
void kcore_coredir_parse_meta(struct kcore_stored_core *c, char *text);
void kcore_coredir_core_deinit(struct kcore_stored_core *c);

/* The per-user directory's name, "user.UID". */
#define KCORE_COREDIR_USER_PREFIX "user."
/* Open user.UID in dir_fd (made 0700 first with create); -1 with errno. */
int kcore_coredir_user_dir(int dir_fd, uint32_t uid, bool create);

#endif
