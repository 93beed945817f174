/* SPDX-License-Identifier: MIT */
/*
 * Error objects for libkcore.  A function that can fail returns a
 * struct kcore_error pointer: NULL means success.  Errors carry the file,
 * the offset and what was wrong, because our failures are about data.
 */
#ifndef KCOREDUMP_ERROR_H
#define KCOREDUMP_ERROR_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum kcore_error_code {
	KCORE_ERR_NOMEM,       /* out of memory */
	KCORE_ERR_OS,	       /* a system call failed (errnum is set) */
	KCORE_ERR_NOT_FOUND,   /* the file or facility does not exist */
	KCORE_ERR_ACCESS,      /* permission, capability or lockdown */
	KCORE_ERR_FORMAT,      /* malformed input */
	KCORE_ERR_UNSUPPORTED, /* well-formed, but not something we handle */
	KCORE_ERR_INVALID,     /* bad argument from the caller */
	KCORE_ERR_MISMATCH,    /* verification found a difference */
	KCORE_ERR_INTERRUPTED, /* cancelled by the caller (signal) */
	KCORE_ERR_EXISTS,      /* output exists and may not be replaced */
	KCORE_ERR_NUM
};

struct kcore_error {
	enum kcore_error_code code;
	int errnum;	 /* errno value or 0 */
	bool has_offset; /* offset is meaningful */
	uint64_t offset; /* file offset or address the error is about */
	char *path;	 /* file the error is about, or NULL */
	char *message;	 /* what is wrong, lowercase, no trailing period */
};

/* Returned when allocating an error fails; never freed. */
extern struct kcore_error kcore_error_nomem;

struct kcore_error *kcore_error_create(enum kcore_error_code code, int errnum,
				       const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
struct kcore_error *kcore_error_create_at(enum kcore_error_code code,
					  int errnum, const char *path,
					  uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void kcore_error_destroy(struct kcore_error *err);

/*
 * One line describing err: "'PATH': MESSAGE at offset 0xOFF: STRERROR".
 * Returns a malloc()ed string, or NULL if out of memory.
 */
char *kcore_error_describe(const struct kcore_error *err);

const char *kcore_error_code_name(enum kcore_error_code code);

#ifdef __cplusplus
}
#endif

#endif
