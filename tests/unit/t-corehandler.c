// SPDX-License-Identifier: MIT
/*
 * The core_pattern handler's library on streams built here: zero pages
 * at page granularity (one non-zero byte keeps its page), a stream whose
 * length is not a multiple of the page size, an unaligned prefix, the
 * exact byte counts, the cancel flag, and a stream written in tiny
 * pieces.  A writer thread feeds a pipe, as the kernel does.
 *
 * Then the page tables of the crashing process, from a procfs built here
 * for this process (status, smaps, a pagemap file): whole 1 MiB blocks
 * they leave empty are consumed unread (a byte planted there is not
 * stored, which shows it was never read), a page that appears while the
 * stream is written is read after all, and a process sharing the memory,
 * a process not dumping core or mappings that do not match the core turn
 * the page tables off.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfcore.h"
#include "corehandler-internal.h"
#include "kcoredump/corehandler.h"
#include "tap.h"

#define PG 4096u

struct feed {
	int fd;
	const unsigned char *buf;
	size_t len, piece;
	/* Before writing byte at_off, call at(at_arg) (0: never); after
	 * the first piece, sleep pause_us. */
	size_t at_off;
	void (*at)(void *);
	void *at_arg;
	unsigned pause_us;
};

static void *writer(void *arg)
{
	struct feed *f = arg;

	for (size_t off = 0; off < f->len;) {
		size_t n = f->len - off < f->piece ? f->len - off : f->piece;
		ssize_t w;

		if (f->at && off <= f->at_off && f->at_off < off + n) {
			if (off < f->at_off) {
				n = f->at_off - off;
			} else {
				f->at(f->at_arg);
				f->at = NULL;
			}
		}
		w = write(f->fd, f->buf + off, n);
		if (w <= 0)
			break;
		if (!off && f->pause_us)
			usleep(f->pause_us);
		off += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

/* ehdr + 3 phdrs + a note; PT_LOADs at unaligned 0x1234 (3 pages + 100
 * bytes) and page-aligned after it. */
static unsigned char *make_core(size_t *ret_len)
{
	size_t len = 0x1234 + 3 * PG + 100;
	unsigned char *img = calloc(1, 0x10000 + len);
	Elf64_Phdr *ph = kc_elfcore_header(img, 3);
	size_t l2 = 0x6000;

	ph[0].p_offset = 0x200;
	ph[0].p_filesz = 0;
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_offset = 0x1234,
			      .p_vaddr = 0x400000,
			      .p_filesz = 3 * PG + 100,
			      .p_memsz = 3 * PG + 100,
			      .p_flags = PF_R };
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_offset = l2,
			      .p_vaddr = 0x500000,
			      .p_filesz = 4 * PG + 7,
			      .p_memsz = 4 * PG + 7,
			      .p_flags = PF_R | PF_W };
	/* Segment 1: bytes in its first (partial) page and its tail. */
	img[0x1240] = 1;
	img[0x1234 + 3 * PG + 99] = 2;
	/* Segment 2: one byte at the end of its second page, the last 7. */
	img[l2 + 2 * PG - 1] = 3;
	img[l2 + 4 * PG + 6] = 4;
	*ret_len = l2 + 4 * PG + 7;
	return img;
}

static struct kcore_error *run_feed(struct feed *f, int dir_fd,
				    volatile sig_atomic_t *cancel,
				    const char *procfs, int64_t pid,
				    bool no_pagemap,
				    struct kcore_ch_result *res)
{
	struct kcore_ch_opts o = {
		.dir_fd = dir_fd,
		.dir = "t",
		.timeout_ms = 20000,
		.close_input = true,
		.cancel = cancel,
		.crash = { .pid = pid,
			   .uid = 7,
			   .gid = 8,
			   .signal = 11,
			   .time = 1000,
			   .comm = "t" },
		.procfs = procfs,
		.no_pagemap = no_pagemap,
		.build_id_timeout_ms = 10000,
		/* Several handlers in this one process. */
		.keep_privileges = true,
	};
	struct kcore_error *err;
	pthread_t th;
	int p[2];

	if (pipe(p) < 0)
		return kcore_error_create(KCORE_ERR_OS, 0, NULL, "pipe");
	f->fd = p[1];
	o.in_fd = p[0];
	pthread_create(&th, NULL, writer, f);
	err = kcore_core_handle(&o, res);
	pthread_join(th, NULL);
	return err;
}

static struct kcore_error *run(const unsigned char *img, size_t len,
			       size_t piece, int dir_fd,
			       volatile sig_atomic_t *cancel,
			       struct kcore_ch_result *res)
{
	struct feed f = { .buf = img, .len = len, .piece = piece };

	return run_feed(&f, dir_fd, cancel, NULL, 42, false, res);
}

static unsigned char *slurp(int dir_fd, const char *name, size_t *len)
{
	int fd = openat(dir_fd, name, O_RDONLY);
	struct stat st;
	unsigned char *b;

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	b = malloc((size_t)st.st_size + 1);
	*len = (size_t)read(fd, b, (size_t)st.st_size);
	close(fd);
	return b;
}

/* ---- the page tables ---- */

#define MIB	 (1u << 20)
#define PM_VADDR 0x7f0000000000ull
#define PM_LEN	 (8 * MIB)
#define PM_OFF	 0x1000u /* the PT_LOAD's stream offset */

struct fakeproc {
	char root[64], dir[128];
	int pid;
	int pagemap_fd;
};

static void put(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Mark page (index from PM_VADDR) present in the fake pagemap. */
static void present(struct fakeproc *fp, uint64_t page)
{
	uint64_t e = 1ull << 63 | 0x1234;

	pwrite(fp->pagemap_fd, &e, 8, (off_t)((PM_VADDR >> 12) + page) * 8);
}

/* Copy /proc/PID/NAME of a real process into the fake procfs dir. */
static void copy_proc(const char *dir, int pid, const char *name)
{
	char path[128], text[8192];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = '\0';
	put(dir, name, text);
}

static void fakeproc_init(struct fakeproc *fp, int dumping, uint64_t vaddr)
{
	char text[512];

	snprintf(fp->root, sizeof(fp->root), "/tmp/t-corehandler-proc.XXXXXX");
	if (!mkdtemp(fp->root))
		abort();
	fp->pid = (int)getpid();
	snprintf(fp->dir, sizeof(fp->dir), "%s/%d", fp->root, fp->pid);
	mkdir(fp->dir, 0700);
	snprintf(text, sizeof(text),
		 "Name:\tt\nTgid:\t%d\nPid:\t%d\nCoreDumping:\t%d\n", fp->pid,
		 fp->pid, dumping);
	put(fp->dir, "status", text);
	/* The memory layout the handler compares other processes with. */
	copy_proc(fp->dir, fp->pid, "stat");
	snprintf(text, sizeof(text),
		 "%llx-%llx rw-p 00000000 00:00 0 \n"
		 "Anonymous:          8 kB\n"
		 "VmFlags: rd wr mr mw me ac \n",
		 (unsigned long long)vaddr, (unsigned long long)vaddr + PM_LEN);
	put(fp->dir, "smaps", text);
	snprintf(text, sizeof(text), "%s/pagemap", fp->dir);
	fp->pagemap_fd = open(text, O_RDWR | O_CREAT, 0600);
	/* All of the mapping's entries read back (as zeros: no page). */
	ftruncate(fp->pagemap_fd, (off_t)(((PM_VADDR + 2 * PM_LEN) >> 12) * 8));
	/* Pages 0 and 5 MiB + 3 pages hold data. */
	present(fp, 0);
	present(fp, (5 * MIB >> 12) + 3);
}

static void fakeproc_deinit(struct fakeproc *fp)
{
	char cmd[160];

	close(fp->pagemap_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fp->root);
	if (system(cmd) != 0)
		fprintf(stderr, "# cannot remove %s\n", fp->root);
}

/* ehdr, a note and one 8 MiB PT_LOAD at stream offset PM_OFF: data in
 * the two present pages, and a planted byte at 2 MiB (a page the page
 * tables say is empty), and at 4 MiB + 5 pages. */
static unsigned char *pm_core(size_t *ret_len)
{
	size_t len = PM_OFF + PM_LEN;
	unsigned char *img = calloc(1, len);
	Elf64_Phdr *ph = kc_elfcore_header(img, 2);

	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_offset = PM_OFF,
			      .p_vaddr = PM_VADDR,
			      .p_filesz = PM_LEN,
			      .p_memsz = PM_LEN,
			      .p_flags = PF_R | PF_W };
	img[PM_OFF + 10] = 1;
	img[PM_OFF + 5 * MIB + 3 * PG + 1] = 2;
	img[PM_OFF + 2 * MIB] = 3;
	img[PM_OFF + 4 * MIB + 5 * PG] = 4;
	*ret_len = len;
	return img;
}

static void appear(void *arg)
{
	/* The page with the byte at 4 MiB + 5 pages gets mapped. */
	present(arg, (4 * MIB >> 12) + 5);
}

static int child_sleeps(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

static void pagemap_tests(int dir_fd)
{
	struct kcore_ch_result res;
	struct kcore_error *err;
	struct fakeproc fp;
	unsigned char *img, *got = NULL, *want;
	size_t len, glen = 0;
	struct feed f;

	img = pm_core(&len);
	want = malloc(len);
	fakeproc_init(&fp, 1, PM_VADDR);

	/* The page tables say blocks 1-4 and 6-7 of the stream are zeros:
	 * they are not read, so the planted byte at 2 MiB is not stored;
	 * the byte at 4 MiB + 5 pages, whose page appears (in the page
	 * tables, then in the stream) after the first look, is. */
	f = (struct feed){ .buf = img,
			   .len = len,
			   .piece = 64 << 10,
			   .pause_us = 100000,
			   .at_off = PM_OFF + 4 * MIB,
			   .at = appear,
			   .at_arg = &fp };
	err = run_feed(&f, dir_fd, NULL, fp.root, fp.pid, false, &res);
	if (!ok(!err, "page tables: stored")) {
		char *d = kcore_error_describe(err);

		printf("#   %s\n", d ? d : "?");
		free(d);
		kcore_error_destroy(err);
	}
	if (!err) {
		got = slurp(dir_fd, res.core_name, &glen);
		memcpy(want, img, len);
		want[PM_OFF + 2 * MIB] = 0;
		ok(got && glen == len && memcmp(got, want, len) == 0,
		   "page tables: the stream, but for the planted byte in a "
		   "block they leave empty");
		ok(!res.pagemap_why, "page tables used (%s)",
		   res.pagemap_why ? res.pagemap_why : "");
		/* Stream blocks 1-3 and 6-7: block 0 holds headers and
		 * data, block 4 the page that appeared (seen at the second
		 * look; what came before it in the block was consumed, the
		 * rest read), block 5 data. */
		/* What is in the pipe when the handler looks is checked
		 * whole: on a loaded machine the feeder gets further ahead
		 * and a window next to a block with data is read rather
		 * than moved out (got 5 MiB - 192 KiB once in 200 runs).
		 * Reading more is correct; at least 4 MiB stay unread. */
		ok(res.unread_bytes <= 5 * MIB && res.unread_bytes >= 4 * MIB,
		   "unread: %llu bytes, at most stream blocks 1, 2, 3, 6 "
		   "and 7 (5 MiB), at least 4 MiB",
		   (unsigned long long)res.unread_bytes);
		is_int(res.stream_bytes, len, "stream_bytes");
		ok(res.pagemap_scans >= 2, "page tables looked at %llu times",
		   (unsigned long long)res.pagemap_scans);
		is_int(res.zero_bytes + res.data_bytes, len - PM_OFF,
		       "zero + data bytes: the segment");
		free(got);
		unlinkat(dir_fd, res.core_name, 0);
		unlinkat(dir_fd, res.meta_name, 0);
		kcore_ch_result_deinit(&res);
	}
	fakeproc_deinit(&fp);

	/*
	 * Other processes that do not share the memory do not turn the page
	 * tables off: PID 1 (for which kcmp(2) is refused even to root on
	 * some machines, and which procfs shows without its layout), a
	 * kernel thread, and a fork child (the same layout, other memory).
	 */
	{
		pid_t kid = fork();
		char path[256];

		if (kid == 0) {
			for (;;)
				pause();
		}
		fakeproc_init(&fp, 1, PM_VADDR);
		for (int k = 0; k < 3; k++) {
			int other = k == 0 ? 1 : k == 1 ? 2 : (int)kid;

			snprintf(path, sizeof(path), "%s/%d", fp.root, other);
			mkdir(path, 0700);
			copy_proc(path, other, "stat");
			copy_proc(path, other, "status");
		}
		f = (struct feed){ .buf = img, .len = len, .piece = 64 << 10 };
		err = run_feed(&f, dir_fd, NULL, fp.root, fp.pid, false, &res);
		ok(!err, "unrelated processes: stored");
		if (!err) {
			ok(!res.pagemap_why,
			   "unrelated processes (pid 1, pid 2, a fork child): "
			   "page tables used (%s)",
			   res.pagemap_why ? res.pagemap_why : "");
			ok(res.unread_bytes >= 4 * MIB,
			   "unrelated processes: %llu bytes unread",
			   (unsigned long long)res.unread_bytes);
			unlinkat(dir_fd, res.core_name, 0);
			unlinkat(dir_fd, res.meta_name, 0);
			kcore_ch_result_deinit(&res);
		}
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
		fakeproc_deinit(&fp);
	}

	/* Cases where the page tables are not used: every byte is read. */
	for (int c = 0; c < 4; c++) {
		static const char *const what[] = {
			"not dumping core",
			"shares the memory",
			"not a mapping",
			"--no-pagemap",
		};
		char stack_[16384], path[256];
		pid_t child = -1;

		fakeproc_init(&fp, c != 0, c == 2 ? PM_VADDR + MIB : PM_VADDR);
		if (c == 1) {
			child = clone(child_sleeps, stack_ + sizeof(stack_),
				      CLONE_VM | SIGCHLD, NULL);
			snprintf(path, sizeof(path), "%s/%d", fp.root,
				 (int)child);
			mkdir(path, 0700);
			copy_proc(path, (int)child, "stat");
		}
		f = (struct feed){ .buf = img, .len = len, .piece = 1 << 20 };
		err = run_feed(&f, dir_fd, NULL, fp.root, fp.pid, c == 3, &res);
		ok(!err, "%s: stored", what[c]);
		if (!err) {
			got = slurp(dir_fd, res.core_name, &glen);
			ok(got && glen == len && memcmp(got, img, len) == 0,
			   "%s: identical to the stream", what[c]);
			ok(res.pagemap_why && strstr(res.pagemap_why, what[c]),
			   "%s: why not: '%s'", what[c],
			   res.pagemap_why ? res.pagemap_why : "(null)");
			is_int(res.unread_bytes, 0, "nothing unread");
			free(got);
			unlinkat(dir_fd, res.core_name, 0);
			unlinkat(dir_fd, res.meta_name, 0);
			kcore_ch_result_deinit(&res);
		}
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
		fakeproc_deinit(&fp);
	}
	free(want);
	free(img);
}

/* The units of a cgroup path, as systemd names them. */
static void cgroup_case(const char *path, const char *unit,
			const char *user_unit, const char *slice,
			const char *session, long long owner)
{
	struct ch_facts f = { .cgroup = (char *)path };

	ch_cgroup_units(&f);
	ok((!unit ? !f.unit : f.unit && strcmp(f.unit, unit) == 0) &&
		   (!user_unit ? !f.user_unit
			       : f.user_unit &&
					 strcmp(f.user_unit, user_unit) == 0) &&
		   (!slice ? !f.slice
			   : f.slice && strcmp(f.slice, slice) == 0) &&
		   (!session ? !f.session
			     : f.session && strcmp(f.session, session) == 0) &&
		   f.owner_uid == owner,
	   "cgroup %s: unit %s, user unit %s, slice %s, session %s, owner "
	   "%lld (got %s, %s, %s, %s, %lld)",
	   path, unit ? unit : "-", user_unit ? user_unit : "-",
	   slice ? slice : "-", session ? session : "-", owner,
	   f.unit ? f.unit : "-", f.user_unit ? f.user_unit : "-",
	   f.slice ? f.slice : "-", f.session ? f.session : "-",
	   (long long)f.owner_uid);
	free(f.unit);
	free(f.user_unit);
	free(f.slice);
	free(f.session);
}

static void cgroup_units(void)
{
	cgroup_case("/system.slice/foo.service", "foo.service", NULL,
		    "system.slice", NULL, -1);
	cgroup_case("/user.slice/user-1000.slice/session-3.scope",
		    "session-3.scope", NULL, "user-1000.slice", "3", 1000);
	cgroup_case("/user.slice/user-1000.slice/user@1000.service/app.slice/"
		    "app-gnome-foo-42.scope",
		    "user@1000.service", "app-gnome-foo-42.scope",
		    "user-1000.slice", NULL, 1000);
	cgroup_case("/system.slice/getty@tty1.service", "getty@tty1.service",
		    NULL, "system.slice", NULL, -1);
	cgroup_case("/", NULL, NULL, "-.slice", NULL, -1);
	cgroup_case("/init.scope", "init.scope", NULL, "-.slice", NULL, -1);
	cgroup_case("/machine.slice/x/../y", NULL, NULL, "machine.slice", NULL,
		    -1);
	cgroup_case("/user.slice/user-10x.slice/session-.scope",
		    "session-.scope", NULL, "user-10x.slice", NULL, -1);
}

/* Package notes' JSON: a flat object of strings, nothing else. */
static void package_notes(void)
{
	static const char good[] = "{\"type\":\"deb\", \"name\" : \"a\\\"b\","
				   "\"version\":\"1\\u00e9\\ud800\\u0000\","
				   "\"other\":\"x\"}\0\0";
	static const char *const bad[] = {
		"{\"name\":1}",	       "{\"name\":\"a\"} x",
		"{\"name\":\"a\",}",   "[\"name\"]",
		"{\"name\":\"a\\q\"}", "{\"name\":\"a\tb\"}",
		"{\"name\":\"a",       "{\"name\":{\"x\":\"y\"}}",
		"{\"other\":\"a\"}",   "",
	};
	struct ch_package p;

	ok(ch_package_parse(good, sizeof(good) - 1, &p) && p.type &&
		   strcmp(p.type, "deb") == 0 && p.name &&
		   strcmp(p.name, "a\"b") == 0 && p.version &&
		   strcmp(p.version, "1\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd") ==
			   0 &&
		   !p.arch,
	   "package note: decoded (escapes, a surrogate and NUL as U+FFFD)");
	free(p.type);
	free(p.name);
	free(p.version);
	free(p.arch);
	free(p.os_cpe);
	free(p.debuginfod);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(!ch_package_parse(bad[i], strlen(bad[i]), &p),
		   "package note %s: refused", bad[i]);
	{
		char nul[] = "{\"name\":\"a\0b\"}";

		ok(!ch_package_parse(nul, sizeof(nul) - 1, &p),
		   "package note with a NUL inside: refused");
	}
}

int main(void)
{
	char dir[] = "/tmp/t-corehandler.XXXXXX";
	struct kcore_ch_result res;
	struct kcore_error *err;
	unsigned char *img, *got;
	size_t len, glen = 0;
	int dir_fd;
	volatile sig_atomic_t cancel = 1;

	signal(SIGPIPE, SIG_IGN);
	cgroup_units();
	package_notes();
	if (!mkdtemp(dir))
		return 99;
	err = kcore_coredir_open(dir, false, &dir_fd);
	ok(!err, "coredir_open on a fresh 0700 directory");
	img = make_core(&len);

	for (size_t piece = 1 << 20; piece >= 61; piece /= 128) {
		err = run(img, len, piece, dir_fd, NULL, &res);
		ok(!err, "stream in %zu-byte writes: stored", piece);
		if (err)
			continue;
		got = slurp(dir_fd, res.core_name, &glen);
		ok(got && glen == len && memcmp(got, img, len) == 0,
		   "stream in %zu-byte writes: identical (%zu of %zu bytes)",
		   piece, glen, len);
		is_int(res.stream_bytes, len, "stream_bytes");
		is_int(res.reason, KCORE_CH_COMPLETE, "complete");
		/* Kept (stream pages): [0x1234, 0x2000) with the byte at
		 * 0x1240, [0x4000, 0x5000) with segment 1's last byte,
		 * [0x7000, 0x8000) with 0x7fff, [0xa000, 0xa007).  Zero:
		 * 0x2000-0x4000, 0x5000-0x7000, 0x8000-0xa000. */
		is_int(res.data_bytes, (0x2000 - 0x1234) + PG + PG + 7,
		       "data bytes: the non-zero pages after the headers");
		is_int(res.zero_bytes, 3 * 0x2000, "zero bytes: the rest");
		free(got);
		unlinkat(dir_fd, res.core_name, 0);
		unlinkat(dir_fd, res.meta_name, 0);
		kcore_ch_result_deinit(&res);
	}

	pagemap_tests(dir_fd);

	err = run(img, len, 4096, dir_fd, &cancel, &res);
	ok(err != NULL, "cancelled before the headers: an error");
	kcore_error_destroy(err);

	/* Not ELF, with the offset in the message. */
	memcpy(img, "NOPE", 4);
	err = run(img, len, 4096, dir_fd, NULL, &res);
	ok(err && err->code == KCORE_ERR_FORMAT && err->has_offset &&
		   err->offset == 0,
	   "not ELF: KCORE_ERR_FORMAT at offset 0");
	kcore_error_destroy(err);
	free(img);
	close(dir_fd);
	rmdir(dir);
	return tap_done();
}
