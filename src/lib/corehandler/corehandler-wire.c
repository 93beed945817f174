// SPDX-License-Identifier: MIT
/*
 * What the core handler and its build-ID helper (corehandler-priv.c) say
 * to each other over their socket: the one message to the helper (the
 * core's descriptor and the build-ID debuginfo files, SCM_RIGHTS), and
 * the helper's reply (what it saw of itself, the modules, then the
 * backtrace).  The reply comes from a process that parsed a hostile
 * core: it is read with every length and count checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bytes.h"
#include "corehandler-internal.h"

#define REPLY_MAGIC 0x4b434249u /* "KCBI" */

static void put32(FILE *f, uint32_t v)
{
	unsigned char b[4];

	kcore_store_le(b, v, 4);
	fwrite(b, 1, 4, f);
}

static void put64(FILE *f, uint64_t v)
{
	unsigned char b[8];

	kcore_store_le(b, v, 8);
	fwrite(b, 1, 8, f);
}

static void put_str(FILE *f, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put32(f, s ? (uint32_t)n : UINT32_MAX);
	if (n)
		fwrite(s, 1, n, f);
}

/* A frame's bytes in the reply. */
static size_t frame_size(const struct ch_frame *fr)
{
	return 32 + (fr->func ? strlen(fr->func) : 0) +
	       (fr->module ? strlen(fr->module) : 0);
}

/*
 * The backtrace: flags, seconds (µs), debuginfo files, error, threads;
 * frames beyond budget bytes left out (their thread marked truncated).
 */
static void put_bt(FILE *f, const struct ch_backtrace *bt, size_t budget)
{
	size_t used = 64;

	put32(f, (uint32_t)bt->made | (uint32_t)bt->threads_truncated << 1 |
			 (uint32_t)bt->timed_out << 2);
	put64(f, (uint64_t)(bt->seconds * 1e6));
	put32(f, bt->debug_files);
	put_str(f, bt->error);
	put32(f, (uint32_t)bt->nthreads);
	for (size_t i = 0; i < bt->nthreads; i++) {
		const struct ch_bt_thread *t = &bt->threads[i];
		size_t n = 0;

		used += 64 + (t->error ? strlen(t->error) : 0);
		while (n < t->nframes &&
		       used + frame_size(&t->frames[n]) <= budget)
			used += frame_size(&t->frames[n++]);
		put64(f, (uint64_t)t->tid);
		put32(f, t->truncated || n < t->nframes);
		put_str(f, t->error);
		put32(f, (uint32_t)n);
		for (size_t k = 0; k < n; k++) {
			const struct ch_frame *fr = &t->frames[k];

			put64(f, fr->pc);
			put64(f, fr->func_off);
			put64(f, fr->module_off);
			put_str(f, fr->func);
			put_str(f, fr->module);
		}
	}
}

/* The buffer of a memory stream (of open_memstream(buf, len)), once
 * it is closed; NULL on failure. */
static char *memstream_done(FILE *f, char **buf, size_t *len, size_t *ret_len)
{
	if (fclose(f) != 0) {
		free(*buf);
		return NULL;
	}
	*ret_len = *len;
	return *buf;
}

/*
 * The helper's reply, in two parts: what it saw of itself and the
 * modules, as soon as it has them; then the backtrace (so that a
 * backtrace past the time limit costs only itself).
 */
char *ch_wire_modules(const struct ch_buildids *ids, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	size_t elen = ids->error ? strlen(ids->error) : 0;

	if (!f)
		return NULL;
	put32(f, REPLY_MAGIC);
	put64(f, (uint64_t)ids->uid);
	put64(f, (uint64_t)ids->gid);
	put32(f, (uint32_t)ids->no_new_privs | (uint32_t)ids->seccomp << 1 |
			 (uint32_t)ids->chroot << 2);
	put64(f, ids->cap_eff);
	put32(f, (uint32_t)(elen > 4096 ? 4096 : elen));
	fwrite(ids->error ? ids->error : "", 1, elen > 4096 ? 4096 : elen, f);
	put32(f, (uint32_t)ids->count);
	for (size_t i = 0; i < ids->count; i++) {
		const struct ch_module *m = &ids->mods[i];
		size_t nlen = strlen(m->name);

		put64(f, m->start);
		put64(f, m->end);
		put32(f, m->build_id_len);
		fwrite(m->build_id, 1, m->build_id_len, f);
		put32(f, (uint32_t)nlen);
		fwrite(m->name, 1, nlen, f);
	}
	return memstream_done(f, &buf, &len, ret_len);
}

char *ch_wire_backtrace(const struct ch_backtrace *bt, size_t budget,
			size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	put_bt(f, bt, budget);
	return memstream_done(f, &buf, &len, ret_len);
}

/*
 * The helper's one message: a flag byte ('f' the stored core, 'm' the
 * first-pages image), le64 milliseconds for the backtrace, le32 count of
 * debuginfo files, each a byte of build-ID length and the ID; with the
 * core's descriptor, then the debuginfo files', as SCM_RIGHTS.
 */
#define MSG_MAX (1 + 8 + 4 + CH_MAX_DEBUG * 65)

union fds_cmsg {
	struct cmsghdr h;
	char b[CMSG_SPACE(sizeof(int) * (1 + CH_MAX_DEBUG))];
};

/* Received into *in (and debug, CH_MAX_DEBUG of them); false if the
 * message is not one. */
bool ch_wire_recv_input(int sock, struct ch_buildid_input *in,
			struct ch_debugfile *debug)
{
	unsigned char buf[MSG_MAX];
	struct iovec iov = { buf, sizeof(buf) };
	union fds_cmsg u;
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.b,
			      .msg_controllen = sizeof(u.b) };
	struct cmsghdr *c;
	int fds[1 + CH_MAX_DEBUG];
	size_t nfds = 0, pos = 13;
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	uint64_t count;

	if (n < 13)
		return false;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len >= CMSG_LEN(sizeof(int))) {
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfds > 1 + CH_MAX_DEBUG)
			nfds = 1 + CH_MAX_DEBUG;
		memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
	}
	if (!nfds)
		return false;
	in->core_fd = fds[0];
	in->memory = buf[0] == 'm';
	in->backtrace_ms = kcore_load(buf + 1, 8, false);
	count = kcore_load(buf + 9, 4, false);
	in->debug = debug;
	in->ndebug = 0;
	for (uint64_t i = 0; i < count && i + 1 < nfds; i++) {
		unsigned len;

		if (pos >= (size_t)n)
			break;
		len = buf[pos++];
		if (len > sizeof(debug->id) || len > (size_t)n - pos)
			break;
		memcpy(debug[i].id, buf + pos, len);
		debug[i].id_len = len;
		debug[i].fd = fds[i + 1];
		pos += len;
		in->ndebug++;
	}
	return true;
}

int ch_wire_send_input(int sock, int fd, bool memory, uint64_t bt_ms,
		       const struct ch_debugfile *debug, size_t ndebug)
{
	unsigned char buf[MSG_MAX];
	struct iovec iov = { buf, 0 };
	union fds_cmsg u;
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.b,
			      .msg_controllen =
				      CMSG_SPACE(sizeof(int) * (1 + ndebug)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	size_t pos = 13;

	memset(u.b, 0, sizeof(u.b));
	buf[0] = memory ? 'm' : 'f';
	kcore_store_le(buf + 1, bt_ms, 8);
	kcore_store_le(buf + 9, ndebug, 4);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (1 + ndebug));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	for (size_t i = 0; i < ndebug; i++) {
		memcpy(CMSG_DATA(c) + sizeof(int) * (i + 1), &debug[i].fd,
		       sizeof(int));
		buf[pos++] = (unsigned char)debug[i].id_len;
		memcpy(buf + pos, debug[i].id, debug[i].id_len);
		pos += debug[i].id_len;
	}
	iov.iov_len = pos;
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)pos ? 0 : -1;
}

static uint64_t get(const unsigned char **p, const unsigned char *end,
		    unsigned size, bool *bad)
{
	uint64_t v;

	if ((size_t)(end - *p) < size) {
		*bad = true;
		return 0;
	}
	v = kcore_load(*p, size, false);
	*p += size;
	return v;
}

/* A string of the reply: NULL for none (UINT32_MAX), at most max. */
static char *get_str(const unsigned char **p, const unsigned char *end,
		     size_t max, bool *bad)
{
	uint64_t n = get(p, end, 4, bad);
	char *s;

	if (*bad || n == UINT32_MAX)
		return NULL;
	if (n > max || n > (uint64_t)(end - *p)) {
		*bad = true;
		return NULL;
	}
	s = strndup((const char *)*p, n);
	*p += n;
	if (!s)
		*bad = true;
	return s;
}

static void parse_bt(const unsigned char **p, const unsigned char *end,
		     struct ch_backtrace *bt, bool *bad)
{
	uint64_t flags = get(p, end, 4, bad), n;

	bt->made = flags & 1;
	bt->threads_truncated = flags & 2;
	bt->timed_out = flags & 4;
	bt->seconds = (double)get(p, end, 8, bad) / 1e6;
	bt->debug_files = (unsigned)get(p, end, 4, bad);
	bt->error = get_str(p, end, 4096, bad);
	n = get(p, end, 4, bad);
	if (*bad || !n)
		return;
	if (n > CH_BT_MAX_THREADS) {
		*bad = true;
		return;
	}
	bt->threads = calloc(n, sizeof(*bt->threads));
	if (!bt->threads) {
		*bad = true;
		return;
	}
	for (uint64_t i = 0; i < n && !*bad; i++) {
		struct ch_bt_thread *t = &bt->threads[i];
		uint64_t nf;

		bt->nthreads++;
		t->tid = (int64_t)get(p, end, 8, bad);
		t->truncated = get(p, end, 4, bad) != 0;
		t->error = get_str(p, end, 4096, bad);
		nf = get(p, end, 4, bad);
		if (*bad || !nf)
			continue;
		if (nf > CH_BT_MAX_FRAMES) {
			*bad = true;
			break;
		}
		t->frames = calloc(nf, sizeof(*t->frames));
		if (!t->frames) {
			*bad = true;
			break;
		}
		for (uint64_t k = 0; k < nf && !*bad; k++) {
			struct ch_frame *fr = &t->frames[k];

			t->nframes++;
			fr->pc = get(p, end, 8, bad);
			fr->func_off = get(p, end, 8, bad);
			fr->module_off = get(p, end, 8, bad);
			fr->func = get_str(p, end, 4096, bad);
			fr->module = get_str(p, end, 4096, bad);
		}
	}
}

bool ch_wire_parse_reply(const unsigned char *buf, size_t len,
			 struct ch_buildids *ids, bool *ret_bt_cut)
{
	const unsigned char *p = buf, *end = buf + len;
	bool bad = false;
	uint64_t flags, elen, count;

	if (get(&p, end, 4, &bad) != REPLY_MAGIC || bad) {
		if (!*ret_bt_cut)
			ids->error = strdup(len ? "the build-ID helper's reply "
						  "is malformed"
						: "the build-ID helper gave no "
						  "reply");
		return false;
	}
	ids->uid = (int64_t)get(&p, end, 8, &bad);
	ids->gid = (int64_t)get(&p, end, 8, &bad);
	flags = get(&p, end, 4, &bad);
	ids->no_new_privs = flags & 1;
	ids->seccomp = flags & 2;
	ids->chroot = flags & 4;
	ids->cap_eff = get(&p, end, 8, &bad);
	elen = get(&p, end, 4, &bad);
	if (!bad && elen && elen <= (uint64_t)(end - p)) {
		ids->error = strndup((const char *)p, elen);
		p += elen;
	} else if (elen) {
		bad = true;
	}
	count = get(&p, end, 4, &bad);
	if (!bad && count)
		ids->mods =
			calloc(count < 4096 ? count : 4096, sizeof(*ids->mods));
	for (uint64_t i = 0; !bad && ids->mods && i < count && i < 4096; i++) {
		struct ch_module *m = &ids->mods[i];
		uint64_t idlen, nlen;

		m->start = get(&p, end, 8, &bad);
		m->end = get(&p, end, 8, &bad);
		idlen = get(&p, end, 4, &bad);
		if (bad || idlen > sizeof(m->build_id) ||
		    idlen > (uint64_t)(end - p)) {
			bad = true;
			break;
		}
		memcpy(m->build_id, p, idlen);
		m->build_id_len = (unsigned)idlen;
		p += idlen;
		nlen = get(&p, end, 4, &bad);
		if (bad || nlen > 4096 || nlen > (uint64_t)(end - p)) {
			bad = true;
			break;
		}
		m->name = strndup((const char *)p, nlen);
		p += nlen;
		if (!m->name) {
			bad = true;
			break;
		}
		ids->count++;
	}
	/* The backtrace's part, if it came (whole). */
	if (!bad && p < end) {
		parse_bt(&p, end, &ids->bt, &bad);
		if (bad) {
			ch_backtrace_deinit(&ids->bt);
			if (!*ret_bt_cut)
				ids->bt.error =
					strdup("the build-ID helper's "
					       "backtrace is malformed");
			bad = false;
		}
	} else if (!bad) {
		*ret_bt_cut = true;
	}
	if (bad && *ret_bt_cut)
		return false;
	if (bad && !ids->error)
		ids->error = strdup("the build-ID helper's reply is "
				    "malformed");
	return true;
}
