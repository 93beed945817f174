// SPDX-License-Identifier: MIT
/*
 * The input formats: one reader each (kcore_reader_ops, source-impl.h), the
 * only place that maps a file's first bytes to a format's code, and
 * kcore_source_open(), which opens a file with the reader they name; the
 * mirror of writers.c.  A live process is a reader of its own
 * (process/process.c), opened by pid, not by probing.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "read.h"
#include "source-impl.h"

#define PROC_SUPER_MAGIC 0x9fa0

/* Tried in order; the ELF reader is also the default. */
static const struct kcore_reader_ops *const readers[] = {
	&kcore_read_elf,  &kcore_read_kdump, &kcore_read_flattened,
	&kcore_read_lime, &kcore_read_avml,  &kcore_read_stream,
};

const struct kcore_reader_ops *kcore_reader_probe(const unsigned char *magic,
						  size_t len)
{
	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
		if (readers[i]->probe(magic, len))
			return readers[i];
	return &kcore_read_elf; /* its parser explains what is wrong */
}

/* What the readers' table says of a source's format. */
const char *kcore_source_format_title(const struct kcore_source *src)
{
	if (src->format_title)
		return src->format_title;
	if (!src->format_name && src->reader->title)
		return src->reader->title;
	return kcore_source_format(src);
}

const char *kcore_source_format_no_digests(const struct kcore_source *src)
{
	return src->reader->no_digests;
}

bool kcore_source_is_elf(const struct kcore_source *src)
{
	return src->reader == &kcore_read_elf;
}

int kcore_source_splice_fd(const struct kcore_source *src)
{
	return src->reader == &kcore_read_elf && !src->image &&
			       src->io == &kcore_io_default
		       ? src->fd
		       : -1;
}

static struct kcore_error *open_format(struct kcore_source *src, bool *found)
{
	unsigned char magic[64];
	size_t done = 0;
	struct kcore_error *err;

	*found = false;
	err = kcore_pread_all(src->io, src->fd, src->path, magic, sizeof(magic),
			      0, &done);
	if (err) {
		if (err->code != KCORE_ERR_FORMAT)
			return err;
		kcore_error_destroy(err); /* short file: probe what is there */
	}
	src->reader = kcore_reader_probe(magic, done);
	if (!src->reader->open)
		return NULL; /* the file is the image */
	*found = true;
	return src->reader->open(src);
}

struct kcore_error *kcore_source_open(const char *path,
				      const struct kcore_open_opts *opts,
				      struct kcore_source **ret)
{
	static const struct kcore_open_opts no_opts;
	struct kcore_source *src;
	struct kcore_error *err;
	struct statfs sfs;
	struct stat st;
	bool live, other_format;

	if (!opts)
		opts = &no_opts;
	err = kcore_source_alloc(path, opts, &src);
	if (err)
		return err;
	src->reader = &kcore_read_elf;
	src->abs_path = kcore_absolute_path(path);
	if (!src->abs_path) {
		kcore_source_destroy(src);
		return &kcore_error_nomem;
	}
	src->info.abs_path = src->abs_path;
	src->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (src->fd < 0) {
		err = kcore_explain_open_error(
			path, errno,
			opts->force_live || strcmp(path, "/proc/kcore") == 0,
			opts->sysroot);
		goto fail;
	}
	if (fstat(src->fd, &st) < 0) {
		err = kcore_error_create(KCORE_ERR_OS, errno, path,
					 "cannot stat");
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		err = kcore_error_create(KCORE_ERR_UNSUPPORTED, EISDIR, path,
					 "not a core file");
		goto fail;
	}
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
		/* Every format needs random access, even a flattened kdump
		 * (its records are indexed, not replayed). */
		err = kcore_error_create(KCORE_ERR_UNSUPPORTED, ESPIPE, path,
					 "is a pipe: a source must be a file "
					 "(save the stream first; a flattened "
					 "kdump can also be rearranged with "
					 "makedumpfile -R)");
		goto fail;
	}
	live = opts->force_live ||
	       (fstatfs(src->fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC);
	src->info.is_regular = S_ISREG(st.st_mode) && !live;
	src->info.file_size = (uint64_t)st.st_size;
	src->info.file_blocks = (uint64_t)st.st_blocks * 512;
	if (live)
		src->info.kind = KCORE_SOURCE_LIVE_KCORE;
	if (!live) {
		err = open_format(src, &other_format);
		if (err)
			goto fail;
		if (other_format)
			src->info.is_regular = false;
	}
	err = kcore_source_parse(src, live, opts);
	if (err)
		goto fail;
	/* A LiME or AVML image took it or refused it (detect.c). */
	if (opts->machine != EM_NONE && src->info.machine != opts->machine) {
		char b1[32], b2[32];
		const char *given =
			kcore_machine_str(opts->machine, b1, sizeof(b1));
		const char *is =
			kcore_machine_str(src->info.machine, b2, sizeof(b2));

		err = src->image
			      ? kcore_error_create(KCORE_ERR_INVALID, 0, path,
						   "--arch %s, but its header "
						   "names %s",
						   given, is)
			      : kcore_error_create_at(
					KCORE_ERR_INVALID, 0, path,
					offsetof(Elf64_Ehdr, e_machine),
					"--arch %s, but its ELF header names "
					"%s",
					given, is);
		goto fail;
	}
	*ret = src;
	return NULL;
fail:
	kcore_source_destroy(src);
	return err;
}
