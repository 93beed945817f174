// SPDX-License-Identifier: MIT
/*
 * The dump digest (SHA-256 through OpenSSL's libcrypto over block digests
 * that are XXH3-128, through libxxhash, or SHA-256), and the hasher of a
 * file's bytes (through sha256.c's choice of OpenSSL or nettle; a whole
 * file read back and hashed on a thread of its own is file-hash.c's).
 *
 * A segment's logical content (p_memsz bytes, holes read as zeros) is cut
 * into KCORE_HASH_BLOCK blocks.  For each block that is not all zero, in
 * ascending order, the record le64(index) || digest(block) is appended;
 * the segment digest is SHA-256(tag || le64(size) || records), where the
 * tag and the block digest are "kcoredump-xxh3-128-v1\0" and XXH3-128
 * (seed 0, its canonical big-endian 16 bytes), or "kcoredump-sha256-v1\0"
 * and SHA-256.  All-zero blocks contribute nothing, so holes cost nothing
 * and a sparse and a dense copy of the same content hash alike.  The dump
 * digest is SHA-256 of the segment digests in program header order.
 * Block digests are computed on the worker threads; only the small
 * records pass through the ordered combination.
 */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "kcoredump/dump.h"
#include "sha256.h"

/* Each method's names: the one reports print, the one options take (the
 * CLI's --hash, its help and completions), the note's hash= value, and the
 * segment digest's tag. */
static const struct {
	const char *name, *option_name, *note_name, *tag; /* tag: with NUL */
	size_t tag_len, digest_len;
} methods[KCORE_BLOCK_HASH_NUM] = {
	[KCORE_BLOCK_HASH_XXH3] = { "xxh3-128", "xxh3", "xxh3-128-blocklist-v1",
				    "kcoredump-xxh3-128-v1",
				    sizeof("kcoredump-xxh3-128-v1"), 16 },
	[KCORE_BLOCK_HASH_SHA256] = { "sha256", "sha256", "sha256-blocklist-v1",
				      "kcoredump-sha256-v1",
				      sizeof("kcoredump-sha256-v1"), 32 },
};

struct kcore_seg_hasher {
	EVP_MD_CTX *ctx;
	size_t digest_len;
	uint64_t next; /* lowest block index still allowed */
};

static bool method_ok(enum kcore_block_hash m)
{
	return (unsigned)m < sizeof(methods) / sizeof(methods[0]);
}

const char *kcore_block_hash_name(enum kcore_block_hash m)
{
	return method_ok(m) ? methods[m].name : "?";
}

const char *kcore_block_hash_option_name(enum kcore_block_hash m)
{
	return method_ok(m) ? methods[m].option_name : "?";
}

const char *kcore_block_hash_note_name(enum kcore_block_hash m)
{
	return method_ok(m) ? methods[m].note_name : "?";
}

static int method_find(const char *name, bool note)
{
	for (size_t i = 0; name && i < sizeof(methods) / sizeof(methods[0]);
	     i++)
		if (note ? !strcmp(name, methods[i].note_name)
			 : !strcmp(name, methods[i].name) ||
				    !strcmp(name, methods[i].option_name))
			return (int)i;
	return -1;
}

int kcore_block_hash_from_name(const char *name)
{
	return method_find(name, false);
}

int kcore_block_hash_from_note_name(const char *name)
{
	return method_find(name, true);
}

void kcore_block_digest(enum kcore_block_hash m, const void *data, size_t len,
			unsigned char out[KCORE_DIGEST_LEN])
{
	if (m == KCORE_BLOCK_HASH_SHA256) {
		kcore_sha256(data, len, out);
		return;
	}
	XXH128_canonicalFromHash((XXH128_canonical_t *)(void *)out,
				 XXH3_128bits(data, len));
	memset(out + 16, 0, KCORE_DIGEST_LEN - 16);
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

struct kcore_error *kcore_seg_hasher_create(uint64_t size,
					    struct kcore_seg_hasher **ret)
{
	return kcore_seg_hasher_create_with(KCORE_BLOCK_HASH_SHA256, size, ret);
}

struct kcore_error *kcore_seg_hasher_create_with(enum kcore_block_hash m,
						 uint64_t size,
						 struct kcore_seg_hasher **ret)
{
	struct kcore_seg_hasher *h;
	unsigned char len[8];

	if (!method_ok(m))
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown block digest %d", (int)m);
	h = calloc(1, sizeof(*h));
	if (!h)
		return &kcore_error_nomem;
	h->digest_len = methods[m].digest_len;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || !EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL)) {
		kcore_seg_hasher_destroy(h);
		return kcore_error_create(KCORE_ERR_UNSUPPORTED, 0, NULL,
					  "SHA-256 is not available from "
					  "libcrypto");
	}
	put_le64(len, size);
	EVP_DigestUpdate(h->ctx, methods[m].tag, methods[m].tag_len);
	EVP_DigestUpdate(h->ctx, len, sizeof(len));
	*ret = h;
	return NULL;
}

struct kcore_error *kcore_seg_hasher_add(struct kcore_seg_hasher *h,
					 uint64_t block_index,
					 const unsigned char *digest)
{
	unsigned char rec[8 + KCORE_DIGEST_LEN];

	if (block_index < h->next)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "hash block %llu added out of "
					  "order",
					  (unsigned long long)block_index);
	put_le64(rec, block_index);
	memcpy(rec + 8, digest, h->digest_len);
	EVP_DigestUpdate(h->ctx, rec, 8 + h->digest_len);
	h->next = block_index + 1;
	return NULL;
}

void kcore_seg_hasher_finish(struct kcore_seg_hasher *h,
			     unsigned char out[KCORE_DIGEST_LEN])
{
	unsigned int len = KCORE_DIGEST_LEN;

	EVP_DigestFinal_ex(h->ctx, out, &len);
}

void kcore_seg_hasher_destroy(struct kcore_seg_hasher *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void kcore_dump_digest(const unsigned char (*segs)[KCORE_DIGEST_LEN], size_t n,
		       unsigned char out[KCORE_DIGEST_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int len = KCORE_DIGEST_LEN;

	if (!ctx) {
		memset(out, 0, KCORE_DIGEST_LEN);
		return;
	}
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	EVP_DigestUpdate(ctx, segs, n * KCORE_DIGEST_LEN);
	EVP_DigestFinal_ex(ctx, out, &len);
	EVP_MD_CTX_free(ctx);
}

bool kcore_is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	const uint64_t *w;
	size_t i = 0;

	/* Unaligned head, then 64 bytes a step: the compiler vectorises. */
	while (i < len && ((uintptr_t)(p + i) & 7))
		if (p[i++])
			return false;
	w = (const uint64_t *)(const void *)(p + i);
	for (; i + 64 <= len; i += 64, w += 8)
		if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7])
			return false;
	for (; i < len; i++)
		if (p[i])
			return false;
	return true;
}

void kcore_hex(const unsigned char *bytes, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * len] = '\0';
}

/* Hashing content that arrives in order (verify, extract). */
struct kcore_content_hasher {
	struct kcore_seg_hasher *h;
	enum kcore_block_hash method;
	uint64_t size;
	uint64_t pos;	    /* bytes consumed */
	unsigned char *blk; /* the partial current block */
	size_t fill;
	bool blk_nonzero;
};

struct kcore_error *
kcore_content_hasher_create(enum kcore_block_hash m, uint64_t size,
			    struct kcore_content_hasher **ret)
{
	struct kcore_content_hasher *c = calloc(1, sizeof(*c));
	struct kcore_error *err;

	if (!c)
		return &kcore_error_nomem;
	c->size = size;
	c->method = m;
	c->blk = malloc(KCORE_HASH_BLOCK);
	if (!c->blk) {
		free(c);
		return &kcore_error_nomem;
	}
	err = kcore_seg_hasher_create_with(m, size, &c->h);
	if (err) {
		free(c->blk);
		free(c);
		return err;
	}
	*ret = c;
	return NULL;
}

static struct kcore_error *flush_block(struct kcore_content_hasher *c)
{
	struct kcore_error *err = NULL;

	if (c->fill && !kcore_is_zero(c->blk, c->fill)) {
		unsigned char d[KCORE_DIGEST_LEN];

		kcore_block_digest(c->method, c->blk, c->fill, d);
		err = kcore_seg_hasher_add(c->h,
					   (c->pos - 1) / KCORE_HASH_BLOCK, d);
	}
	c->fill = 0;
	return err;
}

static uint64_t block_room(const struct kcore_content_hasher *c)
{
	uint64_t room = KCORE_HASH_BLOCK - c->pos % KCORE_HASH_BLOCK;

	return room < c->size - c->pos ? room : c->size - c->pos;
}

struct kcore_error *kcore_content_hasher_add(struct kcore_content_hasher *c,
					     const void *data, uint64_t len)
{
	const unsigned char *p = data;

	if (len > c->size - c->pos)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "more content than the segment "
					  "holds");
	while (len) {
		uint64_t n = block_room(c);

		if (n > len)
			n = len;
		memcpy(c->blk + c->fill, p, n);
		c->fill += n;
		c->pos += n;
		p += n;
		len -= n;
		if (c->pos % KCORE_HASH_BLOCK == 0 || c->pos == c->size) {
			struct kcore_error *err = flush_block(c);

			if (err)
				return err;
		}
	}
	return NULL;
}

struct kcore_error *
kcore_content_hasher_add_zeros(struct kcore_content_hasher *c, uint64_t len)
{
	if (len > c->size - c->pos)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "more content than the segment "
					  "holds");
	while (len) {
		uint64_t n = block_room(c);

		if (n > len)
			n = len;
		if (c->fill == 0 && c->pos % KCORE_HASH_BLOCK == 0 &&
		    len >= KCORE_HASH_BLOCK) {
			/* Whole zero blocks contribute nothing: pass them all
			 * at once (a segment may declare 2^61 bytes). */
			n = len / KCORE_HASH_BLOCK * KCORE_HASH_BLOCK;
			c->pos += n;
		} else if (c->fill == 0 && n == block_room(c) &&
			   (c->pos + n) % KCORE_HASH_BLOCK == 0) {
			/* A whole zero block: nothing to hash. */
			c->pos += n;
		} else {
			memset(c->blk + c->fill, 0, n);
			c->fill += n;
			c->pos += n;
			if (c->pos % KCORE_HASH_BLOCK == 0 ||
			    c->pos == c->size) {
				struct kcore_error *err = flush_block(c);

				if (err)
					return err;
			}
		}
		len -= n;
	}
	return NULL;
}

struct kcore_error *
kcore_content_hasher_finish(struct kcore_content_hasher *c,
			    unsigned char out[KCORE_DIGEST_LEN])
{
	struct kcore_error *err = NULL;

	if (c->pos < c->size)
		err = kcore_content_hasher_add_zeros(c, c->size - c->pos);
	if (!err)
		err = flush_block(c);
	kcore_seg_hasher_finish(c->h, out);
	return err;
}

void kcore_content_hasher_destroy(struct kcore_content_hasher *c)
{
	if (!c)
		return;
	kcore_seg_hasher_destroy(c->h);
	free(c->blk);
	free(c);
}

/* ---- the SHA-256 of a file's bytes (what sha256sum prints) ---- */

/* Through the SHA-256 implementation chosen for this CPU (sha256.c). */
struct kcore_file_hasher {
	struct sha256_long s;
};

struct kcore_error *
kcore_file_hasher_create_with(enum kcore_sha256_impl impl,
			      struct kcore_file_hasher **ret)
{
	struct kcore_file_hasher *h = calloc(1, sizeof(*h));
	struct kcore_error *err;

	if (!h)
		return &kcore_error_nomem;
	err = sha256_long_init_with(&h->s, impl);
	if (err) {
		free(h);
		return err;
	}
	*ret = h;
	return NULL;
}

struct kcore_error *kcore_file_hasher_create(struct kcore_file_hasher **ret)
{
	const struct kcore_sha256_choice *c;
	struct kcore_error *err = kcore_sha256_choose(&c);

	return err ? err : kcore_file_hasher_create_with(c->impl, ret);
}

void kcore_file_hasher_add(struct kcore_file_hasher *h, const void *data,
			   size_t len)
{
	sha256_long_update(&h->s, data, len);
}

void kcore_file_hasher_add_zeros(struct kcore_file_hasher *h, uint64_t len)
{
	static const unsigned char zeros[64 * 1024];

	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		kcore_file_hasher_add(h, zeros, n);
		len -= n;
	}
}

void kcore_file_hasher_finish(struct kcore_file_hasher *h,
			      unsigned char out[KCORE_DIGEST_LEN])
{
	sha256_long_final(&h->s, out);
}

void kcore_file_hasher_destroy(struct kcore_file_hasher *h)
{
	if (!h)
		return;
	sha256_long_free(&h->s);
	free(h);
}
