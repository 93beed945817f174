/* SPDX-License-Identifier: MIT */
/*
 * Internal to libkcore: the SHA-256 of the output file's bytes (what
 * sha256sum prints), computed in file order on a thread of its own while
 * the dump writes them (file-hash.c).  The writing thread hands over each
 * run of bytes once it is written: by reference (a buffer that stays
 * untouched until kcore_file_hash_wait() says the hash is past it: the
 * pipeline's blocks), as a copy (headers, compressed frames) or as a
 * count of zeros (the holes of a sparse file).  A whole file is read
 * back into it (kcore_file_hash_read()): a file the dump wrote out of
 * order (dump/dump-file-sha256.c), and kcore_file_sha256()'s, so every
 * read-back reads while this thread hashes.
 */
#ifndef KCOREDUMP_FILE_HASH_H
#define KCOREDUMP_FILE_HASH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "kcoredump/dump.h"

struct kcore_file_hash;

/* Start the hashing thread (if it cannot start, the runs are hashed
 * as they are handed over, on the adding thread). */
struct kcore_error *kcore_file_hash_start(struct kcore_file_hash **ret);
/* len bytes at p, which must stay as they are until kcore_file_hash_wait()
 * with the ticket returned has come back. */
uint64_t kcore_file_hash_add_ref(struct kcore_file_hash *h, const void *p,
				 size_t len);
/* len bytes at p, copied (the caller may reuse p at once). */
struct kcore_error *kcore_file_hash_add_copy(struct kcore_file_hash *h,
					     const void *p, size_t len);
/* len zero bytes. */
void kcore_file_hash_add_zeros(struct kcore_file_hash *h, uint64_t len);
/* task(arg) run on the hashing thread after what was handed over before
 * it (work that would otherwise keep the writing thread from writing
 * while this one waits for bytes); its ticket. */
uint64_t kcore_file_hash_add_task(struct kcore_file_hash *h,
				  void (*task)(void *), void *arg);
/* Runs handed over and not yet hashed (by the adding thread). */
uint64_t kcore_file_hash_backlog(struct kcore_file_hash *h);
/* Until everything handed over up to ticket is hashed. */
void kcore_file_hash_wait(struct kcore_file_hash *h, uint64_t ticket);
/* The buffer kcore_file_hash_read() reads into: pieces small enough to
 * stay in the cache between the read and the hash, enough of them to
 * keep the hashing thread fed. */
#define KCORE_FILE_HASH_PIECE  (256u << 10)
#define KCORE_FILE_HASH_PIECES 8
#define KCORE_FILE_HASH_READ_BUF \
	((size_t)KCORE_FILE_HASH_PIECE * KCORE_FILE_HASH_PIECES)
/* The first size bytes of the open file fd (path names it in errors)
 * handed over in order: its data read in pieces into buf (NULL: one is
 * allocated), each hashed while the next is read, its holes (SEEK_DATA,
 * SEEK_HOLE) and what lies past its end on disk handed over as zeros,
 * not read.  A cancel is seen between pieces.  When it returns, nothing
 * handed over refers to buf; on an error the thread has stopped, its
 * digest lost: h is only to be destroyed. */
struct kcore_error *kcore_file_hash_read(struct kcore_file_hash *h, int fd,
					 const char *path, uint64_t size,
					 volatile sig_atomic_t *cancel,
					 unsigned char *buf);
/* Wait for the rest, then the digest. */
void kcore_file_hash_finish(struct kcore_file_hash *h,
			    unsigned char out[KCORE_DIGEST_LEN]);
/* Seconds the thread spent hashing (not waiting for bytes). */
double kcore_file_hash_busy(struct kcore_file_hash *h);
/* Stop the thread (at once if not finished) and free everything. */
void kcore_file_hash_destroy(struct kcore_file_hash *h);

#endif
