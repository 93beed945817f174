// SPDX-License-Identifier: MIT
/*
 * What the core handler and its build-ID helper send each other
 * (corehandler-wire.c): the reply as the helper writes it reads back the
 * same; a reply cut at any byte, or with a byte changed, is refused or
 * read within its bounds, never past them; the one message to the helper
 * carries the core's descriptor and the debuginfo files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "corehandler-internal.h"
#include "tap.h"

static struct ch_frame frames[2] = {
	{ .pc = 0x401000,
	  .func = "main",
	  .module = "/usr/bin/x",
	  .func_off = 0x10,
	  .module_off = 0x1000 },
	{ .pc = 0x7f0000001000 },
};

static struct ch_bt_thread threads[1] = {
	{ .tid = 42, .frames = frames, .nframes = 2, .error = "stopped" },
};

static void fill(struct ch_buildids *ids)
{
	static struct ch_module mods[2] = {
		{ .name = "/usr/bin/x",
		  .start = 0x400000,
		  .end = 0x402000,
		  .build_id = { 0xde, 0xad, 0xbe, 0xef },
		  .build_id_len = 4 },
		{ .name = "/usr/lib/libc.so.6",
		  .start = 0x7f0000000000,
		  .end = 0x7f0000200000,
		  .build_id_len = 20 },
	};

	memset(ids, 0, sizeof(*ids));
	ids->mods = mods;
	ids->count = 2;
	ids->uid = 65534;
	ids->gid = 65534;
	ids->no_new_privs = true;
	ids->seccomp = true;
	ids->cap_eff = 0;
	ids->error = "one module unreadable";
	ids->bt.made = true;
	ids->bt.timed_out = true;
	ids->bt.seconds = 0.25;
	ids->bt.debug_files = 3;
	ids->bt.threads = threads;
	ids->bt.nthreads = 1;
}

/* Both parts of the reply, as the helper sends them. */
static unsigned char *whole_reply(const struct ch_buildids *ids, size_t budget,
				  size_t *ret_len, size_t *ret_first)
{
	size_t a = 0, b = 0;
	char *m = ch_wire_modules(ids, &a);
	char *t = ch_wire_backtrace(&ids->bt, budget, &b);
	unsigned char *r = malloc(a + b + 1);

	if (!m || !t || !r)
		abort();
	memcpy(r, m, a);
	memcpy(r + a, t, b);
	free(m);
	free(t);
	*ret_len = a + b;
	*ret_first = a;
	return r;
}

static void roundtrip(void)
{
	struct ch_buildids in, out = { 0 };
	size_t len, first;
	unsigned char *r;
	bool cut = false;

	fill(&in);
	r = whole_reply(&in, 1 << 20, &len, &first);
	ok(ch_wire_parse_reply(r, len, &out, &cut), "reply: parsed");
	ok(!cut, "reply: the backtrace came");
	is_int(out.count, 2, "reply: two modules");
	ok(out.count == 2 &&
		   strcmp(out.mods[1].name, "/usr/lib/libc.so.6") == 0 &&
		   out.mods[0].build_id_len == 4 &&
		   memcmp(out.mods[0].build_id, "\xde\xad\xbe\xef", 4) == 0 &&
		   out.mods[1].end == 0x7f0000200000,
	   "reply: the modules as sent");
	ok(out.uid == 65534 && out.no_new_privs && out.seccomp && !out.chroot,
	   "reply: the helper's sandbox as sent");
	ok(out.error && strcmp(out.error, "one module unreadable") == 0,
	   "reply: the error as sent");
	ok(out.bt.made && out.bt.timed_out && out.bt.debug_files == 3 &&
		   out.bt.seconds == 0.25,
	   "reply: the backtrace's flags");
	ok(out.bt.nthreads == 1 && out.bt.threads[0].tid == 42 &&
		   out.bt.threads[0].nframes == 2 &&
		   strcmp(out.bt.threads[0].frames[0].func, "main") == 0 &&
		   out.bt.threads[0].frames[0].module_off == 0x1000 &&
		   !out.bt.threads[0].frames[1].func &&
		   strcmp(out.bt.threads[0].error, "stopped") == 0,
	   "reply: the thread and its frames");
	ch_buildids_deinit(&out);
	free(r);

	/* A budget for one frame: the thread says it is truncated. */
	r = whole_reply(&in, 64 + 64 + 7 + 32 + 14, &len, &first);
	memset(&out, 0, sizeof(out));
	ok(ch_wire_parse_reply(r, len, &out, &cut) && out.bt.nthreads == 1 &&
		   out.bt.threads[0].nframes == 1 &&
		   out.bt.threads[0].truncated,
	   "reply: frames beyond the budget left out, the thread truncated");
	ch_buildids_deinit(&out);
	free(r);
}

/* Cut at every byte, and every byte changed: no crash, no read past the
 * end (valgrind and ASan builds see it), and what it says is bounded. */
static void hostile(void)
{
	struct ch_buildids in, out;
	size_t len, first, bad_cuts = 0, bad_mods = 0;
	unsigned char *r;

	fill(&in);
	r = whole_reply(&in, 1 << 20, &len, &first);
	for (size_t n = 0; n < len; n++) {
		unsigned char *c = malloc(n ? n : 1);
		bool cut = false, whole;

		memcpy(c, r, n);
		memset(&out, 0, sizeof(out));
		whole = ch_wire_parse_reply(c, n, &out, &cut);
		/* The modules' part whole: the reply is taken, without the
		 * backtrace or with it marked malformed. */
		if (n < first ? whole && out.count == 2 : !whole)
			bad_cuts++;
		if (out.count > 2)
			bad_mods++;
		ch_buildids_deinit(&out);
		free(c);
	}
	is_int(bad_cuts, 0, "cut replies: parsed only when the modules came");
	for (size_t i = 0; i < len; i++) {
		unsigned char *c = malloc(len);
		bool cut = false;

		memcpy(c, r, len);
		c[i] ^= 0xff;
		memset(&out, 0, sizeof(out));
		ch_wire_parse_reply(c, len, &out, &cut);
		if (out.count > 2 || out.bt.nthreads > CH_BT_MAX_THREADS)
			bad_mods++;
		ch_buildids_deinit(&out);
		free(c);
	}
	is_int(bad_mods, 0, "changed replies: never more than was sent");

	/* Killed before anything came: no error of its own. */
	{
		bool cut = true;

		memset(&out, 0, sizeof(out));
		ok(!ch_wire_parse_reply(r, 0, &out, &cut) && !out.error,
		   "killed helper, no reply: not parsed, no error set");
		ch_buildids_deinit(&out);
		cut = false;
		ok(!ch_wire_parse_reply((const unsigned char *)"", 0, &out,
					&cut) &&
			   out.error && strstr(out.error, "no reply"),
		   "no reply: said so");
		ch_buildids_deinit(&out);
	}
	free(r);
}

static void input(void)
{
	struct ch_debugfile debug[2] = {
		{ .id = { 1, 2, 3 }, .id_len = 3 },
		{ .id = { 9 }, .id_len = 1 },
	}, got[CH_MAX_DEBUG];
	struct ch_buildid_input in = { 0 };
	int sv[2], p[2], p2[2];
	char c = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe(p) < 0 || pipe(p2) < 0)
		abort();
	debug[0].fd = p2[0];
	debug[1].fd = p2[0];
	ok(ch_wire_send_input(sv[0], p[0], true, 1234, debug, 2) == 0,
	   "input: sent");
	ok(ch_wire_recv_input(sv[1], &in, got), "input: received");
	ok(in.memory && in.backtrace_ms == 1234, "input: the flags");
	is_int(in.ndebug, 2, "input: two debuginfo files");
	ok(in.ndebug == 2 && got[0].id_len == 3 && got[0].id[2] == 3 &&
		   got[1].id_len == 1 && got[1].id[0] == 9,
	   "input: their build IDs");
	if (write(p[1], "x", 1) != 1)
		abort();
	ok(read(in.core_fd, &c, 1) == 1 && c == 'x',
	   "input: the core's descriptor is the one sent");
	close(in.core_fd);
	for (size_t i = 0; i < in.ndebug; i++)
		close(got[i].fd);
	/* A message without descriptors is not one. */
	ok(write(sv[0], "f0000000000000", 13) == 13 &&
		   !ch_wire_recv_input(sv[1], &in, got),
	   "input: no descriptor, refused");
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
	close(p2[0]);
	close(p2[1]);
}

int main(void)
{
	roundtrip();
	hostile();
	input();
	return tap_done();
}
