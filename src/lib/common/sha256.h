// SPDX-License-Identifier: MIT
/*
 * SHA-256 of long inputs from the faster of two implementations on the
 * CPU it runs on (sha256.c): OpenSSL's libcrypto and nettle.  Which one
 * is faster depends on the CPU (and on an emulator's), not on our code.
 */
#ifndef KCOREDUMP_COMMON_SHA256_H
#define KCOREDUMP_COMMON_SHA256_H

#include <openssl/evp.h>
#include <stddef.h>
#ifdef KCOREDUMP_HAVE_NETTLE
#include <nettle/sha2.h>
#include <nettle/version.h>
#endif

#include "kcoredump/dump.h"

struct sha256_long {
	enum kcore_sha256_impl impl;
	EVP_MD_CTX *evp; /* KCORE_SHA256_OPENSSL */
#ifdef KCOREDUMP_HAVE_NETTLE
	struct sha256_ctx nettle; /* KCORE_SHA256_NETTLE */
#endif
};

/* Starts a digest with the implementation kcore_sha256_choose() picks
 * (choosing it now if it has not been: a fraction of a millisecond). */
struct kcore_error *sha256_long_init(struct sha256_long *s);
/* Starts one with impl, for the tests of each. */
struct kcore_error *sha256_long_init_with(struct sha256_long *s,
					  enum kcore_sha256_impl impl);
void sha256_long_update(struct sha256_long *s, const void *data, size_t len);
void sha256_long_final(struct sha256_long *s,
		       unsigned char out[KCORE_DIGEST_LEN]);
void sha256_long_free(struct sha256_long *s);

#endif
