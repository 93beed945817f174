// SPDX-License-Identifier: MIT
/*
 * What verify finds: the digests our metadata expects, taken into the
 * result, the comparison once every digest is known, and the progress
 * and stop of a run (verify-internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metanote.h"
#include "plan.h"
#include "source-impl.h"
#include "kcoredump/verify.h"
#include "verify-internal.h"

static bool parse_hex_digest(const char *s, unsigned char out[KCORE_DIGEST_LEN])
{
	for (int i = 0; i < KCORE_DIGEST_LEN; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return false;
		out[i] = (unsigned char)v;
	}
	return true;
}

/* Take the digests from metadata text into the result. */
void kcore_verify_apply_metadata(struct kcore_verify_result *r,
				 const char *text, size_t len)
{
	char *copy = strndup(text, len), *save = NULL;

	if (!copy)
		return;
	for (char *line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *sha;
		size_t idx;

		if (!strncmp(line, "dump_sha256=", 12)) {
			r->has_expected =
				parse_hex_digest(line + 12, r->expected);
		} else if (!strncmp(line, "exclude_level=", 14)) {
			unsigned long v = strtoul(line + 14, NULL, 10);

			r->exclude_level =
				v <= KCORE_EXCLUDE_ALL ? (unsigned)v : 0;
		} else if (!strncmp(line, "bytes_unreadable=", 17) ||
			   !strncmp(line, "source_bytes_unreadable=", 24)) {
			r->unreadable_bytes +=
				strtoull(strchr(line, '=') + 1, NULL, 10);
			r->incomplete |= r->unreadable_bytes != 0;
		} else if (!strncmp(line, "unreadable_ranges=", 18) ||
			   !strncmp(line, "source_unreadable_ranges=", 25)) {
			r->unreadable_ranges +=
				strtoull(strchr(line, '=') + 1, NULL, 10);
		} else if (!strncmp(line, "source_incomplete=1", 19)) {
			r->incomplete = true;
		} else if (!strncmp(line, "hash=", 5)) {
			int m = kcore_block_hash_from_note_name(line + 5);

			/* "none", or a method of a later version: the
			 * digests present cannot be checked with ours. */
			if (m >= 0)
				r->block_hash = (enum kcore_block_hash)m;
			else
				r->block_hash_unknown =
					strcmp(line + 5, "none");
		} else if (!strncmp(line, "digests=", 8)) {
			r->digest_location =
				kcore_digest_location_from_name(line + 8);
		} else if (sscanf(line, "segment=%zu ", &idx) == 1 &&
			   idx < r->nsegs && (sha = strstr(line, " sha256="))) {
			r->segs[idx].has_expected = parse_hex_digest(
				sha + 8, r->segs[idx].expected);
		}
	}
	free(copy);
}

void kcore_verify_finish(struct kcore_verify_result *r)
{
	unsigned char(*d)[KCORE_DIGEST_LEN] =
		calloc(r->nsegs ? r->nsegs : 1, KCORE_DIGEST_LEN);

	r->match = true;
	for (size_t i = 0; i < r->nsegs; i++) {
		struct kcore_verify_segment *s = &r->segs[i];

		s->match = !s->has_expected ||
			   !memcmp(s->expected, s->actual, KCORE_DIGEST_LEN);
		r->match &= s->match;
		if (d)
			memcpy(d[i], s->actual, KCORE_DIGEST_LEN);
	}
	if (d)
		kcore_dump_digest((const unsigned char(*)[KCORE_DIGEST_LEN])d,
				  r->nsegs, r->actual);
	free(d);
	if (r->has_expected)
		r->match &= !memcmp(r->expected, r->actual, KCORE_DIGEST_LEN);
}

struct kcore_error *kcore_verify_cancelled(volatile sig_atomic_t *cancel,
					   const char *path)
{
	if (cancel && *cancel)
		return kcore_error_create(KCORE_ERR_INTERRUPTED, 0, path,
					  "interrupted");
	return NULL;
}

/* n more bytes checked (read, or holes passed): progress, then a
 * signal's stop. */
struct kcore_error *kcore_verify_step(struct vctl *vc, uint64_t n,
				      const char *path)
{
	vc->done += n;
	if (vc->progress)
		vc->progress(vc->arg, vc->done, vc->total);
	return kcore_verify_cancelled(vc->cancel, path);
}
