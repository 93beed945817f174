// SPDX-License-Identifier: MIT
/*
 * The output formats: one writer each (write.h), the only place that maps
 * a format to its code.  Above the writers, below the pipeline.
 */
#include <string.h>

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
