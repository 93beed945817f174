// SPDX-License-Identifier: MIT
/*
 * The directory of stored cores: opening it safely, listing the cores by
 * their metadata files, and removing the oldest for the size limits.
 * Everything goes through the directory's descriptor with O_NOFOLLOW /
 * AT_SYMLINK_NOFOLLOW: a symlink planted in the directory is never
 * followed, read through, or removed through.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coredir.h"

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

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A JSON string starting after its opening quote; NULL if malformed. */
static char *json_string(const char *p)
{
	size_t len = strlen(p);
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (; *p && *p != '"'; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		p++;
		switch (*p) {
		case 'n':
			*o++ = '\n';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'u': {
			int v = 0;

			for (int i = 1; i <= 4; i++) {
				int h = hexval(p[i]);

				if (h < 0) {
					free(out);
					return NULL;
				}
				v = v * 16 + h;
			}
			/* We only write \u00XX for control bytes. */
			*o++ = v < 256 ? (char)v : '?';
			p += 4;
			break;
		}
		case '\0':
			free(out);
			return NULL;
		default:
			*o++ = *p;
		}
	}
	if (*p != '"') {
		free(out);
		return NULL;
	}
	*o = '\0';
	return out;
}

/*
 * Our metadata has one top-level member per line, indented by two
 * spaces: pick the members we know from those lines.
 */
static void parse_meta(struct kcore_stored_core *c, char *text)
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
					      : NULL;

			if (slot && !*slot)
				*slot = json_string(val + 1);
			continue;
		}
		if (strcmp(key, "pid") == 0)
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

static char *read_small(int dir_fd, const char *name)
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

static uint64_t allocated(int dir_fd, const char *name)
{
	struct stat st;

	if (!name || fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_blocks * 512;
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

static void stored_core_deinit(struct kcore_stored_core *c)
{
	free(c->meta_name);
	free(c->core_name);
	free(c->exe);
	free(c->comm);
	free(c->reason);
	free(c->json);
}

struct kcore_error *kcore_coredir_list(int dir_fd,
				       struct kcore_stored_core **ret,
				       size_t *ret_count)
{
	struct kcore_stored_core *cores = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot read the core directory");
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return &kcore_error_nomem;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct kcore_stored_core *c;
		char *text, *copy;

		if (!kcore_coredir_name_ok(de->d_name) || len < 6 ||
		    strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		text = read_small(dir_fd, de->d_name);
		if (!text)
			continue;
		if (!strstr(text, "\"kcoredump_metadata\"")) {
			free(text);
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct kcore_stored_core *m =
				realloc(cores, ncap * sizeof(*m));

			if (!m) {
				free(text);
				goto nomem;
			}
			cores = m;
			cap = ncap;
		}
		c = &cores[n];
		memset(c, 0, sizeof(*c));
		c->pid = c->uid = c->gid = c->signal = -1;
		c->json = text;
		c->meta_name = strdup(de->d_name);
		copy = strdup(text);
		if (!c->meta_name || !copy) {
			free(copy);
			stored_core_deinit(c);
			goto nomem;
		}
		parse_meta(c, copy);
		free(copy);
		n++;
		if (!kcore_coredir_name_ok(c->core_name)) {
			free(c->core_name);
			c->core_name = NULL;
		}
		c->allocated_bytes = allocated(dir_fd, c->core_name);
		c->core_present =
			c->core_name && faccessat(dir_fd, c->core_name, F_OK,
						  AT_SYMLINK_NOFOLLOW) == 0;
	}
	closedir(d);
	if (n)
		qsort(cores, n, sizeof(*cores), cmp_cores);
	*ret = cores;
	*ret_count = n;
	return NULL;
nomem:
	closedir(d);
	kcore_stored_cores_free(cores, n);
	return &kcore_error_nomem;
}

void kcore_stored_cores_free(struct kcore_stored_core *cores, size_t count)
{
	for (size_t i = 0; i < count; i++)
		stored_core_deinit(&cores[i]);
	free(cores);
}

uint64_t kcore_coredir_usage(int dir_fd, const struct kcore_stored_core *c)
{
	return allocated(dir_fd, c->core_name) +
	       allocated(dir_fd, c->meta_name);
}

/* Only regular files are removed: unlinkat() never follows a symlink,
 * and a symlink or directory with our name is left alone. */
static void remove_file(int dir_fd, const char *name)
{
	struct stat st;

	if (name && kcore_coredir_name_ok(name) &&
	    fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		unlinkat(dir_fd, name, 0);
}

void kcore_coredir_remove(int dir_fd, const struct kcore_stored_core *c)
{
	/* The core first: metadata without a core is still listed. */
	remove_file(dir_fd, c->core_name);
	remove_file(dir_fd, c->meta_name);
}
