// SPDX-License-Identifier: MIT
/*
 * Verifying a compressed dump that allows no random access (no seek table
 * or index): decoded once, front to back, the header area first, then the
 * segments in file order, then the trailer.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "elf-parse.h"
#include "metanote.h"
#include "plan.h"
#include "source-impl.h"
#include "kcoredump/verify.h"
#include "verify-internal.h"
#include "kcoredump/stream.h"

#define MAX_HEADER (256u << 20)

struct sload {
	size_t idx; /* in the result */
	uint64_t offset, filesz;
};

static int cmp_sload(const void *a, const void *b)
{
	const struct sload *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Stream bytes into a content hasher, zeros as zeros. */
static struct kcore_error *hash_bytes(struct kcore_content_hasher *h,
				      const unsigned char *buf, uint64_t len)
{
	if (kcore_is_zero(buf, len))
		return kcore_content_hasher_add_zeros(h, len);
	return kcore_content_hasher_add(h, buf, len);
}

static struct kcore_error *sread(struct kcore_istream *is, const char *path,
				 void *buf, size_t len, uint64_t at)
{
	size_t done = 0;

	while (done < len) {
		size_t n;
		struct kcore_error *err = kcore_istream_read(
			is, (char *)buf + done, len - done, &n);

		if (err)
			return err;
		if (!n)
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, path, at + done,
				"the decompressed stream ends at offset "
				"0x%" PRIx64 " inside the dump",
				at + done);
		done += n;
	}
	return NULL;
}

/* Read the header area (ELF header to the first PT_LOAD) and the phdrs. */
static struct kcore_error *
stream_header(struct kcore_istream *is, const char *path,
	      unsigned char **ret_hdr, size_t *ret_len,
	      struct kcore_elf_phdr **ret_ph, size_t *ret_phnum)
{
	unsigned char ehdr[sizeof(Elf64_Ehdr)];
	struct kcore_elf_ehdr eh;
	unsigned char *hdr;
	uint64_t hdr_len = sizeof(ehdr), phnum, first = UINT64_MAX;
	struct kcore_elf_phdr *ph;
	struct kcore_error *err = sread(is, path, ehdr, sizeof(ehdr), 0);

	if (err)
		return err;
	kcore_elf_decode_ehdr(ehdr, &eh);
	if (memcmp(ehdr, ELFMAG, SELFMAG) || ehdr[EI_CLASS] != ELFCLASS64 ||
	    ehdr[EI_DATA] != ELFDATA2LSB || eh.type != ET_CORE ||
	    eh.phentsize != sizeof(Elf64_Phdr) || eh.phoff < sizeof(ehdr))
		return kcore_error_create_at(KCORE_ERR_UNSUPPORTED, 0, path, 0,
					     "the decompressed stream is not a "
					     "64-bit little-endian ELF core");
	phnum = eh.phnum;
	/* Our writer puts section header 0 (PN_XNUM) after the phdrs; read
	 * the table and learn the count from sh_info. */
	if (phnum == PN_XNUM) {
		if (eh.shoff < eh.phoff || eh.shoff > MAX_HEADER)
			return kcore_error_create_at(KCORE_ERR_FORMAT, 0, path,
						     0x28,
						     "bad PN_XNUM e_shoff");
		hdr_len = eh.shoff + sizeof(Elf64_Shdr);
	} else if (kcore_elf_range_past(eh.phoff, phnum * sizeof(Elf64_Phdr),
					MAX_HEADER)) {
		hdr_len = UINT64_MAX;
	} else {
		hdr_len = eh.phoff + phnum * sizeof(Elf64_Phdr);
	}
	if (hdr_len > MAX_HEADER)
		return kcore_error_create_at(KCORE_ERR_UNSUPPORTED, 0, path,
					     0x20,
					     "program header table too "
					     "large");
	hdr = malloc(hdr_len);
	if (!hdr)
		return &kcore_error_nomem;
	memcpy(hdr, ehdr, sizeof(ehdr));
	err = sread(is, path, hdr + sizeof(ehdr), hdr_len - sizeof(ehdr),
		    sizeof(ehdr));
	if (!err && phnum == PN_XNUM) {
		phnum = kcore_elf_xnum_count(&eh, hdr + eh.shoff);
		if (kcore_elf_range_past(eh.phoff, phnum * sizeof(Elf64_Phdr),
					 eh.shoff))
			err = kcore_error_create_at(KCORE_ERR_FORMAT, 0, path,
						    eh.shoff,
						    "PN_XNUM count overlaps");
	}
	if (err) {
		free(hdr);
		return err;
	}
	ph = calloc(phnum ? phnum : 1, sizeof(*ph));
	if (!ph) {
		free(hdr);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < phnum; i++) {
		kcore_elf_decode_phdr(true, false,
				      hdr + eh.phoff + i * sizeof(Elf64_Phdr),
				      &ph[i]);
		if (ph[i].type == PT_LOAD && ph[i].offset < first)
			first = ph[i].offset;
	}
	/* Extend the buffer to cover the notes before the first load. */
	if (first != UINT64_MAX && first > hdr_len) {
		unsigned char *more;

		if (first > MAX_HEADER) {
			free(ph);
			free(hdr);
			return kcore_error_create_at(KCORE_ERR_UNSUPPORTED, 0,
						     path, 0,
						     "header area too large");
		}
		more = realloc(hdr, first);
		if (!more) {
			free(ph);
			free(hdr);
			return &kcore_error_nomem;
		}
		hdr = more;
		err = sread(is, path, hdr + hdr_len, first - hdr_len, hdr_len);
		hdr_len = first;
	}
	if (err) {
		free(ph);
		free(hdr);
		return err;
	}
	*ret_hdr = hdr;
	*ret_len = hdr_len;
	*ret_ph = ph;
	*ret_phnum = phnum;
	return NULL;
}

/* Find our metadata note in the header area. */
static void stream_notes(const unsigned char *hdr, size_t len,
			 const struct kcore_elf_phdr *ph, size_t phnum,
			 struct kcore_verify_result *r)
{
	for (size_t i = 0; i < phnum; i++) {
		struct kcore_elf_notes it;
		struct kcore_elf_note n;

		if (ph[i].type != PT_NOTE ||
		    kcore_elf_range_past(ph[i].offset, ph[i].filesz, len))
			continue;
		kcore_elf_notes_init(&it, hdr + ph[i].offset, ph[i].filesz,
				     false, 4, true);
		while (kcore_elf_notes_next(&it, &n) == KCORE_ELF_NOTE_OK)
			if (kcore_elf_note_is(&n, KCORE_META_NOTE_NAME))
				kcore_verify_apply_metadata(
					r, (const char *)n.desc,
					strnlen((const char *)n.desc,
						n.descsz));
	}
}

struct kcore_error *kcore_verify_stream(int fd, const char *path,
					struct vctl *vc,
					struct kcore_verify_result *r)
{
	struct kcore_istream *is;
	unsigned char *hdr = NULL, *buf = NULL;
	struct kcore_elf_phdr *ph = NULL;
	struct sload *loads = NULL;
	size_t hdr_len = 0, phnum = 0, n = 0;
	uint64_t pos;
	struct kcore_error *err = kcore_istream_open(fd, path, &is);

	if (err)
		return err;
	r->method = kcore_istream_method(is);
	err = stream_header(is, path, &hdr, &hdr_len, &ph, &phnum);
	if (err)
		goto out;
	for (size_t i = 0; i < phnum; i++)
		n += ph[i].type == PT_LOAD;
	r->segs = calloc(n ? n : 1, sizeof(*r->segs));
	loads = calloc(n ? n : 1, sizeof(*loads));
	buf = malloc(CHUNK);
	if (!r->segs || !loads || !buf) {
		err = &kcore_error_nomem;
		goto out;
	}
	r->nsegs = n;
	for (size_t i = 0, k = 0; i < phnum; i++) {
		if (ph[i].type != PT_LOAD)
			continue;
		r->segs[k] = (struct kcore_verify_segment){
			.vaddr = ph[i].vaddr,
			.paddr = ph[i].paddr,
			.has_paddr = ph[i].paddr != UINT64_MAX,
			.size = ph[i].memsz,
		};
		loads[k] = (struct sload){ k, ph[i].offset, ph[i].filesz };
		k++;
	}
	stream_notes(hdr, hdr_len, ph, phnum, r);
	qsort(loads, n, sizeof(*loads), cmp_sload);
	for (size_t k = 0; k < n; k++)
		if (loads[k].offset + loads[k].filesz > vc->total)
			vc->total = loads[k].offset + loads[k].filesz;
	pos = hdr_len;
	for (size_t k = 0; !err && k < n;) {
		struct kcore_content_hasher *h, **in = NULL;
		uint64_t end = loads[k].offset + loads[k].filesz;
		size_t ni = 0;

		if (loads[k].offset < pos) {
			err = kcore_error_create_at(
				KCORE_ERR_UNSUPPORTED, 0, path, loads[k].offset,
				"segments overlap; a stream cannot be "
				"verified");
			break;
		}
		/* Loads inside this one (the kernel image inside RAM) are
		 * hashed from the same bytes as they pass. */
		while (k + 1 + ni < n && loads[k + 1 + ni].offset < end &&
		       loads[k + 1 + ni].offset + loads[k + 1 + ni].filesz <=
			       end)
			ni++;
		if (ni && !(in = calloc(ni, sizeof(*in)))) {
			err = &kcore_error_nomem;
			break;
		}
		while (!err && pos < loads[k].offset) { /* padding */
			uint64_t m = loads[k].offset - pos;

			m = m < CHUNK ? m : CHUNK;
			err = sread(is, path, buf, m, pos);
			pos += m;
			if (!err)
				err = kcore_verify_step(vc, m, path);
		}
		if (!err)
			err = kcore_content_hasher_create(
				r->block_hash, r->segs[loads[k].idx].size, &h);
		for (size_t i = 0; !err && i < ni; i++)
			err = kcore_content_hasher_create(
				r->block_hash,
				r->segs[loads[k + 1 + i].idx].size, &in[i]);
		if (err) {
			for (size_t i = 0; i < ni; i++)
				kcore_content_hasher_destroy(in[i]);
			free(in);
			break;
		}
		for (uint64_t done = 0; !err && done < loads[k].filesz;) {
			uint64_t m = loads[k].filesz - done;

			m = m < CHUNK ? m : CHUNK;
			err = sread(is, path, buf, m, pos);
			if (!err)
				err = hash_bytes(h, buf, m);
			for (size_t i = 0; !err && i < ni; i++) {
				const struct sload *l = &loads[k + 1 + i];
				uint64_t lo = l->offset > pos ? l->offset : pos;
				uint64_t hi = l->offset + l->filesz < pos + m
						      ? l->offset + l->filesz
						      : pos + m;

				if (lo < hi)
					err = hash_bytes(in[i],
							 buf + (lo - pos),
							 hi - lo);
			}
			if (!err)
				err = kcore_verify_step(vc, m, path);
			done += m;
			pos += m;
		}
		if (!err)
			err = kcore_content_hasher_finish(
				h, r->segs[loads[k].idx].actual);
		kcore_content_hasher_destroy(h);
		for (size_t i = 0; i < ni; i++) {
			if (!err)
				err = kcore_content_hasher_finish(
					in[i],
					r->segs[loads[k + 1 + i].idx].actual);
			kcore_content_hasher_destroy(in[i]);
		}
		free(in);
		k += 1 + ni;
	}
	if (!err && r->digest_location == KCORE_DIGESTS_TRAILER) {
		/* The rest of the stream: metadata text, le64 len, magic. */
		size_t cap = 1 << 16, len = 0, got;
		char *t = malloc(cap);

		while (t && !err) {
			if (len == cap) {
				char *nt = cap < MAX_TRAILER
						   ? realloc(t, 2 * cap)
						   : NULL;
				if (!nt) {
					err = kcore_error_create_at(
						KCORE_ERR_FORMAT, 0, path, pos,
						"trailer too large");
					break;
				}
				t = nt;
				cap *= 2;
			}
			err = kcore_istream_read(is, t + len, cap - len, &got);
			if (!err && !got)
				break;
			len += got;
		}
		if (!t && !err)
			err = &kcore_error_nomem;
		if (!err) {
			uint64_t tl = 0;

			if (len >= 16)
				memcpy(&tl, t + len - 16, 8);
			if (len < 16 || memcmp(t + len - 8, TRAILER_MAGIC, 8) ||
			    tl > len - 16)
				err = kcore_error_create_at(
					KCORE_ERR_FORMAT, 0, path, pos,
					"no kcoredump trailer after the last "
					"segment");
			else
				kcore_verify_apply_metadata(
					r, t + len - 16 - tl, tl);
		}
		free(t);
	}
	if (!err)
		kcore_verify_finish(r);
out:
	free(buf);
	free(loads);
	free(ph);
	free(hdr);
	kcore_istream_destroy(is);
	return err;
}
