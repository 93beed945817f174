// SPDX-License-Identifier: MIT
/* VMCOREINFO parsing and typed look-ups. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/vmcoreinfo.h"

struct kcore_vmcoreinfo {
	char *text; /* copy of the raw text, NUL-terminated */
	size_t len;
	char *buf; /* split copy the entries point into */
	size_t count;
	struct kcore_vmcoreinfo_entry *entries;
};

struct kcore_error *kcore_vmcoreinfo_parse(const char *text, size_t len,
					   struct kcore_vmcoreinfo **ret)
{
	struct kcore_vmcoreinfo *vi = calloc(1, sizeof(*vi));
	size_t lines = 0;

	if (!vi)
		return &kcore_error_nomem;
	/* The note descriptor may be padded with NULs: stop at the first. */
	const char *nul = memchr(text, '\0', len);
	if (nul)
		len = (size_t)(nul - text);
	vi->text = malloc(len + 1);
	vi->buf = malloc(len + 1);
	if (!vi->text || !vi->buf)
		goto nomem;
	memcpy(vi->text, text, len);
	vi->text[len] = '\0';
	memcpy(vi->buf, text, len);
	vi->buf[len] = '\0';
	vi->len = len;
	for (size_t i = 0; i < len; i++)
		if (text[i] == '\n')
			lines++;
	vi->entries = calloc(lines + 1, sizeof(*vi->entries));
	if (!vi->entries)
		goto nomem;
	for (char *line = vi->buf, *next; line && *line; line = next) {
		char *eq;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!*line)
			continue;
		eq = strchr(line, '=');
		if (eq)
			*eq = '\0';
		vi->entries[vi->count].key = line;
		vi->entries[vi->count].value = eq ? eq + 1 : "";
		vi->count++;
	}
	*ret = vi;
	return NULL;
nomem:
	kcore_vmcoreinfo_destroy(vi);
	return &kcore_error_nomem;
}

void kcore_vmcoreinfo_destroy(struct kcore_vmcoreinfo *vi)
{
	if (!vi)
		return;
	free(vi->text);
	free(vi->buf);
	free(vi->entries);
	free(vi);
}

size_t kcore_vmcoreinfo_count(const struct kcore_vmcoreinfo *vi)
{
	return vi->count;
}

const struct kcore_vmcoreinfo_entry *
kcore_vmcoreinfo_entry(const struct kcore_vmcoreinfo *vi, size_t i)
{
	return i < vi->count ? &vi->entries[i] : NULL;
}

const char *kcore_vmcoreinfo_text(const struct kcore_vmcoreinfo *vi,
				  size_t *ret_len)
{
	if (ret_len)
		*ret_len = vi->len;
	return vi->text;
}

const char *kcore_vmcoreinfo_get(const struct kcore_vmcoreinfo *vi,
				 const char *key)
{
	if (!vi)
		return NULL;
	for (size_t i = vi->count; i-- > 0;)
		if (strcmp(vi->entries[i].key, key) == 0)
			return vi->entries[i].value;
	return NULL;
}

/* Keys the kernel prints in decimal without a prefix. */
static bool is_decimal_key(const char *key)
{
	return strncmp(key, "NUMBER(", 7) == 0 ||
	       strncmp(key, "LENGTH(", 7) == 0 ||
	       strncmp(key, "SIZE(", 5) == 0 ||
	       strncmp(key, "OFFSET(", 7) == 0 ||
	       strcmp(key, "PAGESIZE") == 0 || strcmp(key, "CRASHTIME") == 0;
}

bool kcore_vmcoreinfo_get_u64(const struct kcore_vmcoreinfo *vi,
			      const char *key, uint64_t *ret)
{
	const char *value = kcore_vmcoreinfo_get(vi, key);
	char *end;
	int base;

	if (!value || !*value)
		return false;
	if (value[0] == '0' && (value[1] == 'x' || value[1] == 'X'))
		base = 16;
	else
		base = is_decimal_key(key) ? 10 : 16;
	errno = 0;
	if (value[0] == '-') {
		long long v = strtoll(value, &end, base);

		if (errno || *end)
			return false;
		*ret = (uint64_t)v;
		return true;
	}
	unsigned long long v = strtoull(value, &end, base);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}
