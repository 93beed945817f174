// SPDX-License-Identifier: MIT
/*
 * The live-process source on a forked child with known mappings: which
 * mappings the coredump filter dumps (VM_DONTDUMP, shared anonymous,
 * --all-mappings), exactly which pages pagemap reports as data (through
 * PAGEMAP_SCAN and through pagemap reads), memory read back (PROT_NONE
 * pages through /proc/PID/mem), the notes' order and --stop.
 */
#include <elf.h>
#include <stdbool.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kcoredump/kcore.h"
#include "pattern.h"
#include "tap.h"

#define PAGE	  4096ull
#define SPARSE	  (1ull << 30)
#define SMALL	  (64ull << 10)
#define SEED	  7
#define LAST_PAGE (SPARSE / PAGE - 1)

struct layout {
	uint64_t sparse, dontdump, shared, prot_none;
};

/* Pages of the sparse area the child writes: runs [0,1) [5,7)
 * [1000,1001) [LAST_PAGE, LAST_PAGE + 1). */
static const uint64_t touched[] = { 0, 5, 6, 1000, LAST_PAGE };

static int park[2];

static void *parked(void *arg)
{
	char c;

	(void)arg;
	while (read(park[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void *map(uint64_t size, int flags)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);

	if (p == MAP_FAILED)
		_exit(1);
	return p;
}

static void child(int report)
{
	struct layout l;
	unsigned char *sparse, *dd, *sh, *pn;
	pthread_t t;
	char c;

	sparse = map(SPARSE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
	/* One page per touch: no transparent huge page fills the rest. */
	madvise(sparse, SPARSE, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < sizeof(touched) / sizeof(touched[0]); i++)
		kc_pattern_fill(
			sparse + touched[i] * PAGE,
			(uint64_t)(uintptr_t)(sparse + touched[i] * PAGE), PAGE,
			SEED);
	dd = map(SMALL, MAP_PRIVATE | MAP_ANONYMOUS);
	memset(dd, 0x5a, SMALL);
	madvise(dd, SMALL, MADV_DONTDUMP);
	sh = map(SMALL, MAP_SHARED | MAP_ANONYMOUS);
	memset(sh, 0xa5, SMALL);
	pn = map(SMALL, MAP_PRIVATE | MAP_ANONYMOUS);
	kc_pattern_fill(pn, (uint64_t)(uintptr_t)pn, SMALL, SEED);
	mprotect(pn, SMALL, PROT_NONE);
	if (pthread_create(&t, NULL, parked, NULL) != 0)
		_exit(1);
	l = (struct layout){ (uintptr_t)sparse, (uintptr_t)dd, (uintptr_t)sh,
			     (uintptr_t)pn };
	if (write(report, &l, sizeof(l)) != sizeof(l))
		_exit(1);
	while (read(park[0], &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static const struct kcore_segment *segment_at(struct kcore_source *src,
					      uint64_t vaddr)
{
	for (size_t i = 0; i < kcore_source_nsegments(src); i++) {
		const struct kcore_segment *s = kcore_source_segment(src, i);

		if (s->type == PT_LOAD && s->vaddr == vaddr)
			return s;
	}
	return NULL;
}

/* The data runs of a segment, in pages from its start. */
static size_t data_runs(struct kcore_source *src, const struct kcore_segment *s,
			uint64_t (*runs)[2], size_t max)
{
	uint64_t pos = s->offset, end = s->offset + s->filesz, d, e;
	size_t n = 0;

	while (pos < end && n < max) {
		struct kcore_error *err =
			kcore_source_next_data(src, pos, end, &d, &e);

		if (err) {
			kcore_error_destroy(err);
			break;
		}
		if (d >= end)
			break;
		runs[n][0] = (d - s->offset) / PAGE;
		runs[n][1] = (e - s->offset) / PAGE;
		n++;
		pos = e;
	}
	return n;
}

static void check_runs(struct kcore_source *src, uint64_t sparse,
		       const char *how)
{
	static const uint64_t want[][2] = {
		{ 0, 1 }, { 5, 7 }, { 1000, 1001 }, { LAST_PAGE, LAST_PAGE + 1 }
	};
	const struct kcore_segment *s = segment_at(src, sparse);
	uint64_t runs[16][2];
	size_t n;

	if (!ok(s && s->filesz == SPARSE, "%s: the sparse area is dumped whole",
		how))
		return;
	n = data_runs(src, s, runs, 16);
	is_int(n, 4, "data runs of the sparse area");
	for (size_t i = 0; i < n && i < 4; i++) {
		ok(runs[i][0] == want[i][0] && runs[i][1] == want[i][1],
		   "%s: run %zu is pages [%llu, %llu)", how, i,
		   (unsigned long long)want[i][0],
		   (unsigned long long)want[i][1]);
		if (runs[i][0] != want[i][0] || runs[i][1] != want[i][1])
			printf("#   got [%llu, %llu)\n",
			       (unsigned long long)runs[i][0],
			       (unsigned long long)runs[i][1]);
	}
}

/* ---- the coredump filter, on a synthetic smaps ---- */

struct filter_case {
	const char *line; /* smaps header after the address range */
	unsigned anon_kb;
	const char *vmflags;
	const char *reason;
	bool dumped;	  /* under the default filter 0x33 */
	bool dumped_all;  /* under filter 0x1ff */
	const char *read; /* how pages are found, when dumped */
};

static const struct filter_case filter_cases[] = {
	{ "rw-p 00000000 00:00 0", 4, "rd wr mr mw me ac", "anon-private", true,
	  true, "pagemap" },
	{ "rw-p 00000000 00:00 0", 0, "rd wr mr mw me ac", "untouched", false,
	  false, NULL },
	{ "rw-p 00000000 00:00 0", 4, "rd wr mr mw me ac dd", "dontdump", false,
	  false, NULL },
	{ "rw-s 00000000 00:05 9 /dev/mem", 0, "rd wr sh mr mw me ms io pf",
	  "io", false, false, NULL },
	{ "rw-p 00000000 00:10 77 /anon_hugepage (deleted)", 0,
	  "rd wr mr mw me de ht", "hugetlb-private", true, true, "pagemap" },
	{ "rw-s 00000000 00:10 78 /anon_hugepage (deleted)", 0,
	  "rd wr sh mr mw me ms de ht", "hugetlb-shared", false, true, "all" },
	{ "rw-s 00000000 00:01 79 /dev/zero (deleted)", 0,
	  "rd wr sh mr mw me ms", "anon-shared", true, true, "all" },
	{ "rw-s 00000000 08:01 80 @F", 0, "rd wr sh mr mw me ms",
	  "mapped-shared", false, true, "all" },
	{ "rw-p 00001000 08:01 81 @F", 4, "rd wr mr mw me ac", "anon-private",
	  true, true, "all" },
	{ "r--p 00000000 08:01 82 /bin/sh", 0, "rd mr mw me", "elf-header",
	  true, true, "all" },
	{ "r--p 00002000 08:01 82 /bin/sh", 0, "rd mr mw me", "mapped-private",
	  false, true, "all" },
	/* MAP_SHARED of a read-only file: VM_MAYSHARE without VM_SHARED,
	 * which the kernel's filter treats as private. */
	{ "r--s 00000000 08:01 83 @F", 0, "rd mr me ms", "mapped-private",
	  false, true, "all" },
	{ "r--p 00000000 00:00 0 [vvar]", 0, "rd mr pf io de dd", "special",
	  true, true, "none" },
	{ "r-xp 00000000 00:00 0 [vdso]", 0, "rd ex mr mw me de", "special",
	  true, true, "all" },
	{ "--xp 00000000 00:00 0 [vsyscall]", 0, "ex", "special", true, true,
	  "none" },
};

#define NCASES	  (sizeof(filter_cases) / sizeof(filter_cases[0]))
#define FAKE_BASE 0x100000000000ull

/* A proc root where pid's entries are the real ones but smaps lists the
 * cases above. */
static bool fake_procfs(char *root, size_t rootlen, pid_t pid)
{
	static const char *const real[] = { "stat",    "status", "comm",
					    "cmdline", "auxv",	 "pagemap",
					    "mem",     "task" };
	char dir[600], src[600], dst[700], data[600];
	FILE *f;

	snprintf(root, rootlen, "/tmp/t-process.XXXXXX");
	if (!mkdtemp(root))
		return false;
	snprintf(dir, sizeof(dir), "%s/%d", root, (int)pid);
	if (mkdir(dir, 0700) != 0)
		return false;
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		snprintf(src, sizeof(src), "/proc/%d/%s", (int)pid, real[i]);
		snprintf(dst, sizeof(dst), "%s/%s", dir, real[i]);
		if (symlink(src, dst) != 0)
			return false;
	}
	snprintf(data, sizeof(data), "%s/data", root);
	f = fopen(data, "w");
	if (!f)
		return false;
	fputs("not an ELF file\n", f);
	fclose(f);
	chmod(data, 0600);
	snprintf(dst, sizeof(dst), "%s/coredump_filter", dir);
	f = fopen(dst, "w");
	if (!f)
		return false;
	fprintf(f, "00000033\n");
	fclose(f);
	snprintf(dst, sizeof(dst), "%s/smaps", dir);
	f = fopen(dst, "w");
	if (!f)
		return false;
	for (size_t i = 0; i < NCASES; i++) {
		const struct filter_case *c = &filter_cases[i];
		uint64_t start = FAKE_BASE + i * 0x100000;

		const char *at = strstr(c->line, "@F");

		/* @F: a file without execute bits (0600, ours). */
		fprintf(f, "%012llx-%012llx %.*s%s%s\n",
			(unsigned long long)start,
			(unsigned long long)(start + 0x10000),
			at ? (int)(at - c->line) : (int)strlen(c->line),
			c->line, at ? data : "", at ? at + 2 : "");
		fprintf(f,
			"Size:                 64 kB\nAnonymous:      %u kB\n"
			"Swap:                  0 kB\nVmFlags: %s\n",
			c->anon_kb, c->vmflags);
	}
	fclose(f);
	return true;
}

static void remove_fake(const char *root, pid_t pid)
{
	static const char *const names[] = {
		"stat",	   "status", "comm", "cmdline",		"auxv",
		"pagemap", "mem",    "task", "coredump_filter", "smaps"
	};
	char path[700];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%d/%s", root, (int)pid,
			 names[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%d", root, (int)pid);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/data", root);
	unlink(path);
	rmdir(root);
}

static void check_filter_table(pid_t pid)
{
	char root[256];

	if (!ok(fake_procfs(root, sizeof(root), pid), "synthetic smaps"))
		return;
	for (int pass = 0; pass < 2; pass++) {
		struct kcore_process_opts opts = { .procfs = root };
		const struct kcore_process_info *pi;
		struct kcore_source *src;
		struct kcore_error *err;

		if (pass) {
			opts.has_filter = true;
			opts.filter = 0x1ff;
		}
		err = kcore_source_open_process(pid, &opts, &src);
		if (!ok(!err, "open with the synthetic smaps (filter %s)",
			pass ? "0x1ff" : "0x33")) {
			kcore_error_destroy(err);
			continue;
		}
		pi = kcore_source_process_info(src);
		is_int(pi->nmappings, NCASES, "every synthetic mapping listed");
		for (size_t i = 0; i < NCASES && i < pi->nmappings; i++) {
			const struct filter_case *c = &filter_cases[i];
			const struct kcore_process_mapping *m =
				&pi->mappings[i];
			bool want = pass ? c->dumped_all : c->dumped;

			ok((m->dump_size != 0) == want &&
				   (pass ||
				    strcmp(m->reason, c->reason) == 0) &&
				   (!want ||
				    strcmp(kcore_process_read_name(m->read),
					   c->read) == 0),
			   "filter %s: '%s' %s (%s%s%s)",
			   pass ? "0x1ff" : "0x33", c->line,
			   want ? "dumped" : "left out", c->reason,
			   want ? ", read " : "", want ? c->read : "");
			if (!pass && strcmp(m->reason, "elf-header") == 0)
				is_int(m->dump_size, PAGE,
				       "the ELF header mapping: one page");
		}
		kcore_source_destroy(src);
	}
	remove_fake(root, pid);
}

static void *short_lived(void *arg)
{
	(void)arg;
	usleep(200);
	return NULL;
}

/* Threads come and go all the time: the capture must still stop every
 * thread it finds, tolerate the ones that exit, and let go of all. */
static void churn(void)
{
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	for (;;) {
		pthread_t t;

		for (int i = 0; i < 8; i++)
			pthread_create(&t, &a, short_lived, NULL);
		usleep(100);
	}
}

static void check_churn(void)
{
	pid_t pid = fork();
	int good = 0;

	if (pid == 0)
		churn();
	usleep(100000);
	for (int i = 0; i < 20; i++) {
		struct kcore_source *src;
		struct kcore_error *err =
			kcore_source_open_process(pid, NULL, &src);

		if (err) {
			char *msg = kcore_error_describe(err);

			printf("#   run %d: %s\n", i, msg);
			free(msg);
			kcore_error_destroy(err);
			continue;
		}
		good += kcore_source_info(src)->pid == pid &&
			kcore_source_process_info(src)->nthreads >= 1;
		kcore_source_destroy(src);
	}
	is_int(good, 20, "20 captures of a process whose threads come and go");
	usleep(20000);
	{
		char path[64], buf[512], *s;
		FILE *f;
		size_t n = 0;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = '\0';
		s = strrchr(buf, ')');
		ok(s && s[1] && s[2] != 't' && s[2] != 'T',
		   "it runs on afterwards");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *s;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	s = strrchr(buf, ')');
	return s && s[1] ? s[2] : '?';
}

int main(void)
{
	struct kcore_process_opts opts = { 0 };
	const struct kcore_process_info *pi;
	struct kcore_source *src = NULL;
	struct kcore_error *err;
	struct layout l;
	int rep[2];
	pid_t pid;

	if (pipe(rep) != 0 || pipe(park) != 0)
		return 1;
	pid = fork();
	if (pid == 0)
		child(rep[1]);
	if (read(rep[0], &l, sizeof(l)) != sizeof(l)) {
		kill(pid, SIGKILL);
		return 1;
	}
	usleep(50000); /* the second thread reaches its read() */

	err = kcore_source_open_process(pid, NULL, &src);
	if (err && err->code == KCORE_ERR_ACCESS) {
		kill(pid, SIGKILL);
		tap_skip_all("ptrace is not allowed here");
	}
	if (!ok(!err, "open the child as a source")) {
		char *msg = kcore_error_describe(err);

		printf("#   %s\n", msg);
		free(msg);
		kill(pid, SIGKILL);
		return tap_done();
	}
	pi = kcore_source_process_info(src);
	is_int(pi->nthreads, 2, "two threads captured");
	ok(pi->stop_ns > 0 && !pi->stopped, "stopped briefly, then let go");
	is_int(kcore_source_info(src)->pid, pid,
	       "the first NT_PRSTATUS is the "
	       "leader");
	is_int(kcore_source_info(src)->kind, KCORE_SOURCE_PROCESS_CORE,
	       "a process core");
	{
		static const uint32_t order[] = { NT_PRSTATUS, NT_PRPSINFO,
						  NT_AUXV, NT_FILE,
						  NT_PRFPREG };
		bool same = kcore_source_nnotes(src) > 5;

		for (size_t i = 0; same && i < 5; i++)
			same = kcore_source_note(src, i)->type == order[i];
		ok(same, "notes in the kernel's order: PRSTATUS, PRPSINFO, "
			 "AUXV, FILE, FPREGSET");
	}
	check_runs(src, l.sparse, "PAGEMAP_SCAN");
	{
		unsigned char buf[PAGE], want[PAGE];

		kc_pattern_fill(want, l.sparse + 1000 * PAGE, PAGE, SEED);
		err = kcore_source_read_vaddr(src, l.sparse + 1000 * PAGE, buf,
					      PAGE);
		ok(!err && memcmp(buf, want, PAGE) == 0,
		   "a touched page reads back");
		kcore_error_destroy(err);
	}
	ok(!segment_at(src, l.dontdump), "MADV_DONTDUMP memory is left out");
	ok(segment_at(src, l.shared) != NULL, "shared anonymous memory is "
					      "dumped");
	if (ok(segment_at(src, l.prot_none) != NULL,
	       "written PROT_NONE memory is dumped")) {
		static unsigned char buf[SMALL], want[SMALL];

		kc_pattern_fill(want, l.prot_none, SMALL, SEED);
		err = kcore_source_read_vaddr(src, l.prot_none, buf, SMALL);
		ok(!err && memcmp(buf, want, SMALL) == 0,
		   "PROT_NONE memory reads back through /proc/PID/mem");
		kcore_error_destroy(err);
	}
	kcore_source_destroy(src);

	opts.pagemap_read = true;
	err = kcore_source_open_process(pid, &opts, &src);
	if (ok(!err, "open with pagemap reads")) {
		check_runs(src, l.sparse, "pagemap");
		is_str(kcore_source_process_info(src)->pagemap_method,
		       "pagemap", "pagemap method reported");
		kcore_source_destroy(src);
	}
	kcore_error_destroy(err);

	opts = (struct kcore_process_opts){ .all_mappings = true };
	err = kcore_source_open_process(pid, &opts, &src);
	if (ok(!err, "open with all mappings")) {
		ok(segment_at(src, l.dontdump) != NULL,
		   "all mappings: MADV_DONTDUMP memory is dumped");
		kcore_source_destroy(src);
	}
	kcore_error_destroy(err);

	opts = (struct kcore_process_opts){ .has_filter = true,
					    .filter = 0x31 };
	err = kcore_source_open_process(pid, &opts, &src);
	if (ok(!err, "open with filter 0x31")) {
		ok(!segment_at(src, l.shared),
		   "filter without bit 1: shared anonymous memory left out");
		ok(segment_at(src, l.sparse) != NULL,
		   "filter 0x31: private anonymous memory dumped");
		kcore_source_destroy(src);
	}
	kcore_error_destroy(err);

	opts = (struct kcore_process_opts){ .keep_stopped = true };
	err = kcore_source_open_process(pid, &opts, &src);
	if (ok(!err, "open keeping it stopped")) {
		is_int(proc_state(pid), 't', "kept stopped (traced)");
		ok(kcore_source_process_info(src)->stopped, "reported stopped");
		kcore_process_resume(src);
		ok(proc_state(pid) != 't', "runs again after resume");
		kcore_source_destroy(src);
	}
	kcore_error_destroy(err);

	check_filter_table(pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	check_churn();
	err = kcore_source_open_process(pid, NULL, &src);
	ok(err && err->code == KCORE_ERR_NOT_FOUND, "a reaped pid: not found");
	kcore_error_destroy(err);
	return tap_done();
}
