// SPDX-License-Identifier: MIT
/* SHA-256 from the faster implementation here (common/sha256.c): OpenSSL
 * and nettle each give NIST's digests (FIPS 180-2's examples, whole and
 * fed in odd pieces) and the same digest of 10 MiB of random bytes, split
 * at random odd places; the zeros helper hashes as zeros; the choice is
 * made once, names an implementation this build has, and is the one
 * KCOREDUMP_SHA256 names (a bad name is an error naming it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kcoredump/dump.h"
#include "pattern.h"
#include "tap.h"

static uint64_t draws;

/* Pseudo-random numbers: the fixtures' pattern words in turn. */
static uint64_t next(void)
{
	return kc_pattern_word(8 * draws++, 40);
}

static const struct {
	const char *what, *hex;
	const char *text; /* NULL: a million 'a' */
} vectors[] = {
	{ "empty",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "" },
	{ "abc",
	  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	  "abc" },
	{ "448 bits",
	  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	  "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq" },
	{ "a million 'a'",
	  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
	  NULL },
};

/* The digest of data through impl, fed in pieces of the sizes in split
 * (cycled; 0: all at once). */
static bool digest(enum kcore_sha256_impl impl, const unsigned char *data,
		   size_t len, const size_t *split, size_t nsplit,
		   unsigned char out[KCORE_DIGEST_LEN])
{
	struct kcore_file_hasher *h;
	struct kcore_error *err = kcore_file_hasher_create_with(impl, &h);
	size_t off = 0, i = 0;

	if (err) {
		kcore_error_destroy(err);
		return false;
	}
	while (off < len) {
		size_t n = nsplit ? split[i++ % nsplit] : len;

		if (n > len - off)
			n = len - off;
		kcore_file_hasher_add(h, data + off, n);
		off += n;
	}
	kcore_file_hasher_finish(h, out);
	kcore_file_hasher_destroy(h);
	return true;
}

static void nist(enum kcore_sha256_impl impl)
{
	static const size_t odd[] = { 1, 3, 63, 64, 65, 127, 1000, 4097 };
	const char *name = kcore_sha256_impl_name(impl);
	unsigned char *million = malloc(1000000);
	unsigned char got[KCORE_DIGEST_LEN];
	char hex[2 * KCORE_DIGEST_LEN + 1];

	memset(million, 'a', 1000000);
	for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
		const unsigned char *p =
			vectors[v].text ? (const unsigned char *)vectors[v].text
					: million;
		size_t len =
			vectors[v].text ? strlen(vectors[v].text) : 1000000;

		for (int split = 0; split < 2; split++) {
			bool done = digest(
				impl, p, len, split ? odd : NULL,
				split ? sizeof(odd) / sizeof(odd[0]) : 0, got);

			kcore_hex(got, KCORE_DIGEST_LEN, hex);
			ok(done && !strcmp(hex, vectors[v].hex),
			   "%s: NIST %s%s", name, vectors[v].what,
			   split ? ", in odd pieces" : "");
		}
	}
	free(million);
}

/* 10 MiB of random bytes: both implementations, whole and in random odd
 * pieces, and kcore_sha256 in one call, give one digest. */
static void random_buffer(bool have_nettle)
{
	size_t len = 10u << 20, split[64];
	unsigned char *buf = malloc(len), ref[KCORE_DIGEST_LEN],
		      got[KCORE_DIGEST_LEN];

	kc_pattern_fill(buf, 0, len, 40);
	for (size_t i = 0; i < 64; i++)
		split[i] = 1 + (size_t)(next() % (i % 2 ? 97 : 300000)) * 2;
	ok(digest(KCORE_SHA256_OPENSSL, buf, len, NULL, 0, ref),
	   "openssl: 10 MiB at once");
	ok(digest(KCORE_SHA256_OPENSSL, buf, len, split, 64, got) &&
		   !memcmp(got, ref, sizeof(ref)),
	   "openssl: 10 MiB in random odd pieces, the same digest");
	if (have_nettle) {
		ok(digest(KCORE_SHA256_NETTLE, buf, len, NULL, 0, got) &&
			   !memcmp(got, ref, sizeof(ref)),
		   "nettle: 10 MiB at once, openssl's digest");
		ok(digest(KCORE_SHA256_NETTLE, buf, len, split, 64, got) &&
			   !memcmp(got, ref, sizeof(ref)),
		   "nettle: 10 MiB in random odd pieces, openssl's digest");
	}
	kcore_sha256(buf, len, got);
	ok(!memcmp(got, ref, sizeof(ref)), "kcore_sha256: the same digest");
	memset(buf, 0, 3u << 20);
	digest(KCORE_SHA256_OPENSSL, buf, 3u << 20, NULL, 0, ref);
	for (int impl = 0; impl < KCORE_SHA256_IMPL_NUM; impl++) {
		struct kcore_file_hasher *h;
		struct kcore_error *err;

		if (!kcore_sha256_impl_available(impl))
			continue;
		err = kcore_file_hasher_create_with(impl, &h);
		if (!ok(!err, "%s: a hasher", kcore_sha256_impl_name(impl))) {
			kcore_error_destroy(err);
			continue;
		}
		kcore_file_hasher_add(h, buf, 5);
		kcore_file_hasher_add_zeros(h, (3u << 20) - 5);
		kcore_file_hasher_finish(h, got);
		kcore_file_hasher_destroy(h);
		ok(!memcmp(got, ref, sizeof(ref)), "%s: 3 MiB of zeros added",
		   kcore_sha256_impl_name(impl));
	}
	free(buf);
}

/* In a child (the choice is once per process): the choice with
 * KCOREDUMP_SHA256=value.  Exit 0: impl by the environment; 1: an error
 * naming value (and still a choice); 2: anything else. */
static int forced(const char *value, int want)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		const struct kcore_sha256_choice *c = NULL;
		struct kcore_error *err;
		char *msg;

		setenv("KCOREDUMP_SHA256", value, 1);
		err = kcore_sha256_choose(&c);
		if (!err)
			_exit(c && (int)c->impl == want &&
					      !strcmp(c->why,
						      "KCOREDUMP_SHA256") &&
					      kcore_sha256_chosen() == c
				      ? 0
				      : 2);
		msg = kcore_error_describe(err);
		_exit(msg && strstr(msg, value) && c && c->name ? 1 : 2);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void choice(bool have_nettle)
{
	const struct kcore_sha256_choice *c = NULL;
	struct kcore_error *err;

	ok(!kcore_sha256_chosen(), "no choice before a long digest");
	is_int(forced("openssl", KCORE_SHA256_OPENSSL), 0,
	       "KCOREDUMP_SHA256=openssl takes openssl");
	if (have_nettle)
		is_int(forced("nettle", KCORE_SHA256_NETTLE), 0,
		       "KCOREDUMP_SHA256=nettle takes nettle");
	is_int(forced("md5", -1), 1,
	       "KCOREDUMP_SHA256=md5: an error naming it");
	unsetenv("KCOREDUMP_SHA256");
	err = kcore_sha256_choose(&c);
	ok(!err && c && kcore_sha256_impl_available(c->impl) &&
		   !strcmp(c->name, kcore_sha256_impl_name(c->impl)),
	   "the choice: %s (%s)", c ? c->name : "-", c ? c->why : "-");
	if (have_nettle && c)
		ok(!strcmp(c->why, "timed") &&
			   c->mib_per_s[KCORE_SHA256_OPENSSL] > 0 &&
			   c->mib_per_s[KCORE_SHA256_NETTLE] > 0,
		   "timed: openssl %.0f MiB/s, nettle %.0f MiB/s",
		   c->mib_per_s[KCORE_SHA256_OPENSSL],
		   c->mib_per_s[KCORE_SHA256_NETTLE]);
	ok(kcore_sha256_chosen() == c, "made once: the same choice after");
	kcore_error_destroy(err);
}

int main(void)
{
	bool have_nettle = kcore_sha256_impl_available(KCORE_SHA256_NETTLE);

	choice(have_nettle);
	for (int impl = 0; impl < KCORE_SHA256_IMPL_NUM; impl++)
		if (kcore_sha256_impl_available(impl))
			nist(impl);
	random_buffer(have_nettle);
	if (!have_nettle)
		printf("# nettle is not built in: openssl only\n");
	return tap_done();
}
