// SPDX-License-Identifier: MIT
/*
 * The core handler's store limits (corehandler-vacuum.c) and their totals
 * in the lock file (corehandler-totals.c), on a temporary store of cores
 * with known sizes and times: what the limits let a core keep, which
 * older cores they remove and in what order, that the core being stored
 * is never one of them, and that nothing but a regular file the scan saw
 * is removed (symlinks, FIFOs, directories stay, and so does what a
 * symlink points at).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "coredir.h"
#include "corehandler-vacuum.h"
#include "kcoredump/output.h"
#include "tap.h"

#define CORE_BYTES (64u << 10)

static unsigned looks; /* "looked at the whole store" messages */

static void count_looks(void *arg, int prio, const char *msg)
{
	(void)arg;
	(void)prio;
	if (strncmp(msg, "looked at the whole store", 25) == 0)
		looks++;
}

/* A file of len bytes of fill (not zeros: they take blocks). */
static void put_file(int dir_fd, const char *name, size_t len, char fill)
{
	char *buf = malloc(len ? len : 1);
	int fd = openat(dir_fd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);

	if (!buf || fd < 0)
		abort();
	memset(buf, fill, len);
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd) < 0)
		abort();
	close(fd);
	free(buf);
}

/* The metadata of core.NAME.UID.1.TIME (ours, as the handler writes). */
static void put_meta(int dir_fd, const char *name, int uid, long time)
{
	char meta[160], text[192];
	int fd, n;

	snprintf(meta, sizeof(meta), "core.%s.%d.1.%ld.json", name, uid, time);
	n = snprintf(text, sizeof(text),
		     "{\n  \"uid\": %d,\n  \"time\": %ld\n}\n", uid, time);
	fd = openat(dir_fd, meta,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n)
		abort();
	close(fd);
}

/* core.NAME.UID.1.TIME of CORE_BYTES, and its metadata. */
static void put_core(int dir_fd, const char *name, int uid, long time)
{
	char core[128];

	snprintf(core, sizeof(core), "core.%s.%d.1.%ld", name, uid, time);
	put_file(dir_fd, core, CORE_BYTES, 'c');
	put_meta(dir_fd, name, uid, time);
}

static bool has(int dir_fd, const char *name, int uid, long time)
{
	char core[128];

	snprintf(core, sizeof(core), "core.%s.%d.1.%ld", name, uid, time);
	return faccessat(dir_fd, core, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static uint64_t allocated(int dir_fd, const char *name)
{
	struct stat st;

	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return (uint64_t)st.st_blocks * 512;
}

/* What a stored core and its metadata take, as the scan counts it. */
static uint64_t entry_bytes(int dir_fd, const char *name, int uid, long time)
{
	char core[128], meta[160];

	snprintf(core, sizeof(core), "core.%s.%d.1.%ld", name, uid, time);
	snprintf(meta, sizeof(meta), "%s.json", core);
	return allocated(dir_fd, core) + allocated(dir_fd, meta);
}

static void empty_store(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/* '%s'/.kcoredump.*", dir, dir);
	if (system(cmd) != 0)
		abort();
}

struct fixture {
	struct kcore_ch_opts o;
	struct kcore_ch_result res;
	struct ch ch;
};

/* A handler of uid 1000 holding a slot of the store in dir_fd. */
static void enter(struct fixture *f, int dir_fd)
{
	const char *why = NULL;

	memset(f, 0, sizeof(*f));
	f->o.dir_fd = dir_fd;
	f->o.dir = "store";
	f->o.crash.uid = 1000;
	f->o.crash.pid = 9;
	f->o.crash.time = 999;
	f->o.log = count_looks;
	f->ch.o = &f->o;
	f->ch.res = &f->res;
	f->ch.subdir_fd = dir_fd;
	f->ch.cut = UINT64_MAX;
	f->ch.store.lock_fd = -1;
	f->ch.store.slot_fd = -1;
	if (!ch_vacuum_enter(&f->ch, &why))
		abort();
}

static void leave(struct fixture *f)
{
	ch_vacuum_leave(&f->ch);
}

/* Store a core of len bytes as the handler does: written into an
 * unnamed file within the allowance, then published under the limits. */
static bool store_core(struct fixture *f, const char *name, size_t len)
{
	struct kcore_output *out = NULL;
	struct ch_vacuum_publish vp;
	enum kcore_ch_reason why;
	struct kcore_error *err;
	uint64_t allow;
	char *buf = malloc(len);
	struct stat st;

	if (!buf)
		abort();
	memset(buf, 'n', len);
	err = kcore_output_openat(f->o.dir_fd, name, false, &out);
	if (err)
		abort();
	f->ch.out = out;
	allow = ch_vacuum_allowance(&f->ch, len, &why);
	if (kcore_write_all(NULL, out->fd, out->tmp, buf, (size_t)allow))
		abort();
	f->ch.stored = allow;
	free(buf);
	if (fstat(out->fd, &st) == 0)
		f->ch.stored = (uint64_t)st.st_blocks * 512;
	ch_vacuum_publish_begin(&f->ch, f->ch.stored, &vp);
	err = kcore_output_commit(out, allow);
	ch_vacuum_publish_end(&f->ch, &vp, !err, f->ch.stored);
	kcore_output_destroy(out);
	f->ch.out = NULL;
	f->ch.stored = 0;
	kcore_error_destroy(err);
	return !err;
}

static void totals_file(int dir_fd)
{
	struct ch_totals t = { 0 }, u;
	int fd = openat(dir_fd, ".totals", O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	ok(fd >= 0, "totals: a lock file");
	ok(!ch_totals_load(fd, &u), "totals: an empty lock file holds none");
	ch_totals_free(&u);
	ok(ch_totals_uid(&t, 1000, true) != NULL, "totals: uid 1000 added");
	ch_totals_add(&t, 1000, 1, 5000, false);
	ch_totals_add(&t, 1001, 1, 7000, false);
	ch_totals_add(&t, -1, 0, 300, false);
	ch_totals_add(&t, 1001, 1, 9000, true); /* more than it had */
	t.ndirs = 1;
	t.dirs = calloc(1, sizeof(*t.dirs));
	t.dirs[0].uid = -1;
	t.looked = (uint64_t)time(NULL);
	ch_totals_store(fd, dir_fd, &t);
	ok(ch_totals_load(fd, &u), "totals: read back");
	is_int(u.bytes, 3300, "totals: bytes");
	is_int(u.cores, 1, "totals: cores");
	is_int(u.gen, 1, "totals: the generation moved on");
	is_int(u.nuids, 2, "totals: two uids");
	ok(ch_totals_uid(&u, 1000, false) &&
		   ch_totals_uid(&u, 1000, false)->bytes == 5000,
	   "totals: uid 1000's bytes");
	ok(ch_totals_uid(&u, 1001, false) &&
		   ch_totals_uid(&u, 1001, false)->bytes == 0 &&
		   ch_totals_uid(&u, 1001, false)->cores == 0,
	   "totals: a removal of more than a uid had stops at 0");
	ok(ch_totals_current(dir_fd, &u), "totals: current");
	put_file(dir_fd, "core.other", 10, 'o');
	ok(!ch_totals_current(dir_fd, &u),
	   "totals: a file made since makes them stale");
	ch_totals_free(&u);
	/* A torn write: the checksum refuses it. */
	if (pwrite(fd, "\xff", 1, 9) != 1)
		abort();
	ok(!ch_totals_load(fd, &u), "totals: a changed byte: none");
	ch_totals_free(&u);
	ch_totals_free(&t);
	close(fd);
	unlinkat(dir_fd, ".totals", 0);
	unlinkat(dir_fd, "core.other", 0);
}

int main(void)
{
	char dir[] = "/tmp/t-vacuum.XXXXXX", out[] = "/tmp/t-vacuum-out.XXXXXX";
	struct fixture f;
	enum kcore_ch_reason why;
	uint64_t b, allow;
	int dir_fd, out_fd;
	struct kcore_error *err;

	if (!mkdtemp(dir) || !mkdtemp(out))
		return 99;
	err = kcore_coredir_open(dir, false, &dir_fd);
	ok(!err, "a fresh store");
	out_fd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (err || out_fd < 0)
		return 99;

	totals_file(dir_fd);

	/* --max-size: whole pages of what is left for the core. */
	enter(&f, dir_fd);
	f.o.max_size = 3 * CH_PAGE + 100;
	allow = ch_vacuum_allowance(&f.ch, 10 * CH_PAGE, &why);
	is_int(allow, 3 * CH_PAGE, "max-size: three whole pages");
	is_int(why, KCORE_CH_MAX_SIZE, "max-size: the reason");
	allow = ch_vacuum_allowance(&f.ch, 3 * CH_PAGE, &why);
	is_int(why, KCORE_CH_COMPLETE, "max-size: what fits is complete");
	leave(&f);

	/* --max-use: the oldest core of the uid with the most cores goes
	 * first, as many as the new bytes need. */
	put_core(dir_fd, "a", 1000, 100);
	put_core(dir_fd, "b", 1000, 200);
	put_core(dir_fd, "c", 1000, 300);
	put_core(dir_fd, "d", 1001, 50);
	b = entry_bytes(dir_fd, "a", 1000, 100);
	enter(&f, dir_fd);
	/* Room for two entries and the reservation (the data rounded to
	 * pages and the metadata's room), not for three. */
	f.o.max_use = 2 * b + CORE_BYTES + 4096 + b / 2;
	looks = 0;
	allow = ch_vacuum_allowance(&f.ch, CORE_BYTES, &why);
	is_int(allow, CORE_BYTES, "max-use: the data fits once room is made");
	is_int(why, KCORE_CH_COMPLETE, "max-use: complete");
	is_int(f.res.removed, 2, "max-use: two older cores removed");
	ok(!has(dir_fd, "a", 1000, 100) && !has(dir_fd, "b", 1000, 200),
	   "max-use: uid 1000's two oldest went (it had the most)");
	ok(has(dir_fd, "c", 1000, 300) && has(dir_fd, "d", 1001, 50),
	   "max-use: the newest of uid 1000 and uid 1001's (older) stay");
	ok(looks >= 1, "max-use: the store was looked at");
	/* Within the reservation: no lock, no look, nothing removed. */
	looks = 0;
	f.ch.stored = CORE_BYTES / 2;
	allow = ch_vacuum_allowance(&f.ch, CORE_BYTES / 2, &why);
	is_int(allow, CORE_BYTES / 2, "reserved: allowed");
	is_int(looks, 0, "reserved: nothing looked at");
	f.ch.stored = 0;
	leave(&f);

	/* The totals it left are current: the next handler does not look
	 * at the whole store when the limits are not reached. */
	enter(&f, dir_fd);
	f.o.max_use = 1u << 30;
	looks = 0;
	allow = ch_vacuum_allowance(&f.ch, CORE_BYTES, &why);
	is_int(allow, CORE_BYTES, "current totals: allowed");
	is_int(looks, 0, "current totals: no look at the whole store");
	leave(&f);

	/* --max-use smaller than the new core alone: every older core goes,
	 * the new one is cut to what is left and still published. */
	enter(&f, dir_fd);
	f.o.max_use = CORE_BYTES;
	f.res.removed = 0;
	ok(store_core(&f, "core.new.1000.9.999", 4 * CORE_BYTES),
	   "max-use below one core: published");
	ok(!has(dir_fd, "c", 1000, 300) && !has(dir_fd, "d", 1001, 50),
	   "max-use below one core: the older cores went");
	ok(faccessat(dir_fd, "core.new.1000.9.999", F_OK, 0) == 0,
	   "max-use below one core: the core just stored stays");
	ok(allocated(dir_fd, "core.new.1000.9.999") <= CORE_BYTES,
	   "max-use below one core: cut to the limit");
	leave(&f);
	empty_store(dir);

	/* --max-cores: publishing the third core removes the oldest. */
	put_core(dir_fd, "a", 1000, 100);
	put_core(dir_fd, "b", 1001, 200);
	enter(&f, dir_fd);
	f.o.max_cores = 2;
	ok(store_core(&f, "core.new.1000.9.999", CORE_BYTES),
	   "max-cores: published");
	ok(!has(dir_fd, "a", 1000, 100) && has(dir_fd, "b", 1001, 200),
	   "max-cores: the oldest went, the other stays");
	ok(faccessat(dir_fd, "core.new.1000.9.999", F_OK, 0) == 0,
	   "max-cores: the core just stored stays");
	leave(&f);
	empty_store(dir);

	/* --max-cores-per-user: only the crashing uid's oldest go. */
	put_core(dir_fd, "a", 1001, 10);
	put_core(dir_fd, "b", 1000, 100);
	put_core(dir_fd, "c", 1000, 200);
	enter(&f, dir_fd);
	f.o.max_cores_per_user = 2;
	ok(store_core(&f, "core.new.1000.9.999", CORE_BYTES),
	   "max-cores-per-user: published");
	ok(has(dir_fd, "a", 1001, 10), "max-cores-per-user: uid 1001's stays");
	ok(!has(dir_fd, "b", 1000, 100) && has(dir_fd, "c", 1000, 200),
	   "max-cores-per-user: uid 1000's oldest went");
	leave(&f);
	empty_store(dir);

	/* Only regular files the scan saw: a symlink, a FIFO and a
	 * directory with core names (the symlink with our metadata, the
	 * oldest) are left alone, and so is the symlink's target. */
	put_file(out_fd, "victim", CORE_BYTES, 'v');
	{
		char target[128];

		snprintf(target, sizeof(target), "%s/victim", out);
		if (symlinkat(target, dir_fd, "core.sym.1000.1.1") < 0 ||
		    mkfifoat(dir_fd, "core.fifo.1000.1.2", 0600) < 0 ||
		    mkdirat(dir_fd, "core.dir.1000.1.3", 0700) < 0)
			abort();
	}
	put_meta(dir_fd, "sym", 1000, 1);
	put_core(dir_fd, "old", 1000, 5);
	enter(&f, dir_fd);
	f.o.max_cores = 1;
	f.o.max_use = 1;
	f.res.removed = 0;
	ok(store_core(&f, "core.new.1000.9.999", CORE_BYTES),
	   "non-regular: published");
	{
		char c = 0;
		int fd = openat(out_fd, "victim", O_RDONLY | O_CLOEXEC);

		ok(fd >= 0 && pread(fd, &c, 1, CORE_BYTES - 1) == 1 && c == 'v',
		   "non-regular: the symlink's target is untouched");
		if (fd >= 0)
			close(fd);
	}
	ok(has(dir_fd, "sym", 1000, 1), "non-regular: the symlink stays");
	ok(has(dir_fd, "fifo", 1000, 2), "non-regular: the FIFO stays");
	ok(has(dir_fd, "dir", 1000, 3), "non-regular: the directory stays");
	ok(!has(dir_fd, "old", 1000, 5), "non-regular: the regular core went");
	ok(faccessat(dir_fd, "core.new.1000.9.999", F_OK, 0) == 0,
	   "non-regular: the core just stored stays");
	leave(&f);

	/* --keep-free no file system can honour: nothing to write, every
	 * older core removed trying. */
	empty_store(dir);
	put_core(dir_fd, "a", 1000, 100);
	enter(&f, dir_fd);
	f.o.keep_free = UINT64_MAX / 4;
	allow = ch_vacuum_allowance(&f.ch, CORE_BYTES, &why);
	is_int(allow, 0, "keep-free: nothing fits");
	is_int(why, KCORE_CH_KEEP_FREE, "keep-free: the reason");
	ok(!has(dir_fd, "a", 1000, 100), "keep-free: the older core went");
	/* Refused once: refused again without another look. */
	looks = 0;
	allow = ch_vacuum_allowance(&f.ch, CH_PAGE, &why);
	ok(allow == 0 && why == KCORE_CH_KEEP_FREE && looks == 0,
	   "keep-free: refused again at once");
	leave(&f);

	empty_store(dir);
	close(dir_fd);
	rmdir(dir);
	unlinkat(out_fd, "victim", 0);
	close(out_fd);
	rmdir(out);
	return tap_done();
}
