/* SPDX-License-Identifier: MIT */
/*
 * Internal to verify and extract (dump/): what verify.c (the entry
 * points), verify-result.c (the result's expected digests, progress and
 * stop), verify-plain.c (dumps read through the source layer),
 * verify-stream.c (compressed dumps without random access, read front to
 * back) and extract.c share.
 */
#ifndef KCOREDUMP_VERIFY_INTERNAL_H
#define KCOREDUMP_VERIFY_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/verify.h"

#define CHUNK	      (1u << 20)
#define TRAILER_MAGIC "KCDTRL01"
#define MAX_TRAILER   (64u << 20)

/* What verify is told to stop by, and tells its progress to. */
struct vctl {
	volatile sig_atomic_t *cancel;
	kcore_verify_progress_fn progress;
	void *arg;
	uint64_t done, total;
};

/* Take the digests from metadata text into the result. */
void kcore_verify_apply_metadata(struct kcore_verify_result *r,
				 const char *text, size_t len);
/* Compare every segment's digest and the dump's with the expected ones. */
void kcore_verify_finish(struct kcore_verify_result *r);
/* An "interrupted" error once *cancel is set (cancel may be NULL). */
struct kcore_error *kcore_verify_cancelled(volatile sig_atomic_t *cancel,
					   const char *path);
/* n more bytes checked (read, or holes passed): progress, then a
 * signal's stop. */
struct kcore_error *kcore_verify_step(struct vctl *vc, uint64_t n,
				      const char *path);
/* Verify the dump at path through the source layer, and compare it with
 * source when given (read at exclude_level). */
struct kcore_error *kcore_verify_plain(const char *path, const char *source,
				       int exclude_level, struct vctl *vc,
				       struct kcore_verify_result *r);
/* Verify the compressed dump open as fd front to back, once. */
struct kcore_error *kcore_verify_stream(int fd, const char *path,
					struct vctl *vc,
					struct kcore_verify_result *r);

#endif
