// SPDX-License-Identifier: MIT
/*
 * The module listing in a forked sandbox (modules.c says why): the child
 * drops to nobody, closes every descriptor, takes seccomp and CPU and
 * memory limits, lists with libdwfl and writes its reply; the parent
 * reads the reply, bounded, and decodes it with every length checked.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bytes.h"
#include "modules.h"
#include "sandbox.h"

/* Bounds of what the sandboxed listing reports. */
#define MAX_MODULES  65536u
#define MAX_NAME_LEN 4096u
#define MAX_REPLY    (64u << 20)
#define REPLY_MAGIC  0x4b434d4cu /* "KCML" */
/* The listing's CPU time, at most: libdwfl takes milliseconds on a
 * real core. */
#define LIST_CPU_SECONDS 60

struct buf {
	unsigned char *p;
	size_t len, cap;
	bool nomem;
};

static void buf_put(struct buf *b, const void *data, size_t len)
{
	if (b->nomem)
		return;
	if (b->cap - b->len < len) {
		size_t cap = b->cap ? b->cap : 4096;
		unsigned char *p;

		while (cap - b->len < len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->nomem = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void buf_put_le(struct buf *b, uint64_t v, unsigned size)
{
	unsigned char le[8];

	kcore_store_le(le, v, size);
	buf_put(b, le, size);
}

static void buf_put_str(struct buf *b, const void *s, size_t len, size_t max)
{
	if (len > max)
		len = max;
	buf_put_le(b, len, 4);
	buf_put(b, s, len);
}

/* What the sandbox sends back: an error or the modules. */
static void encode_reply(struct buf *b, const char *error,
			 const struct kcore_module *mods, size_t count)
{
	buf_put_le(b, REPLY_MAGIC, 4);
	buf_put_str(b, error ? error : "", error ? strlen(error) : 0,
		    MAX_NAME_LEN);
	if (count > MAX_MODULES)
		count = MAX_MODULES;
	buf_put_le(b, count, 4);
	for (size_t i = 0; i < count; i++) {
		const struct kcore_module *m = &mods[i];

		buf_put_le(b, m->start, 8);
		buf_put_le(b, m->end, 8);
		buf_put_le(b, m->build_id_vaddr, 8);
		buf_put_le(b, m->elf_in_core, 4);
		buf_put_str(b, m->build_id, m->build_id_len, MAX_ID_LEN);
		buf_put_str(b, m->name, strlen(m->name), MAX_NAME_LEN);
	}
}

struct reader {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t get_le(struct reader *r, unsigned size)
{
	uint64_t v;

	if (r->bad || (size_t)(r->end - r->p) < size) {
		r->bad = true;
		return 0;
	}
	v = kcore_load(r->p, size, false);
	r->p += size;
	return v;
}

/* A counted string of at most max bytes, or NULL (bad set). */
static const unsigned char *get_str(struct reader *r, size_t max,
				    size_t *ret_len)
{
	uint64_t len = get_le(r, 4);
	const unsigned char *s = r->p;

	if (r->bad || len > max || len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return NULL;
	}
	r->p += len;
	*ret_len = (size_t)len;
	return s;
}

/* The sandbox's reply, every length checked. */
static struct kcore_error *decode_reply(const unsigned char *p, size_t len,
					const char *path,
					struct kcore_module **ret,
					size_t *ret_count)
{
	struct reader r = { p, p + len, false };
	struct kcore_module *mods = NULL;
	const unsigned char *s;
	size_t slen, n = 0;
	uint64_t count;

	if (get_le(&r, 4) != REPLY_MAGIC)
		return kcore_error_create(KCORE_ERR_OS, 0, path,
					  "the module listing (libdwfl, "
					  "sandboxed) gave %s",
					  len ? "a malformed reply"
					      : "no reply");
	s = get_str(&r, MAX_NAME_LEN, &slen);
	if (s && slen)
		return kcore_error_create(KCORE_ERR_FORMAT, 0, path, "%.*s",
					  (int)slen, (const char *)s);
	count = get_le(&r, 4);
	if (!r.bad && count > MAX_MODULES)
		r.bad = true;
	if (!r.bad && count) {
		mods = calloc((size_t)count, sizeof(*mods));
		if (!mods)
			return &kcore_error_nomem;
	}
	for (; !r.bad && n < count; n++) {
		struct kcore_module *m = &mods[n];

		m->start = get_le(&r, 8);
		m->end = get_le(&r, 8);
		m->build_id_vaddr = get_le(&r, 8);
		m->elf_in_core = get_le(&r, 4) & 1;
		s = get_str(&r, MAX_ID_LEN, &slen);
		if (s && slen) {
			m->build_id = malloc(slen);
			if (!m->build_id)
				break;
			memcpy(m->build_id, s, slen);
			m->build_id_len = slen;
		}
		s = get_str(&r, MAX_NAME_LEN, &slen);
		if (!s)
			break;
		m->name = strndup((const char *)s, slen);
		if (!m->name)
			break;
	}
	if (r.bad || n < count) {
		bool nomem = !r.bad;

		kcore_modules_free(mods, count);
		return nomem ? &kcore_error_nomem
			     : kcore_error_create(KCORE_ERR_OS, 0, path,
						  "the module listing "
						  "(libdwfl, sandboxed) gave "
						  "a malformed reply");
	}
	*ret = mods;
	*ret_count = n;
	return NULL;
}

/* Close every descriptor but a and b (and standard error, for the
 * sanitizers' reports). */
static void close_all_but(int a, int b)
{
	int keep[3] = { 2, a < b ? a : b, a < b ? b : a };
	unsigned lo = 0;

	for (int i = 0; i <= 3; i++) {
		unsigned hi = i < 3 ? (unsigned)keep[i] : ~0u;

		if (hi > lo && syscall(SYS_close_range, lo, hi - 1, 0) < 0) {
			unsigned top = hi == ~0u ? 65536 : hi;

			for (unsigned fd = lo; fd < top; fd++)
				close((int)fd);
		}
		if (i < 3)
			lo = (unsigned)keep[i] + 1;
	}
}

static void write_reply(int fd, const struct buf *b)
{
	size_t done = 0;

	while (!b->nomem && done < b->len) {
		ssize_t w = write(fd, b->p + done, b->len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
}

/* The forked listing: nobody (if we are root), no new privileges, no
 * open(), bounded CPU and memory; writes its reply to wfd.  Never
 * returns. */
static void sandbox_main(Elf *elf, int core_fd, const char *path, int wfd)
{
	struct kcore_module *mods = NULL;
	struct kcore_error *err = NULL;
	struct buf b = { 0 };
	size_t count = 0;
	char *why = NULL;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	close_all_but(core_fd, wfd);
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) < 0 ||
	     setresgid(KCORE_NOBODY, KCORE_NOBODY, KCORE_NOBODY) < 0 ||
	     setresuid(KCORE_NOBODY, KCORE_NOBODY, KCORE_NOBODY) < 0 ||
	     geteuid() != KCORE_NOBODY))
		why = "cannot become nobody";
	kcore_sandbox_rlimits(LIST_CPU_SECONDS);
	if (!why && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		     !kcore_sandbox_seccomp()))
		why = "no seccomp sandbox for libdwfl on this system";
	if (!why)
		err = kcore_modules_list(elf, path, false, &mods, &count);
	if (err) {
		why = kcore_error_describe(err);
		if (!why)
			why = "out of memory";
	}
	encode_reply(&b, why, mods, count);
	write_reply(wfd, &b);
	_exit(0);
}

/* List the modules of elf (read through core_fd) in a forked sandbox. */
struct kcore_error *kcore_modules_sandboxed(Elf *elf, int core_fd,
					    const char *path,
					    struct kcore_module **ret,
					    size_t *ret_count)
{
	struct kcore_error *err = NULL;
	unsigned char *reply = NULL;
	size_t len = 0, cap = 0;
	int fds[2], status = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot create a pipe");
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		sandbox_main(elf, core_fd, path, fds[1]);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot fork the module listing");
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			unsigned char *p;

			cap = cap ? 2 * cap : 1 << 16;
			p = cap <= MAX_REPLY ? realloc(reply, cap) : NULL;
			if (!p) {
				err = cap <= MAX_REPLY
					      ? &kcore_error_nomem
					      : kcore_error_create(
							KCORE_ERR_OS, 0, path,
							"the module listing's "
							"reply is over %u MiB",
							MAX_REPLY >> 20);
				break;
			}
			reply = p;
		}
		n = read(fds[0], reply + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fds[0]);
	if (err)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!err && WIFSIGNALED(status))
		err = kcore_error_create(
			KCORE_ERR_FORMAT, 0, path,
			"the module listing (libdwfl, sandboxed) was killed "
			"by signal %d%s",
			WTERMSIG(status),
			WTERMSIG(status) == SIGXCPU ? " (its CPU time limit)"
			: WTERMSIG(status) == SIGSYS
				? " (a system call its sandbox forbids)"
				: "");
	if (!err)
		err = decode_reply(reply, len, path, ret, ret_count);
	free(reply);
	return err;
}
