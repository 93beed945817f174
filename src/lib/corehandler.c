// SPDX-License-Identifier: MIT
/*
 * The core_pattern handler: one pass over the ELF core stream the kernel
 * writes into our stdin.
 *
 *   headers  ELF header, program headers, then everything up to the first
 *            PT_LOAD's data (the notes), read into memory with bounds
 *   data     1 MiB blocks at stream offsets k MiB; all-zero pages (what
 *            dump_skip() writes on a pipe) are skipped, the rest written
 *            at their stream offset (sparse ELF) or into the .zst stream
 *   end      the file is cut to the stream's length; if a limit stopped
 *            the copy, the program headers are rewritten so that nothing
 *            points past the end
 *
 * Build IDs: libdwfl on the stored sparse ELF.  For a .zst, the first page
 * of every PT_LOAD is kept aside; with the headers it forms a small
 * in-memory core for libdwfl, completed from the ELF headers and build-id
 * notes in the first pages of the files NT_FILE maps at offset 0.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "coredir.h"
#include "corehandler-holes.h"
#include "internal.h"
#include "kcoredump/corehandler.h"
#include "kcoredump/output.h"

#define BLOCK KCORE_HASH_BLOCK /* 1 MiB, the hash block */
#define PAGE  4096u
/* Headers and notes beyond this are refused (10,000 threads fit). */
#define MAX_PREFIX (256u << 20)
/* First pages kept for the build IDs. */
#define MAX_CAPTURE (64u << 20)
/* Re-read the free space after this many bytes written. */
#define STATVFS_EVERY (64u << 20)

static const char *const reason_names[KCORE_CH_REASON_NUM] = {
	[KCORE_CH_COMPLETE] = "complete",   [KCORE_CH_MAX_SIZE] = "max-size",
	[KCORE_CH_KEEP_FREE] = "keep-free", [KCORE_CH_MAX_USE] = "max-use",
	[KCORE_CH_TIMEOUT] = "timeout",	    [KCORE_CH_CANCELLED] = "cancelled",
	[KCORE_CH_SHORT] = "short-stream",
};

const char *kcore_ch_reason_name(enum kcore_ch_reason r)
{
	return (unsigned)r < KCORE_CH_REASON_NUM ? reason_names[r] : "unknown";
}

struct gphdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

struct capture {
	size_t off; /* in ch->cap */
	uint32_t len;
	bool done;
};

struct ch {
	const struct kcore_ch_opts *o;
	struct kcore_ch_result *res;
	const char *in_name;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 = none */
	bool eof, stopped;    /* stopped: timeout or cancel while reading */
	bool input_closed;
	uint64_t last_read_ns;
	enum kcore_ch_reason stop_reason;

	/* The ELF header fields we use. */
	bool is64, big;
	uint16_t machine, phentsize;
	uint64_t phoff, shoff;
	uint16_t shentsize, shnum, shstrndx;
	bool xnum; /* e_phnum == PN_XNUM */
	size_t phnum;
	struct gphdr *ph;

	unsigned char *prefix; /* stream bytes [0, prefix_len) */
	size_t prefix_len;
	uint64_t expected; /* stream size the headers announce */

	/* Output. */
	struct kcore_output *out;
	struct kcore_ostream *os;
	uint64_t stored; /* bytes on disk so far */
	uint64_t zpos;	 /* stream position of the .zst writer */
	uint64_t stored_header_off;
	uint64_t cut; /* UINT64_MAX = not cut */

	/* Limits. */
	struct kcore_stored_core *others; /* oldest first */
	size_t nothers, next_victim;
	uint64_t others_use;
	uint64_t avail;	     /* free bytes at the last statvfs */
	uint64_t since_stat; /* stored bytes since then */

	/* Digest records: le64 block index + SHA-256 of the block. */
	unsigned char *recs;
	size_t nrecs, caprecs;

	/* First pages of PT_LOADs, in p_offset order. */
	size_t *order, norder, next_cap;
	struct capture *caps; /* by phdr index */
	unsigned char *cap;
	size_t cap_len, cap_size;
	bool cap_full;

	/* Where the crashing process's page tables say the stream is zeros
	 * (NULL: read everything), and /dev/null to splice them into. */
	struct ch_holes *holes;
	int null_fd;
	size_t pipe_size; /* F_GETPIPE_SZ */

	/* From the notes. */
	struct kcore_source fake; /* path and info for the note decoders */
	char *exe, *fname, *psargs;
	struct kcore_file_table files; /* NT_FILE; names point into prefix */
	unsigned nthreads;
	int note_signal;
	char *note_error;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void chlog(struct ch *ch, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void chlog(struct ch *ch, int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!ch->o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ch->o->log(ch->o->log_arg, prio, msg);
}

/* ---- reading the stream ---- */

/*
 * The kernel writes a core into the pipe a page at a time and wakes the
 * reader whenever the pipe was empty: reading each page as it comes costs
 * two system calls and two context switches per 4 KiB, which is most of
 * the cost of a sparse stream.  After a small read, let the pipe fill for
 * about the time the writer needs for SMALL_READ bytes at its recent rate
 * (at most 2 ms), so that reads come back with many pages each.
 */
#define SMALL_READ   (256u << 10)
#define MAX_BATCH_NS 2000000u

static void batch_wait(struct ch *ch, uint64_t got)
{
	uint64_t now = mono_ns(), dt = now - ch->last_read_ns, wait;
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
	ch->last_read_ns = mono_ns();
}

/*
 * Wait until the stream has bytes to read (or has ended), at most until
 * the deadline: false when the handler stopped instead (ch->stopped), or
 * poll failed (*ret_err).
 */
static bool wait_input(struct ch *ch, struct kcore_error **ret_err)
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
		if (ch->deadline_ns) {
			uint64_t now = mono_ns();

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
static struct kcore_error *fill(struct ch *ch, void *buf, size_t len,
				size_t *ret_done)
{
	struct kcore_error *err;
	size_t done = 0;

	while (done < len && !ch->eof && !ch->stopped) {
		ssize_t n;

		if (!wait_input(ch, &err)) {
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
	}
	*ret_done = done;
	return NULL;
}

/* Bytes waiting in the pipe, or -1. */
static long pipe_bytes(const struct ch *ch)
{
	int n;

	return ioctl(ch->o->in_fd, FIONREAD, &n) < 0 ? -1 : n;
}

/* Read the page tables no more: every later byte is read. */
static void drop_holes(struct ch *ch, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void drop_holes(struct ch *ch, const char *fmt, ...)
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
	uint64_t start = mono_ns(), seen_ns = start;
	long avail = pipe_bytes(ch), seen = avail;

	while (avail >= 0 && (size_t)avail < want) {
		struct pollfd pfd = { .fd = ch->o->in_fd, .events = POLLIN };
		uint64_t now = mono_ns(), wait = 2000000u;
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
		avail = pipe_bytes(ch);
	}
	return avail;
}

/*
 * Consume stream bytes [pos, pos + len), inside a hole run of the page
 * tables, without reading them: splice(2) hands the pipe's pages to
 * /dev/null.  Only bytes already in the pipe are taken, each time after
 * another look at the page tables (the kernel has decided about those
 * pages) finds them still empty.  *ret_done is short when a page appeared
 * there, at the end of the stream or when stopped; the caller reads the
 * rest.  Three quarters of the pipe at a time: fewer wake-ups, and the
 * kernel keeps writing meanwhile.
 */
static struct kcore_error *drain(struct ch *ch, uint64_t pos, uint64_t len,
				 uint64_t *ret_done)
{
	struct kcore_error *err = NULL;
	uint64_t done = 0;

	while (done < len && !ch->eof && !ch->stopped && ch->holes) {
		size_t want = ch->pipe_size / 4 * 3, take;
		long avail;
		bool empty;
		ssize_t n;

		if (!wait_input(ch, &err))
			break;
		if (want > len - done)
			want = (size_t)(len - done);
		avail = fill_pipe(ch, want);
		if (avail < 0) {
			drop_holes(ch, "FIONREAD on the stream failed: %s",
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

			drop_holes(ch, "%s", d ? d : "the page tables failed");
			free(d);
			kcore_error_destroy(err);
			err = NULL;
		}
		if (err || !empty)
			break;
		n = splice(ch->o->in_fd, NULL, ch->null_fd, NULL, take,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			drop_holes(ch, "splice from the stream failed: %s",
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
		ch->last_read_ns = mono_ns();
	}
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
	err = fill(ch, p + ch->prefix_len, len - ch->prefix_len, &got);
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

static uint64_t ld(const struct ch *ch, const unsigned char *p, unsigned size)
{
	return kcore_load(p, size, ch->big);
}

static void st(const struct ch *ch, unsigned char *p, unsigned size, uint64_t v)
{
	for (unsigned i = 0; i < size; i++) {
		unsigned shift = ch->big ? 8 * (size - 1 - i) : 8 * i;

		p[i] = (unsigned char)(v >> shift);
	}
}

static void get_phdr(const struct ch *ch, const unsigned char *p,
		     struct gphdr *ph)
{
	ph->type = (uint32_t)ld(ch, p, 4);
	if (ch->is64) {
		ph->flags = (uint32_t)ld(ch, p + 4, 4);
		ph->offset = ld(ch, p + 8, 8);
		ph->vaddr = ld(ch, p + 16, 8);
		ph->paddr = ld(ch, p + 24, 8);
		ph->filesz = ld(ch, p + 32, 8);
		ph->memsz = ld(ch, p + 40, 8);
		ph->align = ld(ch, p + 48, 8);
	} else {
		ph->offset = ld(ch, p + 4, 4);
		ph->vaddr = ld(ch, p + 8, 4);
		ph->paddr = ld(ch, p + 12, 4);
		ph->filesz = ld(ch, p + 16, 4);
		ph->memsz = ld(ch, p + 20, 4);
		ph->flags = (uint32_t)ld(ch, p + 24, 4);
		ph->align = ld(ch, p + 28, 4);
	}
}

/* Rewrite p_offset and p_filesz of phdr i inside buf (a header copy). */
static void put_phdr_file(const struct ch *ch, unsigned char *buf, size_t i,
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

static void put_shoff(const struct ch *ch, unsigned char *buf, uint64_t shoff,
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
static size_t xnum_shdr(const struct ch *ch, unsigned char *p)
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

static struct kcore_error *read_headers(struct ch *ch)
{
	const unsigned char *e;
	struct kcore_error *err;
	size_t ehsize, phend;
	uint64_t first_data = UINT64_MAX, notes_end = 0;

	err = need_prefix(ch, EI_NIDENT, "ELF identification");
	if (err)
		return err;
	e = ch->prefix;
	if (memcmp(e, ELFMAG, SELFMAG) != 0)
		return fmt_error(ch, 0, "not an ELF file");
	if (e[EI_CLASS] != ELFCLASS64 && e[EI_CLASS] != ELFCLASS32)
		return fmt_error(ch, EI_CLASS, "unknown ELF class %u",
				 e[EI_CLASS]);
	if (e[EI_DATA] != ELFDATA2LSB && e[EI_DATA] != ELFDATA2MSB)
		return fmt_error(ch, EI_DATA, "unknown ELF data encoding %u",
				 e[EI_DATA]);
	ch->is64 = e[EI_CLASS] == ELFCLASS64;
	ch->big = e[EI_DATA] == ELFDATA2MSB;
	ehsize = ch->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	err = need_prefix(ch, ehsize, "ELF header");
	if (err)
		return err;
	e = ch->prefix;
	if (ld(ch, e + 16, 2) != ET_CORE)
		return fmt_error(ch, 16, "not an ELF core (e_type %" PRIu64 ")",
				 ld(ch, e + 16, 2));
	ch->machine = (uint16_t)ld(ch, e + 18, 2);
	if (ch->is64) {
		ch->phoff = ld(ch, e + 32, 8);
		ch->shoff = ld(ch, e + 40, 8);
		ch->phentsize = (uint16_t)ld(ch, e + 54, 2);
		ch->phnum = ld(ch, e + 56, 2);
		ch->shentsize = (uint16_t)ld(ch, e + 58, 2);
		ch->shnum = (uint16_t)ld(ch, e + 60, 2);
		ch->shstrndx = (uint16_t)ld(ch, e + 62, 2);
	} else {
		ch->phoff = ld(ch, e + 28, 4);
		ch->shoff = ld(ch, e + 32, 4);
		ch->phentsize = (uint16_t)ld(ch, e + 42, 2);
		ch->phnum = ld(ch, e + 44, 2);
		ch->shentsize = (uint16_t)ld(ch, e + 46, 2);
		ch->shnum = (uint16_t)ld(ch, e + 48, 2);
		ch->shstrndx = (uint16_t)ld(ch, e + 50, 2);
	}
	if (ch->phentsize !=
	    (ch->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return fmt_error(ch, ch->is64 ? 54 : 42,
				 "e_phentsize %u is not the size of a program "
				 "header",
				 ch->phentsize);
	if (ch->phnum == 0)
		return fmt_error(ch, ch->is64 ? 56 : 44,
				 "the core has no program headers");
	if (ch->phoff < ehsize || ch->phoff > MAX_PREFIX)
		return fmt_error(ch, ch->is64 ? 32 : 28,
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
		struct gphdr first;

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
		struct gphdr *p = &ch->ph[i];
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
	return need_prefix(ch, first_data, "notes");
}

/* ---- notes ---- */

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void parse_notes(struct ch *ch)
{
	struct kcore_source *src = &ch->fake;
	uint64_t phdr_addr = 0, entry = 0;
	struct kcore_file_table files = { 0 };
	bool have_files = false;

	src->path = (char *)ch->in_name;
	src->info.elf_class = ch->is64 ? 64 : 32;
	src->info.big_endian = ch->big;
	src->info.machine = ch->machine;
	for (size_t i = 0; i < ch->phnum; i++) {
		const struct gphdr *p = &ch->ph[i];
		size_t pos = p->offset, end = p->offset + p->filesz;

		if (p->type != PT_NOTE)
			continue;
		while (pos + 12 <= end) {
			const unsigned char *h = ch->prefix + pos;
			uint64_t namesz = ld(ch, h, 4),
				 descsz = ld(ch, h + 4, 4);
			uint64_t nameoff = pos + 12;
			uint64_t descoff = nameoff + ((namesz + 3) & ~3ull);
			char name[32] = "";
			struct kcore_note note;
			struct kcore_error *err = NULL;

			if (descoff > end || descsz > end - descoff) {
				if (!ch->note_error &&
				    asprintf(&ch->note_error,
					     "note at offset 0x%zx runs past "
					     "its segment",
					     pos) < 0)
					ch->note_error = NULL;
				break;
			}
			if (namesz)
				memcpy(name, ch->prefix + nameoff,
				       namesz < sizeof(name) - 1
					       ? namesz
					       : sizeof(name) - 1);
			note = (struct kcore_note){
				.name = name,
				.type = (uint32_t)ld(ch, h + 8, 4),
				.desc = ch->prefix + descoff,
				.descsz = descsz,
				.offset = pos,
				.segment = (unsigned)i,
			};
			pos = descoff + ((descsz + 3) & ~3ull);
			if (strcmp(name, "CORE") != 0)
				continue;
			if (note.type == NT_PRSTATUS) {
				ch->nthreads++;
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
				for (size_t k = 0; !err && k < n; k++) {
					if (av[k].type == AT_PHDR)
						phdr_addr = av[k].value;
					else if (av[k].type == AT_ENTRY)
						entry = av[k].value;
				}
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

/* ---- limits ---- */

static struct kcore_error *load_others(struct ch *ch)
{
	struct kcore_error *err;

	if (!ch->o->max_use && !ch->o->keep_free)
		return NULL;
	err = kcore_coredir_list(ch->o->dir_fd, &ch->others, &ch->nothers);
	if (err)
		return err;
	for (size_t i = 0; i < ch->nothers; i++)
		ch->others_use +=
			kcore_coredir_usage(ch->o->dir_fd, &ch->others[i]);
	return NULL;
}

static void refresh_avail(struct ch *ch)
{
	struct statvfs sv;

	if (fstatvfs(ch->o->dir_fd, &sv) == 0)
		ch->avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	ch->since_stat = 0;
}

static bool remove_oldest(struct ch *ch, const char *why)
{
	struct kcore_stored_core *c;
	uint64_t use;

	if (ch->next_victim >= ch->nothers)
		return false;
	c = &ch->others[ch->next_victim++];
	use = kcore_coredir_usage(ch->o->dir_fd, c);
	kcore_coredir_remove(ch->o->dir_fd, c);
	ch->others_use -= use < ch->others_use ? use : ch->others_use;
	ch->res->removed++;
	chlog(ch, KCORE_CH_LOG_NOTICE,
	      "removed the older core '%s' (%" PRIu64 " bytes) for %s",
	      c->meta_name, use, why);
	return true;
}

/*
 * How many of len bytes may be stored now (a multiple of PAGE, or len);
 * sets *ret_reason when fewer.  For a .zst the compressed bytes already
 * written count, so a limit is enforced a few frames late.
 */
static uint64_t allowance(struct ch *ch, uint64_t len,
			  enum kcore_ch_reason *ret_reason)
{
	const struct kcore_ch_opts *o = ch->o;
	uint64_t stored = ch->os ? kcore_ostream_bytes_out(ch->os) : ch->stored;
	uint64_t want = ch->os ? 0 : len; /* .zst: checked after the fact */
	uint64_t allow = len;

	*ret_reason = KCORE_CH_COMPLETE;
	if (o->max_size && stored + want > o->max_size) {
		uint64_t room = o->max_size > stored ? o->max_size - stored : 0;

		allow = ch->os ? 0 : room;
		*ret_reason = KCORE_CH_MAX_SIZE;
	}
	if (o->max_use) {
		while (ch->others_use + stored + want > o->max_use &&
		       remove_oldest(ch, "--max-use"))
			;
		if (ch->others_use + stored + want > o->max_use) {
			uint64_t cap =
				o->max_use > ch->others_use + stored
					? o->max_use - ch->others_use - stored
					: 0;

			if (ch->os)
				cap = 0;
			if (cap < allow) {
				allow = cap;
				*ret_reason = KCORE_CH_MAX_USE;
			}
		}
	}
	if (o->keep_free) {
		uint64_t w = ch->since_stat + want;

		if (ch->since_stat >= STATVFS_EVERY ||
		    ch->avail < o->keep_free + w)
			refresh_avail(ch);
		while (ch->avail < o->keep_free + want &&
		       remove_oldest(ch, "--keep-free"))
			refresh_avail(ch);
		if (ch->avail < o->keep_free + want) {
			uint64_t cap = ch->avail > o->keep_free
					       ? ch->avail - o->keep_free
					       : 0;

			if (ch->os)
				cap = 0;
			if (cap < allow) {
				allow = cap;
				*ret_reason = KCORE_CH_KEEP_FREE;
			}
		}
	}
	if (allow < len)
		allow -= allow % PAGE;
	else
		*ret_reason = KCORE_CH_COMPLETE;
	return allow;
}

/* ---- writing ---- */

static const char *out_name(const struct ch *ch)
{
	return ch->out->tmp;
}

static struct kcore_error *write_at(struct ch *ch, uint64_t off,
				    const void *buf, size_t len)
{
	struct kcore_error *err;

	if (!ch->os) {
		err = kcore_pwrite_all(NULL, ch->out->fd, out_name(ch), buf,
				       len, off);
	} else {
		if (off < ch->zpos)
			return kcore_error_create_at(KCORE_ERR_INVALID, 0,
						     out_name(ch), off,
						     "stream written out of "
						     "order");
		err = kcore_ostream_write_zeros(ch->os, off - ch->zpos);
		if (!err)
			err = kcore_ostream_write(ch->os, buf, len);
		ch->zpos = off + len;
	}
	if (!err) {
		ch->stored += len;
		ch->since_stat += len;
	}
	return err;
}

static void set_cut(struct ch *ch, uint64_t off, enum kcore_ch_reason why)
{
	if (ch->cut != UINT64_MAX)
		return;
	ch->cut = off;
	ch->res->reason = why;
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
		bool zero;

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
			uint64_t allow = allowance(ch, run_len, &why);
			struct kcore_error *err = NULL;

			if (allow)
				err = write_at(ch, run, buf + (run - bstart),
					       (size_t)allow);
			if (err)
				return err;
			if (allow < run_len) {
				set_cut(ch, run + allow, why);
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

	while (ch->os && ch->next_cap < ch->norder && !ch->cap_full) {
		size_t idx = ch->order[ch->next_cap];
		const struct gphdr *p = &ch->ph[idx];
		struct capture *c = &ch->caps[idx];
		uint64_t cs = p->offset,
			 ce = p->offset + (p->filesz < PAGE ? p->filesz : PAGE);
		uint64_t from, to;

		if (cs >= bend)
			return;
		if (!c->len && !c->done) {
			if (ch->cap_len + PAGE > MAX_CAPTURE) {
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
		if (kcore_is_zero(ch->cap + c->off, c->len))
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

static struct kcore_error *finish_digest(struct ch *ch, uint64_t size)
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

static struct kcore_error *copy_data(struct ch *ch)
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
		} else if ((run = ch_holes_run(ch->holes, bstart, BLOCK))) {
			uint64_t done, whole;

			err = drain(ch, bstart, run, &done);
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
			err = fill(ch, buf + n, BLOCK - n, &got);
			if (err)
				break;
			n += got;
		}
		if (!n) {
			if (ch->stopped)
				set_cut(ch, bstart, ch->stop_reason);
			break;
		}
		if (ch->o->cancel && *ch->o->cancel && !ch->stopped) {
			ch->stopped = true;
			ch->stop_reason = KCORE_CH_CANCELLED;
		}
		err = store_block(ch, buf, bstart, n);
		if (err)
			break;
		capture(ch, buf, bstart, n);
		keep = ch->cut != UINT64_MAX && ch->cut < bstart + n
			       ? ch->cut - bstart
			       : n;
		err = add_record(ch, bstart / BLOCK, buf, (size_t)keep);
		if (err || ch->cut != UINT64_MAX)
			break;
		if (ch->stopped) {
			set_cut(ch, bstart + n, ch->stop_reason);
			break;
		}
		if (ch->eof || n < BLOCK)
			break;
		if (ch->deadline_ns && mono_ns() >= ch->deadline_ns) {
			set_cut(ch, bstart + n, KCORE_CH_TIMEOUT);
			break;
		}
	}
	free(buf);
	return err;
}

/*
 * The copy stopped at ch->cut: shorten the segment there, empty the later
 * ones, and move or drop the section headers, in ch->prefix.
 */
static void cut_headers(struct ch *ch, uint64_t *ret_size)
{
	uint64_t cut = ch->cut, size = cut;

	for (size_t i = 0; i < ch->phnum; i++) {
		struct gphdr *p = &ch->ph[i];

		/* Readers check p_offset even when p_filesz is 0. */
		if (p->offset >= cut) {
			put_phdr_file(ch, ch->prefix, i, cut, 0);
			ch->res->segments_cut += p->filesz != 0;
		} else if (p->offset + p->filesz > cut) {
			put_phdr_file(ch, ch->prefix, i, p->offset,
				      cut - p->offset);
			ch->res->segments_cut++;
		}
	}
	if (ch->shoff &&
	    ch->shoff + (uint64_t)ch->shnum * ch->shentsize > cut) {
		if (ch->xnum) {
			/* Section 0 carries the segment count: keep it. */
			size = (cut + 7) & ~7ull;
			put_shoff(ch, ch->prefix, size, 1, ch->shstrndx);
			size += ch->is64 ? sizeof(Elf64_Shdr)
					 : sizeof(Elf32_Shdr);
		} else {
			put_shoff(ch, ch->prefix, 0, 0, 0);
		}
	}
	*ret_size = size;
}

/* ---- build IDs ---- */

/* Length of the valid UTF-8 sequence at p (at least 2 bytes), else 0. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n;
	uint32_t c;

	if (p[0] < 0xc2 || p[0] > 0xf4)
		return 0;
	n = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
	c = p[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c < 0xe000))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return n;
}

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		size_t n = utf8_len(p);

		if (n > 1) {
			fwrite(p, 1, n, f);
			p += n - 1;
		} else if (*p >= 0x80) {
			/* Names from the core are bytes, not always UTF-8. */
			fputs("\\ufffd", f);
		} else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* The build-id note of the ELF file whose first page is page (len bytes). */
static size_t first_page_build_id(const unsigned char *page, size_t len,
				  const unsigned char **ret)
{
	struct ch e = { .big = len > EI_DATA && page[EI_DATA] == ELFDATA2MSB };
	uint64_t phoff, phnum, phent;

	if (len < sizeof(Elf64_Ehdr) || memcmp(page, ELFMAG, SELFMAG) != 0)
		return 0;
	e.is64 = page[EI_CLASS] == ELFCLASS64;
	phoff = e.is64 ? ld(&e, page + 32, 8) : ld(&e, page + 28, 4);
	phent = ld(&e, page + (e.is64 ? 54 : 42), 2);
	phnum = ld(&e, page + (e.is64 ? 56 : 44), 2);
	if (phent != (e.is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) ||
	    phoff > len || phnum > (len - phoff) / phent)
		return 0;
	for (uint64_t i = 0; i < phnum; i++) {
		struct gphdr ph;
		uint64_t pos, end;

		get_phdr(&e, page + phoff + i * phent, &ph);
		/* The first page maps file offset 0: p_offset is its place. */
		if (ph.type != PT_NOTE || ph.offset > len ||
		    ph.filesz > len - ph.offset)
			continue;
		for (pos = ph.offset, end = ph.offset + ph.filesz;
		     pos + 12 <= end;) {
			uint64_t namesz = ld(&e, page + pos, 4),
				 descsz = ld(&e, page + pos + 4, 4),
				 type = ld(&e, page + pos + 8, 4);
			uint64_t desc = pos + 12 + ((namesz + 3) & ~3ull);

			if (desc > end || descsz > end - desc)
				break;
			if (type == NT_GNU_BUILD_ID && namesz == 4 &&
			    memcmp(page + pos + 12, "GNU", 4) == 0 && descsz &&
			    descsz <= 64) {
				*ret = page + desc;
				return descsz;
			}
			pos = desc + ((descsz + 3) & ~3ull);
		}
	}
	return 0;
}

/*
 * libdwfl needs more than first pages to place the main executable (its
 * link map): add the build ID of every file mapped at offset 0 whose
 * first page holds its ELF header and build-id note, as NT_FILE names it.
 */
static size_t add_file_build_ids(struct ch *ch, struct kcore_module **mods,
				 size_t n)
{
	for (size_t k = 0; k < ch->files.count; k++) {
		const struct kcore_file_entry *fe = &ch->files.entries[k];
		const unsigned char *id = NULL;
		const struct capture *c = NULL;
		struct kcore_module *m;
		uint64_t end = fe->end;
		size_t idlen = 0;
		bool known = false;

		if (fe->offset != 0)
			continue;
		for (size_t i = 0; i < n && !known; i++)
			known = (*mods)[i].start == fe->start;
		for (size_t i = 0; i < ch->phnum && !c && !known; i++)
			if (ch->ph[i].type == PT_LOAD &&
			    ch->ph[i].vaddr == fe->start && ch->caps[i].len)
				c = &ch->caps[i];
		if (known || !c)
			continue;
		idlen = first_page_build_id(ch->cap + c->off, c->len, &id);
		if (!idlen)
			continue;
		for (size_t j = k + 1;
		     j < ch->files.count &&
		     strcmp(ch->files.entries[j].name, fe->name) == 0;
		     j++)
			end = ch->files.entries[j].end;
		m = realloc(*mods, (n + 1) * sizeof(*m));
		if (!m)
			break;
		*mods = m;
		m = &m[n];
		memset(m, 0, sizeof(*m));
		m->name = strdup(fe->name);
		m->build_id = malloc(idlen);
		if (!m->name || !m->build_id) {
			free(m->name);
			free(m->build_id);
			break;
		}
		memcpy(m->build_id, id, idlen);
		m->build_id_len = idlen;
		m->start = fe->start;
		m->end = end;
		n++;
	}
	return n;
}

/*
 * The modules and build IDs as libdwfl finds them: in the stored file when
 * it is a sparse ELF (exactly what eu-unstrip -n --core reports), else in
 * the headers, notes and first pages arranged as a small core (ELF headers
 * and build-id notes live there; the executable may be missing because
 * its link map lies in pages not kept).
 */
static void write_build_ids(struct ch *ch, FILE *f)
{
	size_t shsize = ch->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t len = ch->prefix_len + ch->cap_len + 8 + shsize;
	unsigned char *img = NULL;
	struct kcore_module *mods = NULL;
	size_t nmods = 0, end = ch->prefix_len + ch->cap_len;
	struct kcore_error *err;
	Elf *elf;
	int fd = -1;

	elf_version(EV_CURRENT);
	if (!ch->os) {
		fd = openat(ch->o->dir_fd, ch->res->core_name,
			    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
		goto report;
	}
	img = calloc(1, len);
	if (!img) {
		fputs("  \"build_ids_error\": \"out of memory\",\n", f);
		return;
	}
	memcpy(img, ch->prefix, ch->prefix_len);
	memcpy(img + ch->prefix_len, ch->cap, ch->cap_len);
	for (size_t i = 0; i < ch->phnum; i++)
		if (ch->ph[i].type == PT_LOAD)
			put_phdr_file(ch, img, i,
				      ch->prefix_len + ch->caps[i].off,
				      ch->caps[i].len);
	if (ch->xnum) {
		end = (end + 7) & ~(size_t)7;
		put_shoff(ch, img, end, 1, ch->shstrndx);
		end += xnum_shdr(ch, img + end);
	} else {
		put_shoff(ch, img, 0, 0, 0);
	}
	elf = elf_memory((char *)img, end);
report:
	if (!elf) {
		fprintf(f, "  \"build_ids_error\": ");
		json_str(f, elf_errmsg(-1));
		fputs(",\n", f);
		free(img);
		if (fd >= 0)
			close(fd);
		return;
	}
	err = kcore_elf_modules(elf, ch->in_name, &mods, &nmods);
	if (err) {
		char *msg = kcore_error_describe(err);

		fprintf(f, "  \"build_ids_error\": ");
		json_str(f, msg ? msg : "out of memory");
		fputs(",\n", f);
		free(msg);
		kcore_error_destroy(err);
	}
	if (ch->os && ch->cap_full)
		fputs("  \"build_ids_incomplete\": true,\n", f);
	fprintf(f, "  \"build_ids_from\": \"%s\",\n",
		ch->os ? "first pages" : "stored core");
	fputs("  \"build_ids\": [", f);
	if (ch->os)
		nmods = add_file_build_ids(ch, &mods, nmods);
	for (size_t i = 0; i < nmods; i++) {
		char hex[2 * 256 + 1] = "";
		const struct kcore_module *m = &mods[i];

		if (m->build_id && m->build_id_len <= 256)
			kcore_hex(m->build_id, m->build_id_len, hex);
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, m->name);
		fprintf(f,
			", \"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64
			"\", \"build_id\": ",
			m->start, m->end);
		json_str(f, m->build_id ? hex : NULL);
		fputs("}", f);
	}
	fputs(nmods ? "\n  ],\n" : "],\n", f);
	kcore_modules_free(mods, nmods);
	elf_end(elf);
	free(img);
	if (fd >= 0)
		close(fd);
}

/* ---- metadata ---- */

static const char *format_name(enum kcore_compress c)
{
	return c == KCORE_COMPRESS_NONE ? "elf" : kcore_compress_name(c);
}

static struct kcore_error *write_metadata(struct ch *ch, const char *meta_name)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_ch_result *r = ch->res;
	struct kcore_output *mo = NULL;
	struct kcore_error *err;
	char hex[2 * KCORE_DIGEST_LEN + 1], when[64] = "";
	time_t t = (time_t)o->crash.time;
	struct tm tm;
	struct rusage ru;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return &kcore_error_nomem;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	kcore_hex(r->sha256, KCORE_DIGEST_LEN, hex);
	fputs("{\n  \"kcoredump_metadata\": 1,\n  \"core\": ", f);
	json_str(f, r->core_name);
	fprintf(f, ",\n  \"format\": \"%s\",\n", format_name(o->compress));
	fprintf(f,
		"  \"pid\": %" PRId64 ",\n  \"uid\": %" PRIu32
		",\n  \"gid\": %" PRIu32 ",\n",
		o->crash.pid, o->crash.uid, o->crash.gid);
	fprintf(f, "  \"signal\": %d,\n  \"signal_name\": ", o->crash.signal);
	json_str(f, kcore_signal_name(o->crash.signal));
	fprintf(f, ",\n  \"time\": %" PRId64 ",\n  \"time_utc\": \"%s\",\n",
		o->crash.time, when);
	fputs("  \"comm\": ", f);
	json_str(f, o->crash.comm);
	fputs(",\n  \"executable\": ", f);
	json_str(f, ch->exe);
	fputs(",\n  \"prpsinfo_fname\": ", f);
	json_str(f, ch->fname);
	fputs(",\n  \"prpsinfo_args\": ", f);
	json_str(f, ch->psargs);
	fprintf(f, ",\n  \"threads\": %u,\n  \"note_signal\": %d,\n",
		ch->nthreads, ch->note_signal);
	if (ch->note_error) {
		fputs("  \"note_error\": ", f);
		json_str(f, ch->note_error);
		fputs(",\n", f);
	}
	fprintf(f,
		"  \"stream_bytes\": %" PRIu64 ",\n"
		"  \"expected_bytes\": %" PRIu64 ",\n"
		"  \"file_size\": %" PRIu64 ",\n"
		"  \"data_bytes\": %" PRIu64 ",\n"
		"  \"zero_bytes\": %" PRIu64 ",\n"
		"  \"allocated_bytes\": %" PRIu64 ",\n",
		r->stream_bytes, r->expected_bytes, r->file_size, r->data_bytes,
		r->zero_bytes, r->allocated_bytes);
	fprintf(f,
		"  \"pagemap\": {\"used\": %s, \"unread_bytes\": %" PRIu64
		", \"scans\": %" PRIu64 ", \"why_not\": ",
		r->pagemap_why ? "false" : "true", r->unread_bytes,
		r->pagemap_scans + ch_holes_scans(ch->holes));
	json_str(f, r->pagemap_why);
	fputs("},\n", f);
	fprintf(f, "  \"complete\": %s,\n  \"truncation_reason\": \"%s\",\n",
		r->reason == KCORE_CH_COMPLETE ? "true" : "false",
		kcore_ch_reason_name(r->reason));
	if (r->reason != KCORE_CH_COMPLETE)
		fprintf(f,
			"  \"cut_offset\": %" PRIu64
			",\n  \"segments_cut\": %u,\n",
			r->cut_offset, r->segments_cut);
	fprintf(f,
		"  \"sha256\": \"%s\",\n"
		"  \"sha256_kind\": \"kcoredump-sha256-v1 of the stored "
		"stream bytes as one segment\",\n",
		hex);
	fprintf(f, "  \"removed_for_limits\": %u,\n", r->removed);
	write_build_ids(ch, f);
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		fprintf(f,
			"  \"cpu_user_seconds\": %.3f,\n"
			"  \"cpu_system_seconds\": %.3f,\n",
			(double)ru.ru_utime.tv_sec +
				(double)ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec +
				(double)ru.ru_stime.tv_usec / 1e6);
	fprintf(f, "  \"elapsed_seconds\": %.3f\n}\n", r->elapsed);
	if (fclose(f) != 0 || !text) {
		free(text);
		return &kcore_error_nomem;
	}
	err = kcore_output_openat(o->dir_fd, meta_name, o->sync, &mo);
	if (!err)
		err = kcore_write_all(NULL, mo->fd, mo->tmp, text, len);
	if (!err && o->chown_user &&
	    fchown(mo->fd, o->crash.uid, o->crash.gid) < 0)
		err = kcore_error_create(KCORE_ERR_OS, errno, meta_name,
					 "cannot give the metadata to uid %u",
					 (unsigned)o->crash.uid);
	if (!err)
		err = kcore_output_commit(mo, len);
	kcore_output_destroy(mo);
	free(text);
	return err;
}

/* ---- names ---- */

static char *pick_base(const struct kcore_ch_opts *o)
{
	char comm[64];
	const char *c =
		o->crash.comm && *o->crash.comm ? o->crash.comm : "unknown";
	size_t n = 0;

	/* File-name-safe: %e is the task's comm, any bytes. */
	for (; *c && n < sizeof(comm) - 1; c++)
		comm[n++] =
			(*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
					(*c >= '0' && *c <= '9') || *c == '-' ||
					*c == '_' || *c == '+' || *c == '.'
				? *c
				: '_';
	comm[n] = '\0';
	for (int k = 0; k < 100; k++) {
		char *base;
		char *core, *meta;
		bool taken;

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
		if (asprintf(&core, "%s%s", base,
			     o->compress == KCORE_COMPRESS_ZSTD ? ".zst"
			     : o->compress == KCORE_COMPRESS_XZ ? ".xz"
								: "") < 0) {
			free(base);
			return NULL;
		}
		if (asprintf(&meta, "%s.json", base) < 0) {
			free(core);
			free(base);
			return NULL;
		}
		taken = faccessat(o->dir_fd, core, F_OK, AT_SYMLINK_NOFOLLOW) ==
				0 ||
			faccessat(o->dir_fd, meta, F_OK, AT_SYMLINK_NOFOLLOW) ==
				0 ||
			errno != ENOENT;
		free(core);
		free(meta);
		if (!taken)
			return base;
		free(base);
	}
	return NULL;
}

/* ---- the handler ---- */

static void close_input(struct ch *ch)
{
	if (ch->o->close_input && !ch->input_closed) {
		/* The kernel ends the dump (and the process) right away. */
		close(ch->o->in_fd);
		ch->input_closed = true;
	}
}

static void ch_deinit(struct ch *ch)
{
	ch->res->pagemap_scans += ch_holes_scans(ch->holes);
	ch_holes_destroy(ch->holes);
	if (ch->null_fd >= 0)
		close(ch->null_fd);
	kcore_ostream_destroy(ch->os);
	kcore_output_destroy(ch->out);
	kcore_stored_cores_free(ch->others, ch->nothers);
	free(ch->prefix);
	free(ch->ph);
	free(ch->caps);
	free(ch->order);
	free(ch->cap);
	free(ch->recs);
	free(ch->exe);
	free(ch->fname);
	free(ch->psargs);
	free(ch->note_error);
	free(ch->files.entries);
}

/*
 * The first look at the crashing process's page tables, right after the
 * headers: stream bytes it finds empty need not be read when they come.
 */
static struct kcore_error *find_holes(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_error *err;
	struct ch_load *loads;
	struct stat sb;
	long queued;
	int n;

	if (o->no_pagemap) {
		drop_holes(ch, "--no-pagemap");
		return NULL;
	}
	if (fstat(o->in_fd, &sb) < 0 || !S_ISFIFO(sb.st_mode)) {
		drop_holes(ch, "the core stream is not a pipe");
		return NULL;
	}
	loads = calloc(ch->norder ? ch->norder : 1, sizeof(*loads));
	if (!loads)
		return &kcore_error_nomem;
	for (size_t i = 0; i < ch->norder; i++) {
		const struct gphdr *p = &ch->ph[ch->order[i]];

		loads[i] = (struct ch_load){ p->offset, p->vaddr, p->filesz,
					     p->memsz };
	}
	err = ch_holes_create(o->procfs, o->crash.pid, loads, ch->norder, BLOCK,
			      &ch->holes, &ch->res->pagemap_why);
	free(loads);
	if (err || !ch->holes)
		return err;
	n = fcntl(o->in_fd, F_GETPIPE_SZ);
	ch->pipe_size = n > 0 ? (size_t)n : 65536;
	ch->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (ch->null_fd < 0) {
		drop_holes(ch, "cannot open /dev/null: %s", strerror(errno));
		return NULL;
	}
	/*
	 * What the kernel wrote before the look ended, and the page it may
	 * be writing now, it decided about before: those bytes are read.
	 * (Holes it decided about but has not written yet are zeros.)
	 */
	queued = pipe_bytes(ch);
	if (queued < 0) {
		drop_holes(ch, "FIONREAD on the stream failed: %s",
			   strerror(errno));
		return NULL;
	}
	ch_holes_set_guard(ch->holes,
			   (ch->res->stream_bytes + (uint64_t)queued + PAGE -
			    1) / PAGE * PAGE +
				   PAGE);
	return NULL;
}

static struct kcore_error *open_output(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	struct kcore_error *err;
	char *base = pick_base(o);

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
	err = kcore_output_openat(o->dir_fd, ch->res->core_name, o->sync,
				  &ch->out);
	if (err)
		return err;
	if (o->chown_user &&
	    fchown(ch->out->fd, o->crash.uid, o->crash.gid) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno,
					  ch->res->core_name,
					  "cannot give the core to uid %u",
					  (unsigned)o->crash.uid);
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

struct kcore_error *kcore_core_handle(const struct kcore_ch_opts *opts,
				      struct kcore_ch_result *ret)
{
	struct ch ch = {
		.o = opts,
		.res = ret,
		.in_name = "<core stream>",
		.null_fd = -1,
	};
	uint64_t t0 = opts->start_ns ? opts->start_ns : mono_ns();
	uint64_t size;
	struct kcore_error *err;
	struct stat sb;

	memset(ret, 0, sizeof(*ret));
	ch.cut = UINT64_MAX;
	if (opts->timeout_ms)
		ch.deadline_ns = t0 + opts->timeout_ms * 1000000u;
	if (opts->compress >= KCORE_COMPRESS_NUM)
		return kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					  "unknown compression");
	/* Fewer wake-ups per MiB; root may exceed pipe-max-size. */
	fcntl(opts->in_fd, F_SETPIPE_SZ, (int)BLOCK);
	err = read_headers(&ch);
	if (err)
		goto out;
	parse_notes(&ch);
	ret->expected_bytes = ch.expected;
	err = find_holes(&ch);
	if (!err)
		err = load_others(&ch);
	if (!err)
		err = open_output(&ch);
	if (err)
		goto out;
	refresh_avail(&ch);
	/* The headers and notes are always stored: without them the rest
	 * means nothing.  A .zst keeps them in a frame we can rewrite. */
	if (ch.os) {
		err = kcore_ostream_write_stored(
			ch.os, ch.prefix, ch.prefix_len, &ch.stored_header_off);
		ch.zpos = ch.prefix_len;
		ch.stored += ch.prefix_len;
	} else {
		err = write_at(&ch, 0, ch.prefix, ch.prefix_len);
	}
	if (!err)
		err = copy_data(&ch);
	close_input(&ch);
	if (err)
		goto out;
	if (ch.cut == UINT64_MAX && ret->stream_bytes < ch.expected)
		set_cut(&ch, ret->stream_bytes, KCORE_CH_SHORT);
	size = ret->stream_bytes;
	if (ch.cut != UINT64_MAX) {
		ret->cut_offset = ch.cut;
		cut_headers(&ch, &size);
		chlog(&ch, KCORE_CH_LOG_WARNING,
		      "core of pid %" PRId64 " (%s) truncated at offset "
		      "0x%" PRIx64 " of 0x%" PRIx64 " (%s): %u segments cut",
		      opts->crash.pid,
		      opts->crash.comm ? opts->crash.comm : "?", ch.cut,
		      ch.expected, kcore_ch_reason_name(ret->reason),
		      ret->segments_cut);
	}
	ret->file_size = size;
	ret->elapsed = (double)(mono_ns() - t0) / 1e9;
	err = finish_digest(&ch,
			    ch.cut != UINT64_MAX ? ch.cut : ret->stream_bytes);
	if (err)
		goto out;
	if (!ch.os) {
		if (ch.cut != UINT64_MAX)
			err = kcore_pwrite_all(NULL, ch.out->fd, ch.out->tmp,
					       ch.prefix, ch.prefix_len, 0);
		if (!err && ch.xnum && size > ch.cut && ch.cut != UINT64_MAX) {
			unsigned char sh[sizeof(Elf64_Shdr)];
			size_t n = xnum_shdr(&ch, sh);

			err = kcore_pwrite_all(NULL, ch.out->fd, ch.out->tmp,
					       sh, n, size - n);
		}
		if (!err && ftruncate(ch.out->fd, (off_t)size) < 0)
			err = kcore_error_create(KCORE_ERR_OS, errno,
						 ch.out->tmp,
						 "cannot set the file size");
	} else {
		uint64_t end = ch.cut != UINT64_MAX ? ch.cut : size;

		if (end > ch.zpos)
			err = kcore_ostream_write_zeros(ch.os, end - ch.zpos);
		if (!err && size > end) {
			/* PN_XNUM: padding, then section 0. */
			unsigned char sh[8 + sizeof(Elf64_Shdr)] = { 0 };
			size_t shsize = ch.is64 ? sizeof(Elf64_Shdr)
						: sizeof(Elf32_Shdr);

			xnum_shdr(&ch, sh + (size - end) - shsize);
			err = kcore_ostream_write(ch.os, sh, size - end);
		}
		if (!err)
			err = kcore_ostream_finish(ch.os);
		if (!err && ch.cut != UINT64_MAX)
			err = kcore_ostream_rewrite_stored(
				ch.os, ch.stored_header_off, ch.prefix,
				ch.prefix_len);
		if (!err)
			ret->file_size = kcore_ostream_bytes_out(ch.os);
	}
	if (err)
		goto out;
	if (opts->sync && fsync(ch.out->fd) < 0) {
		err = kcore_error_create(KCORE_ERR_OS, errno, ch.out->tmp,
					 "fsync failed");
		goto out;
	}
	if (fstat(ch.out->fd, &sb) == 0)
		ret->allocated_bytes = (uint64_t)sb.st_blocks * 512;
	err = kcore_output_commit(ch.out, ret->file_size);
	if (!err)
		err = write_metadata(&ch, ret->meta_name);
	if (!err)
		chlog(&ch, KCORE_CH_LOG_INFO,
		      "stored the core of pid %" PRId64 " (%s, signal %d) as "
		      "'%s/%s': %" PRIu64 " stream bytes (%" PRIu64
		      " of them zeros left unread where the page tables had "
		      "nothing), %" PRIu64 " allocated",
		      opts->crash.pid,
		      opts->crash.comm ? opts->crash.comm : "?",
		      opts->crash.signal, opts->dir ? opts->dir : ".",
		      ret->core_name, ret->stream_bytes, ret->unread_bytes,
		      ret->allocated_bytes);
out:
	close_input(&ch);
	ch_deinit(&ch);
	return err;
}

void kcore_ch_result_deinit(struct kcore_ch_result *res)
{
	if (!res)
		return;
	free(res->core_name);
	free(res->meta_name);
	free(res->pagemap_why);
	res->core_name = res->meta_name = res->pagemap_why = NULL;
}
