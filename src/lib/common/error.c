// SPDX-License-Identifier: MIT
/* Error objects: creation, description, destruction. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/error.h"

struct kcore_error kcore_error_nomem = {
	.code = KCORE_ERR_NOMEM,
	.errnum = ENOMEM,
	.message = (char *)"out of memory",
};

static const char *const code_names[KCORE_ERR_NUM] = {
	[KCORE_ERR_NOMEM] = "nomem",
	[KCORE_ERR_OS] = "os",
	[KCORE_ERR_NOT_FOUND] = "not-found",
	[KCORE_ERR_ACCESS] = "access",
	[KCORE_ERR_FORMAT] = "format",
	[KCORE_ERR_UNSUPPORTED] = "unsupported",
	[KCORE_ERR_INVALID] = "invalid",
	[KCORE_ERR_MISMATCH] = "mismatch",
	[KCORE_ERR_INTERRUPTED] = "interrupted",
	[KCORE_ERR_EXISTS] = "exists",
};

const char *kcore_error_code_name(enum kcore_error_code code)
{
	if ((unsigned)code < KCORE_ERR_NUM)
		return code_names[code];
	return "unknown";
}

static struct kcore_error *error_vcreate(enum kcore_error_code code, int errnum,
					 const char *path, bool has_offset,
					 uint64_t offset, const char *fmt,
					 va_list ap)
{
	struct kcore_error *err = calloc(1, sizeof(*err));

	if (!err)
		return &kcore_error_nomem;
	err->code = code;
	err->errnum = errnum;
	err->has_offset = has_offset;
	err->offset = offset;
	if (vasprintf(&err->message, fmt, ap) < 0) {
		free(err);
		return &kcore_error_nomem;
	}
	if (path) {
		err->path = strdup(path);
		if (!err->path) {
			free(err->message);
			free(err);
			return &kcore_error_nomem;
		}
	}
	return err;
}

struct kcore_error *kcore_error_create(enum kcore_error_code code, int errnum,
				       const char *path, const char *fmt, ...)
{
	struct kcore_error *err;
	va_list ap;

	va_start(ap, fmt);
	err = error_vcreate(code, errnum, path, false, 0, fmt, ap);
	va_end(ap);
	return err;
}

struct kcore_error *kcore_error_create_at(enum kcore_error_code code,
					  int errnum, const char *path,
					  uint64_t offset, const char *fmt, ...)
{
	struct kcore_error *err;
	va_list ap;

	va_start(ap, fmt);
	err = error_vcreate(code, errnum, path, true, offset, fmt, ap);
	va_end(ap);
	return err;
}

void kcore_error_destroy(struct kcore_error *err)
{
	if (!err || err == &kcore_error_nomem)
		return;
	free(err->path);
	free(err->message);
	free(err);
}

char *kcore_error_describe(const struct kcore_error *err)
{
	char offbuf[48] = "";
	char *out;
	const char *msg = err->message ? err->message : "error";

	/* Messages that already say where ("... at offset ...") skip it. */
	if (err->has_offset && !strstr(msg, " at offset ") &&
	    !strstr(msg, " at address "))
		snprintf(offbuf, sizeof(offbuf), " at offset 0x%" PRIx64,
			 err->offset);
	if (asprintf(&out, "%s%s%s%s%s%s%s", err->path ? "'" : "",
		     err->path ? err->path : "", err->path ? "': " : "", msg,
		     offbuf, err->errnum ? ": " : "",
		     err->errnum ? strerror(err->errnum) : "") < 0)
		return NULL;
	return out;
}
