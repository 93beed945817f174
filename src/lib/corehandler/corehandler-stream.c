// SPDX-License-Identifier: MIT
/*
 * The core handler's stream: reading the pipe the kernel writes the core
 * into, the ELF header, program headers and notes (all hostile: every
 * field is checked before use), and the program headers of a core cut
 * short.  Nothing here opens a file or decides about the store.
 *
 * The kernel writes a core into the pipe a page at a time and wakes the
 * reader whenever the pipe was empty: reading each page as it comes costs
 * two system calls and two context switches per 4 KiB, which is most of
 * the cost of a sparse stream.  After a small read, let the pipe fill for
 * about the time the writer needs for SMALL_READ bytes at its recent rate
 * (at most 2 ms), so that reads come back with many pages each.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "bytes.h"
#include "corehandler-internal.h"
#include "elf-parse.h"
#include "metanote.h"

#define PAGE	   CH_PAGE
#define MAX_PREFIX CH_MAX_PREFIX

#define SMALL_READ   (256u << 10)
#define MAX_BATCH_NS 2000000u

static void batch_wait(struct ch *ch, uint64_t got)
{
	uint64_t now = ch_mono_ns(), dt = now - ch->last_read_ns, wait;
	struct timespec ts;

	ch->last_read_ns = now;
	if (!dt || dt > 100000000u)
		return; /* the first read, or the writer was idle */
	/* got bytes took dt: SMALL_READ bytes take SMALL_READ * dt / got. */
	wait = got ? (uint64_t)((double)SMALL_READ * (double)dt / (double)got)
		   : MAX_BATCH_NS;
	if (wait > MAX_BATCH_NS)
		wait = MAX_BATCH_NS;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)wait;
	nanosleep(&ts, NULL);
	ch->last_read_ns = ch_mono_ns();
}

/*
 * The time limit is for the bytes that hold data.  Where the crashing
 * process's page tables have nothing (a hole run of ch->holes), the
 * kernel walks its page tables and then writes zeros, and that takes
 * long for a large sparse process (a 64 GiB one took minutes on a loaded
 * machine, for a few MiB of data): time spent waiting for or consuming
 * such bytes is given back to the deadline (and counted in hole_ns).
 * Inside a hole run the kernel does nothing but that: it faults nothing
 * in (an empty page of a private anonymous mapping), so it cannot block
 * there on I/O.
 */
static bool at_hole(const struct ch *ch)
{
	return ch_holes_contains(ch->holes, ch->res->stream_bytes);
}

static void credit_hole(struct ch *ch, uint64_t since)
{
	uint64_t t = ch_mono_ns() - since;

	ch->res->hole_ns += t;
	if (ch->deadline_ns)
		ch->deadline_ns += t;
}

/*
 * Wait until the stream has bytes to read (or has ended), at most until
 * the deadline (without one while the next byte is in a hole run: zeros):
 * false when the handler stopped instead (ch->stopped), or poll failed
 * (*ret_err).
 */
static bool wait_input(struct ch *ch, bool zeros, struct kcore_error **ret_err)
{
	*ret_err = NULL;
	while (!ch->stopped) {
		struct pollfd pfd = { .fd = ch->o->in_fd, .events = POLLIN };
		int wait_ms = 1000; /* look at the cancel flag each second */
		int r;

		if (ch->o->cancel && *ch->o->cancel) {
			ch->stopped = true;
			ch->stop_reason = KCORE_CH_CANCELLED;
			break;
		}
		if (ch->deadline_ns && !zeros) {
			uint64_t now = ch_mono_ns();

			if (now >= ch->deadline_ns) {
				ch->stopped = true;
				ch->stop_reason = KCORE_CH_TIMEOUT;
				break;
			}
			if ((ch->deadline_ns - now) / 1000000u < 1000u)
				wait_ms = (int)((ch->deadline_ns - now) /
						1000000u) +
					  1;
		}
		r = poll(&pfd, 1, wait_ms);
		if (r < 0 && errno != EINTR) {
			*ret_err = kcore_error_create_at(
				KCORE_ERR_OS, errno, ch->in_name,
				ch->res->stream_bytes, "poll failed");
			return false;
		}
		if (r > 0)
			return true;
	}
	return false;
}

/*
 * Read up to len bytes, waiting at most until the deadline; *ret_done is
 * short at the end of the stream or when stopped (ch->eof / ch->stopped).
 */
struct kcore_error *ch_fill(struct ch *ch, void *buf, size_t len,
			    size_t *ret_done)
{
	struct kcore_error *err;
	size_t done = 0;

	while (done < len && !ch->eof && !ch->stopped) {
		bool zeros = at_hole(ch);
		uint64_t start = ch_mono_ns();
		ssize_t n;

		if (!wait_input(ch, zeros, &err)) {
			if (zeros)
				credit_hole(ch, start);
			if (err)
				return err;
			break;
		}
		n = read(ch->o->in_fd, (char *)buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return kcore_error_create_at(
				KCORE_ERR_OS, errno, ch->in_name,
				ch->res->stream_bytes, "read failed");
		}
		if (n == 0) {
			ch->eof = true;
			break;
		}
		done += (size_t)n;
		ch->res->stream_bytes += (uint64_t)n;
		if ((size_t)n < SMALL_READ && done < len)
			batch_wait(ch, (uint64_t)n);
		if (zeros)
			credit_hole(ch, start);
	}
	*ret_done = done;
	return NULL;
}

/* Bytes waiting in the pipe, or -1. */
long ch_pipe_bytes(const struct ch *ch)
{
	int n;

	return ioctl(ch->o->in_fd, FIONREAD, &n) < 0 ? -1 : n;
}

/* Read the page tables no more: every later byte is read. */
void ch_drop_holes(struct ch *ch, const char *fmt, ...)
{
	va_list ap;

	ch->res->pagemap_scans += ch_holes_scans(ch->holes);
	ch_holes_destroy(ch->holes);
	ch->holes = NULL;
	free(ch->res->pagemap_why);
	ch->res->pagemap_why = NULL;
	va_start(ap, fmt);
	if (vasprintf(&ch->res->pagemap_why, fmt, ap) < 0)
		ch->res->pagemap_why = NULL;
	va_end(ap);
}

/*
 * Let the pipe fill until want bytes wait in it, sleeping for the time the
 * writer needs for the rest at the rate it showed so far; the writer's
 * end closing, or MAX_FILL_NS, ends the wait.  Returns the bytes waiting.
 */
#define MAX_FILL_NS 100000000u

static long fill_pipe(struct ch *ch, size_t want)
{
	uint64_t start = ch_mono_ns(), seen_ns = start;
	long avail = ch_pipe_bytes(ch), seen = avail;

	while (avail >= 0 && (size_t)avail < want) {
		struct pollfd pfd = { .fd = ch->o->in_fd, .events = POLLIN };
		uint64_t now = ch_mono_ns(), wait = 2000000u;
		struct timespec ts;

		if ((poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLHUP)) ||
		    now - start >= MAX_FILL_NS ||
		    (ch->o->cancel && *ch->o->cancel))
			break;
		if (avail > seen && now > seen_ns)
			wait = (uint64_t)((double)(want - (size_t)avail) *
					  (double)(now - seen_ns) /
					  (double)(avail - seen));
		if (wait < 100000u)
			wait = 100000u;
		if (wait > 20000000u)
			wait = 20000000u;
		seen = avail;
		seen_ns = now;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)wait;
		nanosleep(&ts, NULL);
		avail = ch_pipe_bytes(ch);
	}
	return avail;
}

/* Move up to len bytes from the socket through drain_pipe to /dev/null:
 * the bytes moved; -1 when the socket's splice failed, -2 when ours into
 * /dev/null did (errno). */
static ssize_t splice_sock(struct ch *ch, size_t len)
{
	ssize_t n = splice(ch->o->in_fd, NULL, ch->drain_pipe[1], NULL, len,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

	for (ssize_t out = 0; n > 0 && out < n;) {
		ssize_t k = splice(ch->drain_pipe[0], NULL, ch->null_fd, NULL,
				   (size_t)(n - out), SPLICE_F_MOVE);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* Bytes left in our pipe would come back as the
			 * stream's next ones: give up on the stream. */
			if (k == 0)
				errno = EIO;
			return -2;
		}
		out += k;
	}
	return n;
}

/*
 * Consume stream bytes [pos, pos + len), inside a hole run of the page
 * tables, without reading them: splice(2) hands the pipe's pages to
 * /dev/null.  Only bytes already in the pipe are taken, each time after
 * another look at the page tables (the kernel has decided about those
 * pages) finds them still empty.  *ret_done is short when a page appeared
 * there, at the end of the stream or when stopped; the caller reads the
 * rest.  Three quarters of the pipe at a time: fewer wake-ups, and the
 * kernel keeps writing meanwhile.  On the coredump socket the same,
 * through a pipe of ours (splice_sock()), as much as the socket holds.
 * The time it takes does not count for the deadline (at_hole()).
 */
struct kcore_error *ch_drain(struct ch *ch, uint64_t pos, uint64_t len,
			     uint64_t *ret_done)
{
	struct kcore_error *err = NULL;
	uint64_t done = 0, start = ch_mono_ns();

	while (done < len && !ch->eof && !ch->stopped && ch->holes) {
		size_t want = ch->pipe_size / 4 * 3, take;
		long avail;
		bool empty;
		ssize_t n;

		if (!wait_input(ch, true, &err))
			break;
		if (want > len - done)
			want = (size_t)(len - done);
		/* The socket holds what the kernel's send buffer allows
		 * (net.core.wmem_default: about 180 KiB of zeros here), then
		 * the writer waits for us: waiting for more only stalls it. */
		avail = ch->in_sock ? ch_pipe_bytes(ch) : fill_pipe(ch, want);
		if (avail < 0) {
			ch_drop_holes(ch, "FIONREAD on the stream failed: %s",
				      strerror(errno));
			break;
		}
		if (avail == 0) {
			/* Readable and empty: the kernel closed it. */
			ch->eof = true;
			break;
		}
		take = (uint64_t)avail < len - done ? (size_t)avail
						    : (size_t)(len - done);
		err = ch_holes_recheck(ch->holes, pos + done, pos + done + take,
				       &empty);
		if (err && err != &kcore_error_nomem) {
			char *d = kcore_error_describe(err);

			ch_drop_holes(ch, "%s",
				      d ? d : "the page tables failed");
			free(d);
			kcore_error_destroy(err);
			err = NULL;
		}
		if (err || !empty)
			break;
		n = ch->in_sock
			    ? splice_sock(ch, take)
			    : splice(ch->o->in_fd, NULL, ch->null_fd, NULL,
				     take, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == -2) {
			err = kcore_error_create_at(
				KCORE_ERR_OS, errno, ch->in_name,
				ch->res->stream_bytes,
				"splice to /dev/null failed");
			break;
		}
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			ch_drop_holes(ch, "splice from the stream failed: %s",
				      strerror(errno));
			break;
		}
		if (n == 0) {
			ch->eof = true;
			break;
		}
		done += (uint64_t)n;
		ch->res->stream_bytes += (uint64_t)n;
		ch->res->unread_bytes += (uint64_t)n;
		ch->last_read_ns = ch_mono_ns();
	}
	credit_hole(ch, start);
	*ret_done = done;
	return err;
}

/* Grow the prefix to len bytes of the stream; a short stream or a stop
 * here is an error: without headers there is nothing to store. */
static struct kcore_error *need_prefix(struct ch *ch, size_t len,
				       const char *what)
{
	size_t got;
	struct kcore_error *err;
	unsigned char *p;

	if (len <= ch->prefix_len)
		return NULL;
	if (len > MAX_PREFIX)
		return kcore_error_create_at(
			KCORE_ERR_UNSUPPORTED, 0, ch->in_name, ch->prefix_len,
			"%s would end at offset 0x%zx, beyond the %u MiB "
			"allowed for headers and notes",
			what, len, MAX_PREFIX >> 20);
	p = realloc(ch->prefix, len);
	if (!p)
		return &kcore_error_nomem;
	ch->prefix = p;
	err = ch_fill(ch, p + ch->prefix_len, len - ch->prefix_len, &got);
	if (err)
		return err;
	ch->prefix_len += got;
	if (ch->prefix_len < len)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, ch->in_name, ch->prefix_len,
			"the stream %s before the end of the %s (offset 0x%zx)",
			ch->stopped ? (ch->stop_reason == KCORE_CH_TIMEOUT
					       ? "timed out"
					       : "was cancelled")
				    : "ended",
			what, len);
	return NULL;
}

/* ---- ELF fields ---- */

static void st(const struct ch *ch, unsigned char *p, unsigned size, uint64_t v)
{
	for (unsigned i = 0; i < size; i++) {
		unsigned shift = ch->big ? 8 * (size - 1 - i) : 8 * i;

		p[i] = (unsigned char)(v >> shift);
	}
}

static void get_phdr(const struct ch *ch, const unsigned char *p,
		     struct ch_phdr *ph)
{
	struct kcore_elf_phdr e;

	kcore_elf_decode_phdr(ch->is64, ch->big, p, &e);
	*ph = (struct ch_phdr){
		.type = e.type,
		.flags = e.flags,
		.offset = e.offset,
		.vaddr = e.vaddr,
		.paddr = e.paddr,
		.filesz = e.filesz,
		.memsz = e.memsz,
		.align = e.align,
	};
}

/* Rewrite p_offset and p_filesz of phdr i inside buf (a header copy). */
/* The thread's stack pointer, by its register's name. */
static void note_sp(struct ch *ch, const struct kcore_source *src,
		    const struct kcore_note *note)
{
	struct kcore_prstatus ps;
	struct kcore_error *err;

	if (ch->nsps >= CH_BT_MAX_THREADS)
		return;
	err = kcore_note_prstatus(src, note, &ps);
	if (err) {
		kcore_error_destroy(err);
		return;
	}
	for (unsigned r = 0; r < ps.nregs && ps.reg_names; r++)
		if (strcmp(ps.reg_names[r], "rsp") == 0 ||
		    strcmp(ps.reg_names[r], "sp") == 0 ||
		    strcmp(ps.reg_names[r], "esp") == 0) {
			ch->sps[ch->nsps++] = ps.regs[r];
			return;
		}
}

void ch_put_phdr_file(const struct ch *ch, unsigned char *buf, size_t i,
		      uint64_t offset, uint64_t filesz)
{
	unsigned char *p = buf + ch->phoff + i * ch->phentsize;

	if (ch->is64) {
		st(ch, p + 8, 8, offset);
		st(ch, p + 32, 8, filesz);
	} else {
		st(ch, p + 4, 4, offset);
		st(ch, p + 16, 4, filesz);
	}
}

void ch_put_phdr_vaddr(const struct ch *ch, unsigned char *buf, size_t i,
		       uint64_t vaddr, uint64_t memsz)
{
	unsigned char *p = buf + ch->phoff + i * ch->phentsize;

	if (ch->is64) {
		st(ch, p + 16, 8, vaddr);
		st(ch, p + 40, 8, memsz);
	} else {
		st(ch, p + 8, 4, vaddr);
		st(ch, p + 20, 4, memsz);
	}
}

void ch_put_shoff(const struct ch *ch, unsigned char *buf, uint64_t shoff,
		  uint16_t shnum, uint16_t shstrndx)
{
	if (ch->is64) {
		st(ch, buf + 40, 8, shoff);
		st(ch, buf + 60, 2, shnum);
		st(ch, buf + 62, 2, shstrndx);
	} else {
		st(ch, buf + 32, 4, shoff);
		st(ch, buf + 48, 2, shnum);
		st(ch, buf + 50, 2, shstrndx);
	}
}

/* Section 0 as the kernel writes it for PN_XNUM (fill_extnum_info()). */
size_t ch_xnum_shdr(const struct ch *ch, unsigned char *p)
{
	size_t size = ch->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);

	memset(p, 0, size);
	if (ch->is64) {
		st(ch, p + 32, 8, ch->shnum); /* sh_size = e_shnum */
		st(ch, p + 40, 4, ch->shstrndx);
		st(ch, p + 44, 4, ch->phnum);
	} else {
		st(ch, p + 20, 4, ch->shnum);
		st(ch, p + 24, 4, ch->shstrndx);
		st(ch, p + 28, 4, ch->phnum);
	}
	return size;
}

static struct kcore_error *fmt_error(struct ch *ch, uint64_t off,
				     const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static struct kcore_error *fmt_error(struct ch *ch, uint64_t off,
				     const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, ch->in_name, off,
				     "%s", msg);
}

struct kcore_error *ch_read_headers(struct ch *ch)
{
	struct kcore_elf_ehdr eh;
	struct kcore_error *err;
	size_t ehsize, phend;
	uint64_t first_data = UINT64_MAX, notes_end = 0;

	err = need_prefix(ch, EI_NIDENT, "ELF identification");
	if (err)
		return err;
	err = kcore_elf_check_ident(ch->prefix, EI_NIDENT, false, ch->in_name);
	if (err)
		return err;
	ch->is64 = ch->prefix[EI_CLASS] == ELFCLASS64;
	ehsize = kcore_elf_ehdr_size(ch->is64);
	err = need_prefix(ch, ehsize, "ELF header");
	if (err)
		return err;
	kcore_elf_decode_ehdr(ch->prefix, &eh);
	if (eh.type != ET_CORE)
		return fmt_error(ch, 16, "not an ELF core (e_type %u)",
				 eh.type);
	ch->big = eh.big;
	ch->machine = eh.machine;
	ch->phoff = eh.phoff;
	ch->shoff = eh.shoff;
	ch->phentsize = eh.phentsize;
	ch->phnum = eh.phnum;
	ch->shentsize = eh.shentsize;
	ch->shnum = eh.shnum;
	ch->shstrndx = eh.shstrndx;
	if (ch->phentsize != kcore_elf_phdr_size(ch->is64))
		return fmt_error(ch, kcore_elf_phentsize_at(ch->is64),
				 "e_phentsize %u is not the size of a program "
				 "header",
				 ch->phentsize);
	if (ch->phnum == 0)
		return fmt_error(ch, kcore_elf_phnum_at(ch->is64),
				 "the core has no program headers");
	if (ch->phoff < ehsize || ch->phoff > MAX_PREFIX)
		return fmt_error(ch, kcore_elf_phoff_at(ch->is64),
				 "e_phoff 0x%" PRIx64 " is not after the ELF "
				 "header",
				 ch->phoff);
	if (ch->phnum == PN_XNUM) {
		/*
		 * More than 65534 segments: the real count is in section
		 * 0, which the kernel writes after the data.  The notes
		 * (the first program header) follow the program headers
		 * directly, so their offset gives the count.
		 */
		struct ch_phdr first;

		ch->xnum = true;
		err = need_prefix(ch, ch->phoff + ch->phentsize,
				  "first program header");
		if (err)
			return err;
		get_phdr(ch, ch->prefix + ch->phoff, &first);
		if (first.type != PT_NOTE || first.offset <= ch->phoff ||
		    (first.offset - ch->phoff) % ch->phentsize)
			return fmt_error(ch, ch->phoff,
					 "PN_XNUM core whose first program "
					 "header is not the notes after the "
					 "program headers");
		ch->phnum = (first.offset - ch->phoff) / ch->phentsize;
	}
	phend = ch->phoff + ch->phnum * ch->phentsize;
	err = need_prefix(ch, phend, "program headers");
	if (err)
		return err;
	ch->ph = calloc(ch->phnum, sizeof(*ch->ph));
	ch->caps = calloc(ch->phnum, sizeof(*ch->caps));
	ch->order = calloc(ch->phnum, sizeof(*ch->order));
	if (!ch->ph || !ch->caps || !ch->order)
		return &kcore_error_nomem;
	ch->expected = phend;
	for (size_t i = 0; i < ch->phnum; i++) {
		struct ch_phdr *p = &ch->ph[i];
		uint64_t off = ch->phoff + i * ch->phentsize, end;

		get_phdr(ch, ch->prefix + off, p);
		if (__builtin_add_overflow(p->offset, p->filesz, &end))
			return fmt_error(ch, off,
					 "program header %zu: offset + size "
					 "overflows",
					 i);
		if (p->type == PT_NOTE && p->filesz)
			notes_end = end > notes_end ? end : notes_end;
		if (p->type == PT_LOAD && p->filesz) {
			/* The kernel writes segments in file order. */
			if (ch->norder &&
			    p->offset <
				    ch->ph[ch->order[ch->norder - 1]].offset +
					    ch->ph[ch->order[ch->norder - 1]]
						    .filesz)
				return fmt_error(ch, off,
						 "program header %zu: PT_LOAD "
						 "at 0x%" PRIx64
						 " overlaps or precedes the "
						 "previous one",
						 i, p->offset);
			ch->order[ch->norder++] = i;
			if (p->offset < first_data)
				first_data = p->offset;
		}
		if (p->filesz && end > ch->expected)
			ch->expected = end;
	}
	if (ch->shoff && ch->shnum) {
		uint64_t shend =
			ch->shoff + (uint64_t)ch->shnum * ch->shentsize;

		if (shend > ch->expected)
			ch->expected = shend;
	}
	if (first_data == UINT64_MAX)
		first_data = notes_end > phend ? notes_end : phend;
	if (notes_end > first_data)
		return fmt_error(ch, first_data,
				 "notes end at 0x%" PRIx64 ", after the first "
				 "PT_LOAD data at 0x%" PRIx64,
				 notes_end, first_data);
	if (first_data < phend)
		return fmt_error(ch, first_data,
				 "segment data at 0x%" PRIx64 " overlaps the "
				 "program headers",
				 first_data);
	ch->first_data = first_data;
	return need_prefix(ch, first_data, "notes");
}

/* ---- notes ---- */

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

/*
 * One NT_AUXV entry.  The kernel writes its own copy of the auxiliary
 * vector (mm->saved_auxv, which the process cannot change without
 * CAP_SYS_RESOURCE), so the credentials in it are the exec's.
 */
static void auxv_entry(struct ch *ch, const struct kcore_auxv_entry *a,
		       uint64_t *phdr_addr, uint64_t *entry)
{
	struct ch_creds *c = &ch->creds;

	switch (a->type) {
	case AT_PHDR:
		*phdr_addr = a->value;
		break;
	case AT_ENTRY:
		*entry = a->value;
		break;
	case AT_UID:
		c->uid = a->value;
		c->have_uid = true;
		break;
	case AT_EUID:
		c->euid = a->value;
		c->have_euid = true;
		break;
	case AT_GID:
		c->gid = a->value;
		c->have_gid = true;
		break;
	case AT_EGID:
		c->egid = a->value;
		c->have_egid = true;
		break;
	case AT_SECURE:
		c->secure = a->value;
		c->have_secure = true;
		break;
	}
}

void ch_parse_notes(struct ch *ch)
{
	struct kcore_source *src = &ch->fake;
	uint64_t phdr_addr = 0, entry = 0;
	struct kcore_file_table files = { 0 };
	bool have_files = false;

	src->path = (char *)ch->in_name;
	src->info.elf_class = ch->is64 ? 64 : 32;
	src->info.big_endian = ch->big;
	src->info.machine = ch->machine;
	src->arch = kcore_arch_lookup(ch->machine); /* its register layout */
	for (size_t i = 0; i < ch->phnum; i++) {
		const struct ch_phdr *p = &ch->ph[i];
		struct kcore_elf_notes it;
		struct kcore_elf_note nh;
		enum kcore_elf_note_next r;

		if (p->type != PT_NOTE || !p->filesz)
			continue;
		kcore_elf_notes_init(&it, ch->prefix + p->offset, p->filesz,
				     ch->big, 4, false);
		while ((r = kcore_elf_notes_next(&it, &nh)) !=
		       KCORE_ELF_NOTE_END) {
			char name[32];
			struct kcore_note note;
			struct kcore_error *err = NULL;

			if (r == KCORE_ELF_NOTE_SHORT_HEADER)
				break;
			if (r == KCORE_ELF_NOTE_OVERRUN) {
				if (!ch->note_error &&
				    asprintf(&ch->note_error,
					     "note at offset 0x%" PRIx64
					     " runs past its segment",
					     p->offset + nh.offset) < 0)
					ch->note_error = NULL;
				break;
			}
			kcore_elf_note_fill(&nh, p->offset, (unsigned)i, name,
					    sizeof(name), &note);
			if (strcmp(name, "CORE") != 0)
				continue;
			if (note.type == NT_PRSTATUS) {
				ch->nthreads++;
				note_sp(ch, src, &note);
			} else if (note.type == NT_PRPSINFO && !ch->fname) {
				struct kcore_prpsinfo ps;

				err = kcore_note_prpsinfo(src, &note, &ps);
				if (!err) {
					ch->fname = dup_str(ps.fname);
					ch->psargs = dup_str(ps.psargs);
				}
			} else if (note.type == NT_SIGINFO &&
				   !ch->note_signal) {
				struct kcore_siginfo si;

				err = kcore_note_siginfo(src, &note, &si);
				if (!err)
					ch->note_signal = si.signo;
			} else if (note.type == NT_AUXV && !phdr_addr) {
				struct kcore_auxv_entry *av;
				size_t n;

				err = kcore_note_auxv(src, &note, &av, &n);
				for (size_t k = 0; !err && k < n; k++)
					auxv_entry(ch, &av[k], &phdr_addr,
						   &entry);
				if (!err)
					free(av);
			} else if (note.type == NT_FILE && !have_files) {
				err = kcore_note_file(src, &note, &files);
				have_files = !err;
			}
			if (err) {
				if (!ch->note_error)
					ch->note_error =
						kcore_error_describe(err);
				kcore_error_destroy(err);
			}
		}
	}
	/* The executable: the file mapped where AT_PHDR (or AT_ENTRY)
	 * points; the kernel maps it first, so else the first entry. */
	for (size_t k = 0; have_files && k < files.count && !ch->exe; k++) {
		const struct kcore_file_entry *f = &files.entries[k];

		if ((phdr_addr >= f->start && phdr_addr < f->end) ||
		    (entry >= f->start && entry < f->end))
			ch->exe = dup_str(f->name);
	}
	if (have_files && !ch->exe && files.count && !phdr_addr && !entry)
		ch->exe = dup_str(files.entries[0].name);
	if (have_files)
		ch->files = files; /* names point into ch->prefix */
}

/*
 * A cut core says so itself: our metadata note (name KCOREDUMP, the
 * key=value lines `info` and `verify` read from kcoredump's dumps) after
 * the kernel's notes, in the zeros between them and the first segment's
 * data (the kernel aligns that data to a page), and the PT_NOTE grown
 * over it.  Without room (or a PT_NOTE) the metadata alone says it.
 */
static void mark_cut(struct ch *ch)
{
	uint64_t notes_end = 0,
		 unread = ch->expected > ch->cut ? ch->expected - ch->cut : 0;
	size_t note = SIZE_MAX, need, tlen;
	char text[256];
	unsigned char *p;

	for (size_t i = 0; i < ch->phnum; i++) {
		const struct ch_phdr *ph = &ch->ph[i];

		if (ph->type == PT_NOTE &&
		    ph->offset + ph->filesz > notes_end) {
			notes_end = ph->offset + ph->filesz;
			note = i;
		}
	}
	if (note == SIZE_MAX || notes_end % 4 || ch->cut < ch->first_data)
		return;
	tlen = (size_t)snprintf(text, sizeof(text),
				"writer=kcoredump core-handler\n"
				"source_incomplete=1\n"
				"truncation_reason=%s\n"
				"bytes_unreadable=%" PRIu64 "\n"
				"unreadable_ranges=%u\n",
				kcore_ch_reason_name(ch->res->reason), unread,
				ch->res->segments_cut ? ch->res->segments_cut
						      : 1) +
	       1;
	if (tlen > sizeof(text))
		return;
	need = 12 + 12 + ((tlen + 3) & ~(size_t)3);
	if (notes_end > ch->first_data || ch->first_data - notes_end < need ||
	    ch->first_data > ch->prefix_len)
		return;
	p = ch->prefix + notes_end;
	for (size_t i = 0; i < need; i++)
		if (p[i])
			return; /* not the zeros of the alignment */
	st(ch, p, 4, sizeof(KCORE_META_NOTE_NAME));
	st(ch, p + 4, 4, tlen);
	st(ch, p + 8, 4, KCORE_META_NOTE_TYPE);
	memcpy(p + 12, KCORE_META_NOTE_NAME, sizeof(KCORE_META_NOTE_NAME));
	memcpy(p + 24, text, tlen);
	ch_put_phdr_file(ch, ch->prefix, note, ch->ph[note].offset,
			 ch->ph[note].filesz + need);
	ch->res->cut_marked = true;
}

/*
 * The copy stopped at ch->cut: shorten the segment there, empty the later
 * ones, and move or drop the section headers, in ch->prefix; then mark
 * the core incomplete (mark_cut).
 */
void ch_cut_headers(struct ch *ch, uint64_t *ret_size)
{
	uint64_t cut = ch->cut, size = cut;

	for (size_t i = 0; i < ch->phnum; i++) {
		struct ch_phdr *p = &ch->ph[i];

		/* Readers check p_offset even when p_filesz is 0. */
		if (p->offset >= cut) {
			ch_put_phdr_file(ch, ch->prefix, i, cut, 0);
			ch->res->segments_cut += p->filesz != 0;
		} else if (p->offset + p->filesz > cut) {
			ch_put_phdr_file(ch, ch->prefix, i, p->offset,
					 cut - p->offset);
			ch->res->segments_cut++;
		}
	}
	if (ch->shoff &&
	    ch->shoff + (uint64_t)ch->shnum * ch->shentsize > cut) {
		if (ch->xnum) {
			/* Section 0 carries the segment count: keep it. */
			size = (cut + 7) & ~7ull;
			ch_put_shoff(ch, ch->prefix, size, 1, ch->shstrndx);
			size += ch->is64 ? sizeof(Elf64_Shdr)
					 : sizeof(Elf32_Shdr);
		} else {
			ch_put_shoff(ch, ch->prefix, 0, 0, 0);
		}
	}
	mark_cut(ch);
	*ret_size = size;
}

/* The build-id note of the ELF file whose first page is page (len bytes). */
size_t ch_first_page_build_id(const unsigned char *page, size_t len,
			      const unsigned char **ret)
{
	size_t descsz;
	const unsigned char *id = kcore_elf_find_note(
		page, len, "GNU", NT_GNU_BUILD_ID, 1, 64, &descsz);

	if (!id)
		return 0;
	*ret = id;
	return descsz;
}

void ch_stream_deinit(struct ch *ch)
{
	ch->res->pagemap_scans += ch_holes_scans(ch->holes);
	ch_holes_destroy(ch->holes);
	ch->holes = NULL;
	if (ch->null_fd >= 0)
		close(ch->null_fd);
	ch->null_fd = -1;
	for (int i = 0; i < 2; i++) {
		if (ch->drain_pipe[i] >= 0)
			close(ch->drain_pipe[i]);
		ch->drain_pipe[i] = -1;
	}
	free(ch->prefix);
	free(ch->ph);
	free(ch->caps);
	free(ch->order);
	free(ch->exe);
	free(ch->fname);
	free(ch->psargs);
	free(ch->note_error);
	free(ch->files.entries);
}
