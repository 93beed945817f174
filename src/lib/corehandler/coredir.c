// SPDX-License-Identifier: MIT
/*
 * The directory of stored cores: opening it safely, walking it (the
 * directory and its user.UID directories, each core paired with its
 * metadata by name), and listing the cores by their metadata files; what
 * the size limits see of it is coredir-scan.c's.  Everything goes
 * through directory descriptors with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW: a
 * symlink planted in the directory is never followed, read through, or
 * removed through.
 */
#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "coredir.h"
#include "kcoredump/json.h"
#include "kcoredump/output.h"

/* A metadata file larger than this is not ours. */
#define MAX_META_SIZE (4u << 20)

struct kcore_error *kcore_coredir_open(const char *path, bool create,
				       int *ret_fd)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return kcore_error_create(
				errno == EACCES || errno == EPERM
					? KCORE_ERR_ACCESS
					: KCORE_ERR_OS,
				errno, path, "cannot create the directory");
		fd = open(path,
			  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		int e = errno;

		if ((e == ELOOP || e == ENOTDIR) && lstat(path, &st) == 0 &&
		    S_ISLNK(st.st_mode))
			return kcore_error_create(KCORE_ERR_ACCESS, 0, path,
						  "is a symbolic link; "
						  "refusing to follow it");
		return kcore_error_create(e == ENOENT	? KCORE_ERR_NOT_FOUND
					  : e == EACCES ? KCORE_ERR_ACCESS
							: KCORE_ERR_OS,
					  e, path, "cannot open the directory");
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return kcore_error_create(KCORE_ERR_OS, e, path, "cannot stat");
	}
	/* Someone else able to write here could swap files under us. */
	if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return kcore_error_create(KCORE_ERR_ACCESS, 0, path,
					  "is writable by others than root "
					  "and its owner (mode %04o, uid %u); "
					  "refusing to store cores there",
					  (unsigned)(st.st_mode & 07777),
					  (unsigned)st.st_uid);
	}
	*ret_fd = fd;
	return NULL;
}

/*
 * Our metadata has one top-level member per line, indented by two
 * spaces: pick the members we know from those lines.
 */
void kcore_coredir_parse_meta(struct kcore_stored_core *c, char *text)
{
	for (char *line = text, *next; line; line = next) {
		char *key, *val, *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "  \"", 3) != 0)
			continue;
		key = line + 3;
		end = strchr(key, '"');
		if (!end || strncmp(end, "\": ", 3) != 0)
			continue;
		*end = '\0';
		val = end + 3;
		if (*val == '"') {
			char **slot = strcmp(key, "core") == 0 ? &c->core_name
				      : strcmp(key, "executable") == 0 ? &c->exe
				      : strcmp(key, "comm") == 0 ? &c->comm
				      : strcmp(key, "truncation_reason") == 0
					      ? &c->reason
				      : strcmp(key, "crash_frame") == 0
					      ? &c->crash_frame
					      : NULL;

			const char *v = val;

			if (slot && !*slot)
				*slot = kcore_json_unescape(&v, v + strlen(v));
			continue;
		}
		if (strcmp(key, "journal_entry") == 0)
			c->journal_entry = strncmp(val, "true", 4) == 0;
		else if (strcmp(key, "pid") == 0)
			c->pid = strtoll(val, NULL, 10);
		else if (strcmp(key, "time") == 0)
			c->time = strtoll(val, NULL, 10);
		else if (strcmp(key, "uid") == 0)
			c->uid = strtoll(val, NULL, 10);
		else if (strcmp(key, "gid") == 0)
			c->gid = strtoll(val, NULL, 10);
		else if (strcmp(key, "signal") == 0)
			c->signal = strtoll(val, NULL, 10);
		else if (strcmp(key, "stream_bytes") == 0)
			c->stream_bytes = strtoull(val, NULL, 10);
		else if (strcmp(key, "file_size") == 0)
			c->file_size = strtoull(val, NULL, 10);
	}
}

/* A small regular file's text, and its stat (owner, size). */
char *kcore_coredir_read_small(int dir_fd, const char *name,
			       struct stat *ret_st)
{
	int fd = openat(dir_fd, name,
			O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
				O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t len = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > MAX_META_SIZE)
		goto out;
	if (ret_st)
		*ret_st = st;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto out;
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
out:
	close(fd);
	return buf;
}

/* A name we may have written: "core.", no '/', not "." or "..". */
bool kcore_coredir_name_ok(const char *name)
{
	return name && strncmp(name, "core.", 5) == 0 && !strchr(name, '/');
}

static int cmp_cores(const void *a, const void *b)
{
	const struct kcore_stored_core *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return strcmp(x->meta_name, y->meta_name);
}

void kcore_coredir_core_deinit(struct kcore_stored_core *c)
{
	free(c->meta_name);
	free(c->core_name);
	free(c->exe);
	free(c->comm);
	free(c->reason);
	free(c->crash_frame);
	free(c->json);
	free(c->subdir);
}

/* A directory of ours under dir_fd (no symlink, writable by nobody else). */
static int open_subdir(int dir_fd, const char *name)
{
	int fd = openat(dir_fd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool user_dir_name(const char *name)
{
	const char *p = name + strlen(KCORE_COREDIR_USER_PREFIX);

	if (strncmp(name, KCORE_COREDIR_USER_PREFIX,
		    strlen(KCORE_COREDIR_USER_PREFIX)) != 0 ||
	    !*p)
		return false;
	return strspn(p, "0123456789") == strlen(p) && strlen(p) <= 10;
}

int kcore_coredir_user_dir(int dir_fd, uint32_t uid, bool create)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), KCORE_COREDIR_USER_PREFIX "%" PRIu32, uid);
	if (create && mkdirat(dir_fd, name, 0700) < 0 && errno != EEXIST)
		return -1;
	fd = open_subdir(dir_fd, name);
	if (fd < 0 && errno == 0)
		errno = EACCES;
	return fd;
}

void kcore_coredir_dirs_free(struct coredir_dirs *d)
{
	for (size_t i = 1; i < d->n; i++) {
		close(d->fds[i]);
		free(d->names[i]);
	}
	free(d->fds);
	free(d->names);
	memset(d, 0, sizeof(*d));
}

static struct kcore_error *dirs_add(struct coredir_dirs *d, int fd, char *name)
{
	int *f = realloc(d->fds, (d->n + 1) * sizeof(*f));
	char **nm;

	if (f)
		d->fds = f;
	nm = f ? realloc(d->names, (d->n + 1) * sizeof(*nm)) : NULL;
	if (!f || !nm)
		return &kcore_error_nomem;
	d->names = nm;
	d->fds[d->n] = fd;
	d->names[d->n++] = name;
	return NULL;
}

/* Each name in fd, as a NULL-terminated malloc()ed array. */
struct kcore_error *kcore_coredir_read_names(int fd, char ***ret, size_t *ret_n)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (dfd < 0)
		return kcore_error_create(
			errno == EACCES ? KCORE_ERR_ACCESS : KCORE_ERR_OS,
			errno, NULL, "cannot read the core directory");
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return &kcore_error_nomem;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n + 1 >= cap) {
			size_t c = cap ? 2 * cap : 64;
			char **m = realloc(names, c * sizeof(*m));

			if (!m)
				goto nomem;
			names = m;
			cap = c;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			goto nomem;
		n++;
	}
	closedir(d);
	if (names)
		names[n] = NULL;
	*ret = names;
	*ret_n = n;
	return NULL;
nomem:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return &kcore_error_nomem;
}

void kcore_coredir_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

struct kcore_error *kcore_coredir_find_dirs(int dir_fd,
					    struct coredir_dirs *ret)
{
	struct kcore_error *err;
	char **names;
	size_t n;

	memset(ret, 0, sizeof(*ret));
	err = dirs_add(ret, dir_fd, NULL);
	if (err)
		return err;
	err = kcore_coredir_read_names(dir_fd, &names, &n);
	if (err) {
		kcore_coredir_dirs_free(ret);
		return err;
	}
	for (size_t i = 0; !err && i < n; i++) {
		int fd;

		if (!user_dir_name(names[i]))
			continue;
		fd = open_subdir(dir_fd, names[i]);
		if (fd < 0)
			continue;
		err = dirs_add(ret, fd, names[i]);
		if (err)
			close(fd);
		else
			names[i] = NULL;
	}
	kcore_coredir_free_names(names, n);
	if (err)
		kcore_coredir_dirs_free(ret);
	return err;
}

uint64_t kcore_coredir_allocated(int dir_fd, const char *name, struct stat *ret)
{
	struct stat st;

	if (!name || fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if (ret)
		*ret = st;
	return (uint64_t)st.st_blocks * 512;
}

bool kcore_coredir_has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int kcore_coredir_cmp_str(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(*x, *y);
}

/*
 * The core beside metadata meta ("BASE.json"): BASE, BASE.zst or BASE.xz
 * among the sorted names, or NULL.  Pairing goes by name only: what a
 * metadata file says cannot point at another file.
 */
char **kcore_coredir_paired_core(const char *meta, char **names, size_t n)
{
	static const char *const suffixes[] = { "", ".zst", ".xz" };
	size_t blen = strlen(meta) - 5;
	char name[512];

	if (blen + 5 > sizeof(name))
		return NULL;
	for (size_t i = 0; i < 3; i++) {
		const char *key = name;
		char **hit;

		memcpy(name, meta, blen);
		strcpy(name + blen, suffixes[i]);
		hit = bsearch(&key, names, n, sizeof(*names),
			      kcore_coredir_cmp_str);
		if (hit)
			return hit;
	}
	return NULL;
}

static struct kcore_error *list_dir(int fd, const char *subdir,
				    struct kcore_stored_core **cores, size_t *n,
				    size_t *cap)
{
	struct kcore_error *err;
	char **names;
	size_t count;

	err = kcore_coredir_read_names(fd, &names, &count);
	if (err)
		return err;
	if (count)
		qsort(names, count, sizeof(*names), kcore_coredir_cmp_str);
	for (size_t i = 0; i < count; i++) {
		struct kcore_stored_core *c;
		char *text, *copy, **core;

		if (!kcore_coredir_name_ok(names[i]) || strlen(names[i]) < 6 ||
		    !kcore_coredir_has_suffix(names[i], ".json"))
			continue;
		text = kcore_coredir_read_small(fd, names[i], NULL);
		if (!text)
			continue;
		if (!strstr(text, "\"kcoredump_metadata\"")) {
			free(text);
			continue;
		}
		if (*n == *cap) {
			size_t ncap = *cap ? 2 * *cap : 16;
			struct kcore_stored_core *m =
				realloc(*cores, ncap * sizeof(*m));

			if (!m) {
				free(text);
				err = &kcore_error_nomem;
				break;
			}
			*cores = m;
			*cap = ncap;
		}
		c = &(*cores)[*n];
		memset(c, 0, sizeof(*c));
		c->pid = c->uid = c->gid = c->signal = -1;
		c->journal_entry = -1;
		c->json = text;
		c->meta_name = strdup(names[i]);
		c->subdir = subdir ? strdup(subdir) : NULL;
		copy = strdup(text);
		if (!c->meta_name || !copy || (subdir && !c->subdir)) {
			free(copy);
			kcore_coredir_core_deinit(c);
			err = &kcore_error_nomem;
			break;
		}
		kcore_coredir_parse_meta(c, copy);
		free(copy);
		(*n)++;
		/* The core is the one beside it, whatever the text says. */
		core = kcore_coredir_paired_core(names[i], names, count);
		if (c->core_name && (!core || strcmp(*core, c->core_name))) {
			free(c->core_name);
			c->core_name = NULL;
		}
		c->allocated_bytes =
			kcore_coredir_allocated(fd, c->core_name, NULL);
		c->core_present =
			c->core_name && faccessat(fd, c->core_name, F_OK,
						  AT_SYMLINK_NOFOLLOW) == 0;
	}
	kcore_coredir_free_names(names, count);
	return err;
}

struct kcore_error *kcore_coredir_list(int dir_fd,
				       struct kcore_stored_core **ret,
				       size_t *ret_count)
{
	struct kcore_stored_core *cores = NULL;
	size_t n = 0, cap = 0;
	struct kcore_error *err;
	struct coredir_dirs d;

	err = kcore_coredir_find_dirs(dir_fd, &d);
	if (err)
		return err;
	for (size_t i = 0; !err && i < d.n; i++)
		err = list_dir(d.fds[i], d.names[i], &cores, &n, &cap);
	kcore_coredir_dirs_free(&d);
	if (err) {
		kcore_stored_cores_free(cores, n);
		return err;
	}
	if (n)
		qsort(cores, n, sizeof(*cores), cmp_cores);
	*ret = cores;
	*ret_count = n;
	return NULL;
}

void kcore_stored_cores_free(struct kcore_stored_core *cores, size_t count)
{
	for (size_t i = 0; i < count; i++)
		kcore_coredir_core_deinit(&cores[i]);
	free(cores);
}
