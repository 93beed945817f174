// SPDX-License-Identifier: MIT
/*
 * The output formats: one writer each (write.h), the only place that maps
 * a format to its code.  Above the writers, below the pipeline.
 */
#include <stdio.h>
#include <string.h>

#include "kcoredump/error.h"
#include "write.h"

static const struct kcore_writer_ops *const writers[KCORE_FORMAT_NUM] = {
	[KCORE_FORMAT_ELF] = &kcore_write_elf,
	[KCORE_FORMAT_KDUMP] = &kcore_write_kdump,
	[KCORE_FORMAT_LIME] = &kcore_write_lime,
	[KCORE_FORMAT_AVML] = &kcore_write_avml,
};

const struct kcore_writer_ops *kcore_writer_find(enum kcore_format f)
{
	return (unsigned)f < KCORE_FORMAT_NUM ? writers[f] : NULL;
}

const char *kcore_format_name(enum kcore_format f)
{
	return (unsigned)f < KCORE_FORMAT_NUM ? writers[f]->name : "unknown";
}

const char *kcore_format_title(enum kcore_format f)
{
	return (unsigned)f < KCORE_FORMAT_NUM ? writers[f]->title : "unknown";
}

bool kcore_format_physical(enum kcore_format f)
{
	return (unsigned)f < KCORE_FORMAT_NUM && writers[f]->physical;
}

bool kcore_format_page_codec(enum kcore_format f)
{
	return (unsigned)f < KCORE_FORMAT_NUM && writers[f]->page_codec;
}

/* Names of the writers that pass keep (all when NULL), joined. */
static const char *names(char *buf, size_t size, const char *sep,
			 const char *last_sep,
			 bool (*keep)(const struct kcore_writer_ops *ops))
{
	size_t n = 0, len = 0, total = 0;

	for (int i = 0; i < KCORE_FORMAT_NUM; i++)
		total += !keep || keep(writers[i]);
	if (size)
		buf[0] = 0;
	for (int i = 0; i < KCORE_FORMAT_NUM; i++) {
		int w;

		if (keep && !keep(writers[i]))
			continue;
		w = snprintf(buf + len, size - len, "%s%s",
			     !n		      ? ""
			     : n + 1 == total ? last_sep
					      : sep,
			     writers[i]->name);
		n++;
		if (w < 0 || (size_t)w >= size - len)
			break;
		len += (size_t)w;
	}
	return buf;
}

const char *kcore_format_names(char *buf, size_t size, const char *sep,
			       const char *last_sep)
{
	return names(buf, size, sep, last_sep, NULL);
}

static bool has_page_codec(const struct kcore_writer_ops *ops)
{
	return ops->page_codec;
}

struct kcore_error *kcore_dump_opts_settle(struct kcore_dump_opts *opts,
					   const struct kcore_opts_given *given)
{
	const struct kcore_writer_ops *ops = kcore_writer_find(opts->format);
	char buf[64];

	if (!ops)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown output format");
	if (given->codec && !ops->page_codec)
		return kcore_error_create(
			KCORE_ERR_INVALID, 0, NULL,
			"--codec is for --format %s",
			names(buf, sizeof(buf), ", ", " or ", has_page_codec));
	if (ops->check_opts)
		return ops->check_opts(opts, given);
	if (!given->compress && opts->output)
		opts->compress = kcore_compress_from_suffix(opts->output);
	return NULL;
}

int kcore_format_from_name(const char *name)
{
	for (int i = 0; i < KCORE_FORMAT_NUM; i++)
		if (strcmp(writers[i]->name, name) == 0)
			return i;
	return -1;
}

struct kcore_error *kcore_plan_for_format(struct kcore_plan *plan,
					  enum kcore_format format,
					  uint64_t page_size,
					  size_t *ret_dropped)
{
	const struct kcore_writer_ops *ops = kcore_writer_find(format);

	if (!ops)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown output format");
	return ops->plan ? ops->plan(plan, page_size, ret_dropped) : NULL;
}
