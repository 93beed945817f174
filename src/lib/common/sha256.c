// SPDX-License-Identifier: MIT
/*
 * SHA-256 from the faster of two implementations on the CPU it runs on.
 *
 * OpenSSL's libcrypto and nettle each pick their own code by the CPU's
 * features (SHA-NI, AVX2, SSSE3), and the fastest depends on the CPU: on
 * an AMD EPYC with SHA-NI OpenSSL hashed 1495 MiB/s and nettle 1340; in a
 * QEMU TCG guest (-cpu max: AVX2 but no SHA-NI) OpenSSL's AVX2 code ran at
 * 22 MiB/s and nettle's plain x86-64 code at 81.  So, as Linux picks its
 * RAID6 and xor routines at boot, the first long digest a process wants
 * times both on a short input and the process keeps the faster one for
 * its long digests (the file's SHA-256, SHA-256 blocks).  Both give the
 * same digest (t-file-hash checks them against NIST's vectors and each
 * other); KCOREDUMP_SHA256=openssl|nettle overrides the timing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sha256.h"

/* The timing: each implementation hashes TIME_LEN bytes TIME_ROUNDS times
 * (after one short warm-up: OpenSSL fetches its digest on first use), the
 * best round counts.  384 KiB in all: 0.3 ms at 1.3 GiB/s, 20 ms at
 * OpenSSL's 22 MiB/s under TCG. */
#define TIME_LEN    (64u << 10)
#define TIME_ROUNDS 3
/* nettle must beat OpenSSL (also the short digests') by this much. */
#define NETTLE_MARGIN 1.05
/* kcore_sha256() of this much or more takes the chosen implementation. */
#define LONG_INPUT (64u << 10)

static const char *const impl_names[KCORE_SHA256_IMPL_NUM] = {
	[KCORE_SHA256_OPENSSL] = "openssl",
	[KCORE_SHA256_NETTLE] = "nettle",
};

static pthread_once_t choice_once = PTHREAD_ONCE_INIT;
static struct kcore_sha256_choice choice;
static struct kcore_sha256_choice *_Atomic chosen;
/* A KCOREDUMP_SHA256 that names no implementation of this build. */
static char bad_env[40];

const char *kcore_sha256_impl_name(enum kcore_sha256_impl impl)
{
	return (unsigned)impl < KCORE_SHA256_IMPL_NUM ? impl_names[impl] : "?";
}

bool kcore_sha256_impl_available(enum kcore_sha256_impl impl)
{
#ifdef KCOREDUMP_HAVE_NETTLE
	return (unsigned)impl < KCORE_SHA256_IMPL_NUM;
#else
	return impl == KCORE_SHA256_OPENSSL;
#endif
}

struct kcore_error *sha256_long_init_with(struct sha256_long *s,
					  enum kcore_sha256_impl impl)
{
	memset(s, 0, sizeof(*s));
	if (!kcore_sha256_impl_available(impl))
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "SHA-256 from %s is not built in",
					  kcore_sha256_impl_name(impl));
	s->impl = impl;
#ifdef KCOREDUMP_HAVE_NETTLE
	if (impl == KCORE_SHA256_NETTLE) {
		sha256_init(&s->nettle);
		return NULL;
	}
#endif
	s->evp = EVP_MD_CTX_new();
	if (!s->evp)
		return &kcore_error_nomem;
	if (!EVP_DigestInit_ex(s->evp, EVP_sha256(), NULL)) {
		sha256_long_free(s);
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "SHA-256 is not available from "
					  "libcrypto");
	}
	return NULL;
}

void sha256_long_update(struct sha256_long *s, const void *data, size_t len)
{
#ifdef KCOREDUMP_HAVE_NETTLE
	if (s->impl == KCORE_SHA256_NETTLE) {
		sha256_update(&s->nettle, len, data);
		return;
	}
#endif
	EVP_DigestUpdate(s->evp, data, len);
}

void sha256_long_final(struct sha256_long *s,
		       unsigned char out[KCORE_DIGEST_LEN])
{
	unsigned int len = KCORE_DIGEST_LEN;

#ifdef KCOREDUMP_HAVE_NETTLE
	if (s->impl == KCORE_SHA256_NETTLE) {
#if NETTLE_VERSION_MAJOR >= 4
		sha256_digest(&s->nettle, out);
#else
		sha256_digest(&s->nettle, SHA256_DIGEST_SIZE, out);
#endif
		return;
	}
#endif
	EVP_DigestFinal_ex(s->evp, out, &len);
}

void sha256_long_free(struct sha256_long *s)
{
	EVP_MD_CTX_free(s->evp);
	s->evp = NULL;
}

/* CPU time of this thread (a preempted round is not charged), else the
 * monotonic clock. */
static double seconds_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One digest of len bytes with impl; its seconds, or < 0 if it failed. */
static double time_one(enum kcore_sha256_impl impl, const unsigned char *buf,
		       size_t len)
{
	unsigned char out[KCORE_DIGEST_LEN];
	struct sha256_long s;
	struct kcore_error *err;
	double t0 = seconds_now(), t;

	err = sha256_long_init_with(&s, impl);
	if (err) {
		kcore_error_destroy(err);
		return -1;
	}
	sha256_long_update(&s, buf, len);
	sha256_long_final(&s, out);
	t = seconds_now() - t0;
	sha256_long_free(&s);
	return t;
}

/* Times each implementation, the rounds interleaved; the faster wins. */
static void choose_by_timing(void)
{
	unsigned char *buf = malloc(TIME_LEN);
	double best[KCORE_SHA256_IMPL_NUM] = { 0 };
	uint32_t x = 0x9e3779b9u;

	choice.impl = KCORE_SHA256_OPENSSL;
	choice.why = "timed";
	if (!buf)
		return;
	for (size_t i = 0; i < TIME_LEN; i++) {
		x = x * 1664525u + 1013904223u;
		buf[i] = (unsigned char)(x >> 24);
	}
	for (int impl = 0; impl < KCORE_SHA256_IMPL_NUM; impl++)
		if (time_one(impl, buf, 4096) < 0)
			best[impl] = -1;
	for (int round = 0; round < TIME_ROUNDS; round++)
		for (int impl = 0; impl < KCORE_SHA256_IMPL_NUM; impl++) {
			double t;

			if (best[impl] < 0)
				continue;
			t = time_one(impl, buf, TIME_LEN);
			if (t < 1e-9)
				t = 1e-9;
			if (round == 0 || t < best[impl])
				best[impl] = t;
		}
	free(buf);
	for (int impl = 0; impl < KCORE_SHA256_IMPL_NUM; impl++)
		choice.mib_per_s[impl] =
			best[impl] > 0 ? TIME_LEN / best[impl] / 1048576.0 : 0;
	if (choice.mib_per_s[KCORE_SHA256_NETTLE] >
	    NETTLE_MARGIN * choice.mib_per_s[KCORE_SHA256_OPENSSL])
		choice.impl = KCORE_SHA256_NETTLE;
}

static void choose(void)
{
	const char *env = getenv("KCOREDUMP_SHA256");
	int forced = -1, available = 0;

	for (int impl = 0; impl < KCORE_SHA256_IMPL_NUM; impl++) {
		available += kcore_sha256_impl_available(impl);
		if (env && !strcmp(env, impl_names[impl]) &&
		    kcore_sha256_impl_available(impl))
			forced = impl;
	}
	if (env && *env && forced < 0)
		snprintf(bad_env, sizeof(bad_env), "%s", env);
	if (forced >= 0) {
		choice.impl = forced;
		choice.why = "KCOREDUMP_SHA256";
	} else if (available < 2) {
		choice.impl = KCORE_SHA256_OPENSSL;
		choice.why = "the only one";
	} else {
		choose_by_timing();
	}
	choice.name = impl_names[choice.impl];
	chosen = &choice;
}

struct kcore_error *kcore_sha256_choose(const struct kcore_sha256_choice **ret)
{
	pthread_once(&choice_once, choose);
	*ret = &choice;
	if (bad_env[0])
		return kcore_error_create(
			KCORE_ERR_INVALID, 0, NULL,
			"KCOREDUMP_SHA256=%s: not an "
			"implementation of this build "
			"(openssl%s)",
			bad_env,
			kcore_sha256_impl_available(KCORE_SHA256_NETTLE)
				? ", nettle"
				: "");
	return NULL;
}

const struct kcore_sha256_choice *kcore_sha256_chosen(void)
{
	return chosen;
}

struct kcore_error *sha256_long_init(struct sha256_long *s)
{
	pthread_once(&choice_once, choose);
	return sha256_long_init_with(s, choice.impl);
}

void kcore_sha256(const void *data, size_t len,
		  unsigned char out[KCORE_DIGEST_LEN])
{
	unsigned int n = KCORE_DIGEST_LEN;
	struct sha256_long s;
	struct kcore_error *err;

	if (len >= LONG_INPUT) {
		err = sha256_long_init(&s);
		if (!err) {
			sha256_long_update(&s, data, len);
			sha256_long_final(&s, out);
			sha256_long_free(&s);
			return;
		}
		kcore_error_destroy(err);
	}
	EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}
