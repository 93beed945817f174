// SPDX-License-Identifier: MIT
/*
 * The core handler's stream: reading the pipe the kernel writes the core
 * into (the prefix of headers and notes, then the segments' data, holes
 * passed without reading them), and its teardown.  The headers read from
 * it are corehandler-headers.c's, the notes corehandler-notes.c's.
 * Nothing here opens a file or decides about the store.
 *
 * The kernel writes a core into the pipe a page at a time and wakes the
 * reader whenever the pipe was empty: reading each page as it comes costs
 * two system calls and two context switches per 4 KiB, which is most of
 * the cost of a sparse stream.  After a small read, let the pipe fill for
 * about the time the writer needs for SMALL_READ bytes at its recent rate
 * (at most 2 ms), so that reads come back with many pages each.
 *
 * On the coredump socket with COREDUMP_HOLES acknowledged (ch->framed) the
 * kernel frames the core in records: le32 size (16, or more from a newer
 * kernel: the rest is skipped), le32 type, le64 len; type 1 is followed by
 * len bytes of the core, type 2 stands for len zeros it does not send
 * (where a core file has a hole).  Stream positions (stream_bytes) are the
 * core's offsets; the zeros of hole records are never read, as the
 * pagemap's holes are not (unread_bytes).
 */
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

#include "bytes.h"
#include "corehandler-internal.h"

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
 * Bytes of the core (data) count in stream_bytes, a record's header not.
 */
static struct kcore_error *read_in(struct ch *ch, void *buf, size_t len,
				   bool data, size_t *ret_done)
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
		if (data)
			ch->res->stream_bytes += (uint64_t)n;
		if ((size_t)n < SMALL_READ && done < len)
			batch_wait(ch, (uint64_t)n);
		if (zeros)
			credit_hole(ch, start);
	}
	*ret_done = done;
	return NULL;
}

#define REC_SIZE_VER0 16u
#define REC_SIZE_MAX  4096u
#define REC_DATA      1u
#define REC_HOLE      2u

static struct kcore_error *record_error(const struct ch *ch, const char *fmt,
					...)
	__attribute__((format(printf, 2, 3)));

static struct kcore_error *record_error(const struct ch *ch, const char *fmt,
					...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kcore_error_create_at(KCORE_ERR_FORMAT, 0, ch->in_name,
				     ch->res->stream_bytes, "%s", msg);
}

/* The next record's header (ch->framed, none pending); at the end of the
 * stream ch->eof, when stopped ch->stopped. */
static struct kcore_error *next_record(struct ch *ch)
{
	unsigned char head[REC_SIZE_VER0], skip[256];
	struct kcore_error *err;
	uint32_t size, type;
	uint64_t len;
	size_t got;

	err = read_in(ch, head, sizeof(head), false, &got);
	if (err || ch->stopped || (got == 0 && ch->eof))
		return err;
	if (got < sizeof(head))
		return record_error(ch,
				    "the stream ends inside a record "
				    "header (%zu of %u bytes)",
				    got, REC_SIZE_VER0);
	size = (uint32_t)kcore_load(head, 4, false);
	type = (uint32_t)kcore_load(head + 4, 4, false);
	len = kcore_load(head + 8, 8, false);
	if (size < REC_SIZE_VER0 || size > REC_SIZE_MAX)
		return record_error(ch, "a record header of %" PRIu32 " bytes",
				    size);
	if (type != REC_DATA && type != REC_HOLE)
		return record_error(ch, "a record of unknown type %" PRIu32,
				    type);
	/* What a newer kernel adds to the header, we do not know. */
	for (uint32_t left = size - REC_SIZE_VER0; left;) {
		uint32_t k = left < sizeof(skip) ? left : sizeof(skip);

		err = read_in(ch, skip, k, false, &got);
		if (err || ch->stopped)
			return err;
		if (got < k)
			return record_error(ch, "the stream ends inside a "
						"record header");
		left -= k;
	}
	if (len > UINT64_MAX - ch->res->stream_bytes)
		return record_error(ch, "a record of 0x%" PRIx64 " bytes", len);
	if (type == REC_DATA)
		ch->rec_data = len;
	else
		ch->rec_hole = len;
	return NULL;
}

/* Up to len zeros of the current hole record, consumed: how many. */
static uint64_t take_hole(struct ch *ch, uint64_t len)
{
	uint64_t k = ch->rec_hole < len ? ch->rec_hole : len;

	ch->rec_hole -= k;
	ch->res->stream_bytes += k;
	ch->res->unread_bytes += k;
	return k;
}

struct kcore_error *ch_fill(struct ch *ch, void *buf, size_t len,
			    size_t *ret_done)
{
	struct kcore_error *err = NULL;
	size_t done = 0, got;

	if (!ch->framed)
		return read_in(ch, buf, len, true, ret_done);
	while (done < len && !ch->eof && !ch->stopped) {
		size_t k;

		if (!ch->rec_data && !ch->rec_hole) {
			err = next_record(ch);
			if (err)
				break;
			continue;
		}
		if (ch->rec_hole) {
			k = (size_t)take_hole(ch, len - done);
			memset((char *)buf + done, 0, k);
			done += k;
			continue;
		}
		k = ch->rec_data < len - done ? (size_t)ch->rec_data
					      : len - done;
		err = read_in(ch, (char *)buf + done, k, true, &got);
		done += got;
		ch->rec_data -= got;
		if (err)
			break;
		if (got < k && ch->eof)
			err = record_error(ch,
					   "the stream ends inside a data "
					   "record (0x%" PRIx64
					   " bytes missing)",
					   ch->rec_data);
		if (got < k)
			break;
	}
	*ret_done = done;
	return err;
}

uint64_t ch_zero_run(const struct ch *ch, uint64_t start, uint64_t unit)
{
	if (!ch->framed)
		return ch_holes_run(ch->holes, start, unit);
	if (start != ch->res->stream_bytes || ch->rec_hole < unit)
		return 0;
	return ch->rec_hole - ch->rec_hole % unit;
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

	if (ch->framed) {
		/* Zeros the kernel did not send (ch_zero_run()). */
		*ret_done =
			pos == ch->res->stream_bytes ? take_hole(ch, len) : 0;
		return NULL;
	}
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
