// SPDX-License-Identifier: MIT
/*
 * The core handler's store: the copy of the stream into the output file
 * (within what the limits allow: corehandler-vacuum.c), its digest, the
 * first pages and stack windows a compressed core keeps for the build
 * IDs, names, and publishing the core with its metadata.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "coredir.h"
#include "corehandler-internal.h"
#include "corehandler-vacuum.h"

#define PAGE  CH_PAGE
#define BLOCK CH_BLOCK

/* ---- writing ---- */

static struct kcore_error *write_at(struct ch *ch, uint64_t off,
				    const void *buf, size_t len)
{
	struct kcore_error *err;

	if (!ch->os) {
		err = kcore_pwrite_all(NULL, ch->out->fd, ch->out->tmp, buf,
				       len, off);
	} else {
		if (off < ch->zpos)
			return kcore_error_create_at(KCORE_ERR_INVALID, 0,
						     ch->out->tmp, off,
						     "stream written out of "
						     "order");
		if (off > ch->zpos)
			ch->zruns++;
		err = kcore_ostream_write_zeros(ch->os, off - ch->zpos);
		if (!err)
			err = kcore_ostream_write(ch->os, buf, len);
		ch->zpos = off + len;
	}
	if (!err) {
		if (ch->os)
			ch->zdata += len;
		else
			ch->stored += len;
	}
	return err;
}

/*
 * The copy ends at off: where a limit, the time or the stream stopped
 * it.  A cut core ends at a page boundary (the headers and notes are
 * always kept whole), so every segment it keeps holds whole pages.
 */
void ch_store_set_cut(struct ch *ch, uint64_t off, enum kcore_ch_reason why)
{
	if (ch->cut != UINT64_MAX)
		return;
	if (off > ch->prefix_len) {
		off -= off % PAGE;
		if (off < ch->prefix_len)
			off = ch->prefix_len;
	}
	ch->cut = off;
	ch->res->reason = why;
}

/*
 * The file system filled up writing at run (in the block at bstart),
 * limits or not: the core is cut and published like one a limit stopped,
 * the headers and notes always kept.  The cut leaves room for the
 * metadata (which is written next): CH_NO_SPACE_ROOM before run in this
 * block, or, when run starts the block, the whole block before it too
 * (its digest record dropped: the digest then ends at a block boundary).
 */
static void no_space(struct ch *ch, uint64_t bstart, uint64_t run)
{
	uint64_t at = run - bstart >= CH_NO_SPACE_ROOM ? run - CH_NO_SPACE_ROOM
						       : bstart;

	if (at == bstart && bstart >= BLOCK &&
	    bstart - BLOCK >= ch->prefix_len) {
		at = bstart - BLOCK;
		while (ch->nrecs && kcore_load(ch->recs + 40 * (ch->nrecs - 1),
					       8, false) >= at / BLOCK)
			ch->nrecs--;
	}
	ch_store_set_cut(ch, at, KCORE_CH_NO_SPACE);
}

/* Write the non-zero pages of block [bstart, bstart + n) past the headers. */
static struct kcore_error *store_block(struct ch *ch, const unsigned char *buf,
				       uint64_t bstart, size_t n)
{
	uint64_t run = 0, run_len = 0;
	size_t i = 0;

	if (bstart + n <= ch->prefix_len)
		return NULL;
	if (bstart < ch->prefix_len)
		i = (size_t)(ch->prefix_len - bstart);
	while (i <= n) {
		size_t pend = (i / PAGE + 1) * PAGE;
		bool zero = false;

		if (i < n) {
			if (pend > n)
				pend = n;
			zero = kcore_is_zero(buf + i, pend - i);
			if (zero)
				ch->res->zero_bytes += pend - i;
			else
				ch->res->data_bytes += pend - i;
		}
		if (i < n && !zero) {
			if (!run_len)
				run = bstart + i;
			run_len += pend - i;
			i = pend;
			continue;
		}
		if (run_len) {
			enum kcore_ch_reason why;
			uint64_t allow = ch_vacuum_allowance(ch, run_len, &why);
			struct kcore_error *err = NULL;

			if (allow)
				err = write_at(ch, run, buf + (run - bstart),
					       (size_t)allow);
			if (err && !ch->os &&
			    (err->errnum == ENOSPC || err->errnum == EDQUOT ||
			     err->errnum == EFBIG)) {
				kcore_error_destroy(err);
				no_space(ch, bstart, run);
				ch->res->data_bytes -= run_len;
				return NULL;
			}
			if (err)
				return err;
			if (allow < run_len) {
				ch_store_set_cut(ch, run + allow, why);
				ch->res->data_bytes -= run_len - allow;
				return NULL;
			}
			run_len = 0;
		}
		if (i == n)
			break;
		i = pend;
	}
	return NULL;
}

/* For a .zst, keep the first page of each PT_LOAD as it passes (for the
 * build IDs; a sparse ELF is read back instead); buf NULL: n zeros. */
static void capture(struct ch *ch, const unsigned char *buf, uint64_t bstart,
		    size_t n)
{
	uint64_t bend = bstart + n;

	/* The stack windows (zeros are there already). */
	for (size_t w = 0; buf && w < ch->nwins; w++) {
		const struct ch_window *win = &ch->wins[w];
		uint64_t from = win->off > bstart ? win->off : bstart;
		uint64_t to =
			win->off + win->len < bend ? win->off + win->len : bend;

		if (to > from)
			memcpy(ch->win_buf + win->buf_off + (from - win->off),
			       buf + (from - bstart), to - from);
	}

	while (ch->os && ch->next_cap < ch->norder && !ch->cap_full) {
		size_t idx = ch->order[ch->next_cap];
		const struct ch_phdr *p = &ch->ph[idx];
		struct ch_capture *c = &ch->caps[idx];
		uint64_t cs = p->offset,
			 ce = p->offset + (p->filesz < PAGE ? p->filesz : PAGE);
		uint64_t from, to;

		if (cs >= bend)
			return;
		if (!c->len && !c->done) {
			if (ch->cap_len + PAGE > CH_MAX_CAPTURE) {
				ch->cap_full = true;
				return;
			}
			if (ch->cap_len + PAGE > ch->cap_size) {
				size_t size = ch->cap_size ? 2 * ch->cap_size
							   : 64 * PAGE;
				unsigned char *m = realloc(ch->cap, size);

				if (!m) {
					ch->cap_full = true;
					return;
				}
				ch->cap = m;
				ch->cap_size = size;
			}
			c->off = ch->cap_len;
		}
		from = cs > bstart ? cs : bstart;
		to = ce < bend ? ce : bend;
		if (to > from) {
			if (buf)
				memcpy(ch->cap + c->off + (from - cs),
				       buf + (from - bstart), to - from);
			else
				memset(ch->cap + c->off + (from - cs), 0,
				       to - from);
			if (to - cs > c->len)
				c->len = (uint32_t)(to - cs);
		}
		if (ce > bend)
			return;
		c->done = true;
		if (!c->len || kcore_is_zero(ch->cap + c->off, c->len))
			c->len = 0; /* nothing to learn; reuse the room */
		else
			ch->cap_len = c->off + c->len;
		ch->next_cap++;
	}
}

static struct kcore_error *add_record(struct ch *ch, uint64_t index,
				      const unsigned char *data, size_t len)
{
	unsigned char *r;

	if (kcore_is_zero(data, len))
		return NULL;
	if (ch->nrecs == ch->caprecs) {
		size_t cap = ch->caprecs ? 2 * ch->caprecs : 256;
		unsigned char *m = realloc(ch->recs, cap * 40);

		if (!m)
			return &kcore_error_nomem;
		ch->recs = m;
		ch->caprecs = cap;
	}
	r = ch->recs + ch->nrecs++ * 40;
	for (int i = 0; i < 8; i++)
		r[i] = (unsigned char)(index >> (8 * i));
	kcore_sha256(data, len, r + 8);
	return NULL;
}

struct kcore_error *ch_store_finish_digest(struct ch *ch, uint64_t size)
{
	struct kcore_seg_hasher *h;
	struct kcore_error *err = kcore_seg_hasher_create(size, &h);

	if (err)
		return err;
	for (size_t i = 0; !err && i < ch->nrecs; i++) {
		const unsigned char *r = ch->recs + 40 * i;

		err = kcore_seg_hasher_add(h, kcore_load(r, 8, false), r + 8);
	}
	if (!err)
		kcore_seg_hasher_finish(h, ch->res->sha256);
	kcore_seg_hasher_destroy(h);
	return err;
}

/* Whether the stream stops at the end of this block: then only its whole
 * pages are stored (a cut core ends at a page boundary). */
static bool stopping(const struct ch *ch)
{
	return ch->stopped || (ch->eof && ch->res->stream_bytes < ch->expected);
}

struct kcore_error *ch_store_copy(struct ch *ch)
{
	unsigned char *buf = aligned_alloc(PAGE, BLOCK);
	struct kcore_error *err = NULL;

	if (!buf)
		return &kcore_error_nomem;
	for (uint64_t bstart = 0;; bstart += BLOCK) {
		size_t n = 0, got;
		uint64_t keep, run;

		if (bstart < ch->prefix_len) {
			n = ch->prefix_len - bstart < BLOCK
				    ? (size_t)(ch->prefix_len - bstart)
				    : BLOCK;
			memcpy(buf, ch->prefix + bstart, n);
		} else if ((run = ch_zero_run(ch, bstart, BLOCK))) {
			uint64_t done, whole;

			err = ch_drain(ch, bstart, run, &done);
			if (err)
				break;
			whole = done - done % BLOCK;
			if (whole) {
				/* Zeros: nothing to store or to hash. */
				ch->res->zero_bytes += whole;
				capture(ch, NULL, bstart, whole);
				bstart += whole;
			}
			n = (size_t)(done - whole);
			memset(buf, 0, n);
		}
		if (n < BLOCK) {
			err = ch_fill(ch, buf + n, BLOCK - n, &got);
			if (err)
				break;
			n += got;
		}
		if (ch->o->cancel && *ch->o->cancel && !ch->stopped) {
			ch->stopped = true;
			ch->stop_reason = KCORE_CH_CANCELLED;
		}
		if (stopping(ch) && bstart + n > ch->prefix_len) {
			uint64_t end = bstart + n;

			end -= end % PAGE;
			if (end < ch->prefix_len)
				end = ch->prefix_len;
			n = end > bstart ? (size_t)(end - bstart) : 0;
		}
		if (!n) {
			if (stopping(ch))
				ch_store_set_cut(ch, bstart,
						 ch->stopped ? ch->stop_reason
							     : KCORE_CH_SHORT);
			break;
		}
		err = store_block(ch, buf, bstart, n);
		if (err)
			break;
		capture(ch, buf, bstart, n);
		keep = ch->cut == UINT64_MAX || ch->cut >= bstart + n ? n
		       : ch->cut > bstart ? ch->cut - bstart
					  : 0;
		err = add_record(ch, bstart / BLOCK, buf, (size_t)keep);
		if (err || ch->cut != UINT64_MAX)
			break;
		if (stopping(ch)) {
			ch_store_set_cut(ch, bstart + n,
					 ch->stopped ? ch->stop_reason
						     : KCORE_CH_SHORT);
			break;
		}
		if (ch->eof || n < BLOCK)
			break;
		if (ch->deadline_ns && ch_mono_ns() >= ch->deadline_ns) {
			ch_store_set_cut(ch, bstart + n, KCORE_CH_TIMEOUT);
			break;
		}
	}
	free(buf);
	return err;
}

/* ---- names and files ---- */

/* "core.COMM.UID.PID.TIME[.K]" free in the core's directory. */
static char *pick_base(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	const char *c = o->crash.comm && *o->crash.comm ? o->crash.comm
			: ch->fname && *ch->fname	? ch->fname
							: "unknown";
	char comm[64];
	size_t n = 0;

	/* File-name-safe: %e and pr_fname are the task's comm, any bytes. */
	for (; *c && n < sizeof(comm) - 1; c++)
		comm[n++] =
			(*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
					(*c >= '0' && *c <= '9') || *c == '-' ||
					*c == '_' || *c == '+' || *c == '.'
				? *c
				: '_';
	comm[n] = '\0';
	for (int k = 0; k < 100; k++) {
		static const char *const suffixes[] = { "", ".zst", ".xz",
							".json" };
		char *base;
		bool taken = false;

		if ((k ? asprintf(&base,
				  "core.%s.%" PRIu32 ".%" PRId64 ".%" PRId64
				  ".%d",
				  comm, o->crash.uid, o->crash.pid,
				  o->crash.time, k)
		       : asprintf(&base,
				  "core.%s.%" PRIu32 ".%" PRId64 ".%" PRId64,
				  comm, o->crash.uid, o->crash.pid,
				  o->crash.time)) < 0)
			return NULL;
		for (size_t i = 0; i < 4 && !taken; i++) {
			char *name;

			if (asprintf(&name, "%s%s", base, suffixes[i]) < 0) {
				free(base);
				return NULL;
			}
			taken = faccessat(ch->subdir_fd, name, F_OK,
					  AT_SYMLINK_NOFOLLOW) == 0 ||
				errno != ENOENT;
			free(name);
		}
		if (!taken)
			return base;
		free(base);
	}
	return NULL;
}

/* Where the core goes: user.UID (readable by the crashing user) or the
 * directory itself (root's only). */
static void choose_dir(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	char name[32];
	int fd;

	ch->subdir_fd = o->dir_fd;
	if (!ch->user_access)
		return;
	fd = kcore_coredir_user_dir(o->dir_fd, o->crash.uid, true);
	if (fd < 0 || ch_priv_grant_read(fd, o->crash.uid, true) < 0 ||
	    ch_priv_grant_search(o->dir_fd, o->crash.uid) < 0) {
		snprintf(ch->access_why, sizeof(ch->access_why),
			 "the directory cannot give uid %" PRIu32 " access: %s",
			 o->crash.uid, strerror(errno));
		ch->user_access = false;
		if (fd >= 0)
			close(fd);
		ch_log(ch, KCORE_CH_LOG_WARNING, "%s; the core stays root's",
		       ch->access_why);
		return;
	}
	snprintf(name, sizeof(name), KCORE_COREDIR_USER_PREFIX "%" PRIu32,
		 o->crash.uid);
	ch->res->subdir = strdup(name);
	ch->subdir_fd = fd;
}

struct kcore_error *ch_store_open(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_error *err;
	char *base;

	choose_dir(ch);
	base = pick_base(ch);
	if (!base)
		return kcore_error_create(KCORE_ERR_EXISTS, 0, o->dir,
					  "no free name for the core");
	if (asprintf(&ch->res->core_name, "%s%s", base,
		     o->compress == KCORE_COMPRESS_ZSTD ? ".zst"
		     : o->compress == KCORE_COMPRESS_XZ ? ".xz"
							: "") < 0 ||
	    asprintf(&ch->res->meta_name, "%s.json", base) < 0) {
		free(base);
		return &kcore_error_nomem;
	}
	free(base);
	err = kcore_output_openat(ch->subdir_fd, ch->res->core_name, o->sync,
				  &ch->out);
	if (err)
		return err;
	if (o->compress != KCORE_COMPRESS_NONE) {
		struct kcore_ostream_opts so = {
			.method = o->compress,
			.level = o->level,
			.threads = o->threads,
		};

		err = kcore_ostream_create(ch->out->fd, ch->out->tmp, &so,
					   &ch->os);
		if (err)
			return err;
	}
	return NULL;
}

/* Publish one file of ours, made in the core's directory. */
static struct kcore_error *write_meta(struct ch *ch, const char *text,
				      size_t len, struct kcore_output **ret)
{
	struct kcore_output *mo = NULL;
	struct kcore_error *err;

	err = kcore_output_openat(ch->subdir_fd, ch->res->meta_name,
				  ch->o->sync, &mo);
	if (!err)
		err = kcore_write_all(NULL, mo->fd, mo->tmp, text, len);
	if (!err && ch->user_access &&
	    ch_priv_grant_read(mo->fd, ch->o->crash.uid, false) < 0)
		err = kcore_error_create(KCORE_ERR_OS, errno,
					 ch->res->meta_name,
					 "cannot give uid %u read access",
					 (unsigned)ch->o->crash.uid);
	if (err) {
		kcore_output_destroy(mo);
		return err;
	}
	*ret = mo;
	return NULL;
}

struct kcore_error *ch_store_publish(struct ch *ch, const char *meta,
				     size_t meta_len)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_output *mo = NULL;
	struct ch_vacuum_publish vp;
	struct kcore_error *err;
	uint64_t meta_bytes = 0;
	struct stat st;

	if (ch->user_access &&
	    ch_priv_grant_read(ch->out->fd, o->crash.uid, false) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno,
					  ch->res->core_name,
					  "cannot give uid %u read access",
					  (unsigned)o->crash.uid);
	err = write_meta(ch, meta, meta_len, &mo);
	if (err)
		return err;
	/* The real sizes now, for the others. */
	if (fstat(ch->out->fd, &st) == 0)
		ch->stored = (uint64_t)st.st_blocks * 512;
	if (fstat(mo->fd, &st) == 0)
		meta_bytes = (uint64_t)st.st_blocks * 512;
	if (ch->os)
		ch->zdata = 0;
	ch_vacuum_publish_begin(ch, ch->stored + meta_bytes, &vp);
	/* The metadata first: a core is never visible without it. */
	err = kcore_output_commit(mo, meta_len);
	if (!err)
		err = kcore_output_commit(ch->out, ch->res->file_size);
	if (err && !mo->tmp)
		unlinkat(ch->subdir_fd, ch->res->meta_name, 0);
	ch_vacuum_publish_end(ch, &vp, !err, ch->stored + meta_bytes);
	kcore_output_destroy(mo);
	return err;
}

void ch_store_plan_stacks(struct ch *ch)
{
	size_t total = 0;

	if (!ch->os || !ch->o->backtrace_timeout_ms)
		return;
	for (size_t t = 0; t < ch->nsps; t++) {
		uint64_t sp = ch->sps[t] & ~(uint64_t)(PAGE - 1);
		struct ch_window *win = NULL;
		uint64_t rel, end;
		size_t i;

		for (i = 0; i < ch->phnum; i++)
			if (ch->ph[i].type == PT_LOAD &&
			    sp >= ch->ph[i].vaddr &&
			    sp - ch->ph[i].vaddr < ch->ph[i].filesz)
				break;
		if (i == ch->phnum)
			continue;
		rel = sp - ch->ph[i].vaddr;
		end = ch->ph[i].filesz - rel < CH_STACK_WINDOW
			      ? ch->ph[i].filesz
			      : rel + CH_STACK_WINDOW;
		/* One window a segment: threads sharing one widen it. */
		for (size_t w = 0; w < ch->nwins && !win; w++)
			if (ch->wins[w].ph == i)
				win = &ch->wins[w];
		if (win) {
			uint64_t ws = win->off - ch->ph[i].offset,
				 we = ws + win->len;

			ws = rel < ws ? rel : ws;
			we = end > we ? end : we;
			if (we - ws > 2 * CH_STACK_WINDOW)
				continue;
			total += (we - ws) - win->len;
			win->off = ch->ph[i].offset + ws;
			win->len = we - ws;
			continue;
		}
		win = &ch->wins[ch->nwins++];
		win->ph = i;
		win->off = ch->ph[i].offset + rel;
		win->len = end - rel;
		total += win->len;
	}
	if (!ch->nwins)
		return;
	ch->win_buf = calloc(1, total);
	if (!ch->win_buf) {
		ch->nwins = 0;
		return;
	}
	total = 0;
	for (size_t w = 0; w < ch->nwins; w++) {
		ch->wins[w].buf_off = total;
		total += ch->wins[w].len;
	}
}

unsigned char *ch_store_first_pages_core(struct ch *ch, size_t *ret_len)
{
	size_t shsize = ch->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t wlen = 0, len, end;
	unsigned char *img;

	for (size_t w = 0; w < ch->nwins; w++)
		wlen += ch->wins[w].len;
	len = ch->prefix_len + ch->cap_len + wlen + 8 + shsize;
	end = ch->prefix_len + ch->cap_len + wlen;
	img = calloc(1, len);
	if (!img)
		return NULL;
	memcpy(img, ch->prefix, ch->prefix_len);
	if (ch->cap_len)
		memcpy(img + ch->prefix_len, ch->cap, ch->cap_len);
	if (wlen)
		memcpy(img + ch->prefix_len + ch->cap_len, ch->win_buf, wlen);
	for (size_t i = 0; i < ch->phnum; i++)
		if (ch->ph[i].type == PT_LOAD)
			ch_put_phdr_file(ch, img, i,
					 ch->prefix_len + ch->caps[i].off,
					 ch->caps[i].len);
	/* A stack segment shows its window (its first page is of no
	 * use: no file starts there). */
	for (size_t w = 0; w < ch->nwins; w++) {
		const struct ch_window *win = &ch->wins[w];
		const struct ch_phdr *ph = &ch->ph[win->ph];
		uint64_t rel = win->off - ph->offset;

		ch_put_phdr_file(ch, img, win->ph,
				 ch->prefix_len + ch->cap_len + win->buf_off,
				 win->len);
		ch_put_phdr_vaddr(ch, img, win->ph, ph->vaddr + rel,
				  ph->memsz - rel);
	}
	if (ch->xnum) {
		end = (end + 7) & ~(size_t)7;
		ch_put_shoff(ch, img, end, 1, ch->shstrndx);
		end += ch_xnum_shdr(ch, img + end);
	} else {
		ch_put_shoff(ch, img, 0, 0, 0);
	}
	*ret_len = end;
	return img;
}

void ch_store_deinit(struct ch *ch)
{
	kcore_ostream_destroy(ch->os);
	ch->os = NULL;
	kcore_output_destroy(ch->out);
	ch->out = NULL;
	if (ch->subdir_fd >= 0 && ch->subdir_fd != ch->o->dir_fd)
		close(ch->subdir_fd);
	ch->subdir_fd = -1;
	ch_vacuum_leave(ch);
	free(ch->cap);
	free(ch->win_buf);
	free(ch->recs);
}
