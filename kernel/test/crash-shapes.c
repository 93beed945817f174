// SPDX-License-Identifier: MIT
/*
 * crash-shapes SHAPE[:nodump]...: for each SHAPE, fork a child that builds
 * that memory layout, fills it with a deterministic pattern and aborts, so
 * that the kernel writes its core; print
 *   "SHAPE pid P dump_us N status S"
 * with the time from the child's last instruction before abort() (its
 * own clock reading, sent through a pipe) to the parent's waitpid()
 * return (the core dump, mostly).  With ":nodump" the
 * child sets RLIMIT_CORE to 0 first: the same crash without a dump (the
 * cost of the signal, the exit and the wait alone).
 *
 * Before aborting, the child writes what its memory must hold to
 * /tmp/layout.<pid> (kernel/test/corecheck.c checks the core against it):
 *   map VADDR LEN         a range whose bytes are checked: zero except fills
 *   fill VADDR LEN SEED   shape_word() pattern (kernel/test/shapes.h)
 *   ignore VADDR LEN      bytes another process may change during the dump
 *   kernel VADDR LEN NAME a special mapping whose bytes the kernel keeps
 *                         changing: the vDSO data pages ([vvar]: the clock
 *                         the timekeeper updates every tick, the getrandom
 *                         generation); corecheck leaves them alone and
 *                         coredigest.py hashes only which of their pages
 *                         are non-zero
 *   info KEY VALUE
 *
 * Built against the kernel tree's tools/include/nolibc (kernel/test.sh):
 * no libc start-up code, no stack canary, no TLS, so with ASLR off
 * (randomize_va_space=0) and AT_RANDOM cleared the memory of the dumped
 * process is the same on every run and every kernel, and two kernels'
 * cores can be compared byte for byte (minus the notes: pids, times).
 *
 * Shapes (the sparse ones are MADV_NOHUGEPAGE: the test kernel has THP
 * "always", which would back every touched page with 2 MiB):
 *   none       nothing but the program itself (the fixed cost of a dump)
 *   dense      64 MiB anonymous, every word written
 *   sparse4g   4 GiB MAP_NORESERVE, one page written (sparse64g's cost
 *              over 16, for a stock kernel's socket dump under -icount)
 *   sparse64g  64 GiB MAP_NORESERVE, one page written
 *   sparse1t   1 TiB MAP_NORESERVE, one page written
 *   strided    16 GiB MAP_NORESERVE, a page every 16 MiB and every 3 GiB
 *   thp        16 MiB anonymous, MADV_HUGEPAGE, one page per 2 MiB written
 *   file       64 MiB tmpfs file, MAP_SHARED and MAP_PRIVATE, 64 pages
 *              written (coredump_filter 0x7f: file mappings are dumped)
 *   shmem      64 MiB MAP_SHARED|MAP_ANONYMOUS, every 16th page written
 *   zeropage   64 MiB anonymous, every page read (zero page), 8 written
 *   mt         4 threads (raw clone) + 16 MiB anonymous written
 *   swap       32 MiB written, then MADV_PAGEOUT (needs swap: the guest
 *              sets up zram); "info swapped N" counts the pages mincore()
 *              then reports not resident
 *   protnone   64 GiB PROT_NONE reservation, 2 MiB of it made writable and
 *              written, one more page written and made PROT_NONE again
 *   dontneed   1 GiB, a word written every 2 MiB (512 page tables), all of
 *              it MADV_DONTNEED (empty page tables left), 8 pages written
 *   uffd       64 MiB anonymous and 16 MiB shmem with 16 + 4 pages written,
 *              then registered with userfaultfd (missing mode): the dump
 *              must not wait for a handler
 *   clonevm    16 MiB written and 64 GiB sparse with 4 pages written, and a
 *              CLONE_VM sibling process (not a thread: it is not stopped by
 *              the dump) that maps, writes, zaps and unmaps in a 32 MiB
 *              churn range until the crashing process is gone
 *   high       64 GiB MAP_NORESERVE asked for above 2^52 (with 5-level
 *              paging it lands there), one page written
 *   kill       1 TiB MAP_NORESERVE whose first 16 GiB have page tables
 *              without pages (a word written every 2 MiB, then
 *              MADV_DONTNEED) and 32 MiB dense: the parent sends SIGKILL
 *              100 ms into the dump and prints "kill_us N": the time from
 *              the kill to the child's end
 */
#ifndef NOLIBC
#error "build with -nostdlib -include tools/include/nolibc/nolibc.h"
#endif

/*
 * nolibc's raw system call macros: my_syscallN in 6.12's tools/include,
 * __nolibc_syscallN in 7.3's.
 */
#ifdef __nolibc_syscall0
#define raw_syscall0 __nolibc_syscall0
#define raw_syscall1 __nolibc_syscall1
#define raw_syscall2 __nolibc_syscall2
#define raw_syscall3 __nolibc_syscall3
#define raw_syscall6 __nolibc_syscall6
#else
#define raw_syscall0 my_syscall0
#define raw_syscall1 my_syscall1
#define raw_syscall2 my_syscall2
#define raw_syscall3 my_syscall3
#define raw_syscall6 my_syscall6
#endif

#include <linux/userfaultfd.h>
#include "shapes.h"

#define KiB  (1UL << 10)
#define MiB  (1UL << 20)
#define GiB  (1UL << 30)
#define PAGE 4096UL

#define PROT_RW		 (PROT_READ | PROT_WRITE)
#define MAP_ANON_PRIVATE (MAP_PRIVATE | MAP_ANONYMOUS)
#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0x4000
#endif
#ifndef MAP_FIXED
#define MAP_FIXED 0x10
#endif
#define MADV_DONTNEED_	 4
#define MADV_HUGEPAGE_	 14
#define MADV_NOHUGEPAGE_ 15
#define MADV_PAGEOUT_	 21
#define RLIMIT_CORE_	 4
#define CLONE_VM_	 0x100
#define SIGCHLD_	 17
#define SIGKILL_	 9

static int ready_fd = -1;
static volatile struct timeval ready_tv;
static unsigned long vvar_start, vvar_len;
static FILE *layout;
static unsigned char *churn;
static pid_t crashing;

static void die(const char *what)
{
	write(2, "crash-shapes: ", 14);
	write(2, what, strlen(what));
	write(2, "\n", 1);
	exit(1);
}

static void put_range(const char *kind, void *p, unsigned long len)
{
	fprintf(layout, "%s %p %lu\n", kind, p, len);
}

/* 8-byte words that depend on the offset in the region and a seed */
static void fill(void *p, unsigned long len, unsigned long seed)
{
	unsigned long *w = p;
	unsigned long i;

	for (i = 0; i < len / 8; i++)
		w[i] = shape_word(i * 8, seed);
	fprintf(layout, "fill %p %lu %lu\n", p, len, seed);
}

/* a fill seen through another mapping of the same file pages */
static void alias_fill(void *p, unsigned long len, unsigned long seed)
{
	fprintf(layout, "fill %p %lu %lu\n", p, len, seed);
}

static void *map_at(void *hint, unsigned long len, int prot, int flags, int fd)
{
	void *p = mmap(hint, len, prot, flags, fd, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static void *map(unsigned long len, int flags, int fd)
{
	void *p = map_at(NULL, len, PROT_RW, flags, fd);

	put_range("map", p, len);
	return p;
}

static void madv(void *p, unsigned long len, int advice)
{
	if (raw_syscall3(__NR_madvise, p, len, advice))
		die("madvise");
}

/* sparse: 4 KiB pages even with THP "always" (2 MiB per touched page) */
static void *map_sparse(unsigned long len)
{
	void *p = map(len, MAP_ANON_PRIVATE | MAP_NORESERVE, -1);

	madv(p, len, MADV_NOHUGEPAGE_);
	return p;
}

static void set_filter(const char *hex)
{
	int fd = open("/proc/self/coredump_filter", O_WRONLY);

	if (fd < 0 || write(fd, hex, strlen(hex)) < 0)
		die("coredump_filter");
	close(fd);
}

static long spawn_thread(void *stack_top)
{
	/* CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM: the child pauses forever */
	long flags = 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000;
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	long ret;

	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n"
			 "2:\n\t"
			 "mov $34, %%eax\n\t" /* __NR_pause */
			 "syscall\n\t"
			 "jmp 2b\n"
			 "1:\n"
			 : "=a"(ret)
			 : "0"(56L), "D"(flags), "S"(stack_top), "d"(0L),
			   "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}

/*
 * The CLONE_VM sibling: a process of its own sharing the crashing one's mm.
 * Keeps changing the churn range until its parent is gone.
 */
static void __attribute__((noreturn, used)) sibling(void)
{
	unsigned long i;

	for (i = 0; raw_syscall0(__NR_getppid) == crashing; i++) {
		unsigned char *q = churn + (i % 16) * 2 * MiB;
		long r;

		r = raw_syscall6(__NR_mmap, q, 2 * MiB, PROT_RW,
				 MAP_ANON_PRIVATE | MAP_FIXED, -1, 0);
		if (r < 0)
			break;
		((volatile unsigned long *)q)[(i * 512) % (2 * MiB / 8)] = i;
		if (i % 3 == 0)
			raw_syscall3(__NR_madvise, q, 2 * MiB, MADV_DONTNEED_);
		if (i % 5 == 0)
			raw_syscall2(__NR_munmap, q + MiB, MiB);
	}
	raw_syscall1(__NR_exit, 0);
	__builtin_unreachable();
}

static long spawn_sibling(void *stack_top)
{
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	register void (*r9)(void) __asm__("r9") = sibling;
	long ret;

	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "call *%%r9\n\t"
			 "ud2\n"
			 "1:\n"
			 : "=a"(ret)
			 : "0"(56L), "D"((long)(CLONE_VM_ | SIGCHLD_)),
			   "S"(stack_top), "d"(0L), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static void uffd_register(int uffd, void *p, unsigned long len)
{
	struct uffdio_register reg = {
		.range = { .start = (unsigned long)p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
}

/* a word every 2 MiB (page tables), then the pages zapped again */
static void empty_page_tables(unsigned char *p, unsigned long len)
{
	unsigned long i;

	for (i = 0; i < len; i += 2 * MiB)
		*(volatile unsigned long *)(p + i) = i | 1;
	madv(p, len, MADV_DONTNEED_);
}

static void build(const char *shape)
{
	unsigned char *p, *q;
	unsigned long i;

	if (!strcmp(shape, "none")) {
		/* the program's own mappings only */
	} else if (!strcmp(shape, "dense")) {
		p = map(64 * MiB, MAP_ANON_PRIVATE, -1);
		fill(p, 64 * MiB, 1);
	} else if (!strcmp(shape, "sparse4g")) {
		p = map_sparse(4 * GiB);
		fill(p + 2 * GiB + 5 * PAGE, PAGE, 2);
	} else if (!strcmp(shape, "sparse64g")) {
		p = map_sparse(64 * GiB);
		fill(p + 33 * GiB + 5 * PAGE, PAGE, 2);
	} else if (!strcmp(shape, "sparse1t")) {
		p = map_sparse(1024 * GiB);
		fill(p + 700 * GiB + 7 * PAGE, PAGE, 3);
	} else if (!strcmp(shape, "strided")) {
		p = map_sparse(16 * GiB);
		for (i = 0; i < 16 * GiB; i += 16 * MiB)
			fill(p + i + (i / (16 * MiB) % 512) * PAGE, PAGE,
			     4 + i);
		for (i = 3 * PAGE; i < 16 * GiB; i += 3 * GiB)
			fill(p + i, PAGE, 5 + i);
	} else if (!strcmp(shape, "thp")) {
		unsigned char *base = map(18 * MiB, MAP_ANON_PRIVATE, -1);

		p = (unsigned char *)(((unsigned long)base + 2 * MiB - 1) &
				      ~(2 * MiB - 1));
		madv(p, 16 * MiB, MADV_HUGEPAGE_);
		for (i = 0; i < 16 * MiB; i += 2 * MiB)
			fill(p + i + PAGE, PAGE, 6 + i);
	} else if (!strcmp(shape, "file")) {
		int fd = open("/tmp/kc-shape-file", O_RDWR | O_CREAT | O_TRUNC,
			      0600);

		if (fd < 0 || raw_syscall2(__NR_ftruncate, fd, 64 * MiB) < 0)
			die("file");
		set_filter("0x7f");
		p = map(64 * MiB, MAP_SHARED, fd);
		q = map(64 * MiB, MAP_PRIVATE, fd);
		for (i = 0; i < 64; i++) {
			fill(p + i * MiB, PAGE, 7 + i);
			alias_fill(q + i * MiB, PAGE, 7 + i);
		}
		fill(q + 32 * MiB + PAGE, PAGE, 8);
		close(fd);
	} else if (!strcmp(shape, "shmem")) {
		p = map(64 * MiB, MAP_SHARED | MAP_ANONYMOUS, -1);
		for (i = 0; i < 64 * MiB; i += 16 * PAGE)
			fill(p + i, PAGE, 9 + i);
	} else if (!strcmp(shape, "zeropage")) {
		volatile unsigned char *v;
		unsigned long sum = 0;

		p = map(64 * MiB, MAP_ANON_PRIVATE, -1);
		v = p;
		for (i = 0; i < 64 * MiB; i += PAGE)
			sum += v[i];
		if (sum)
			die("zero page not zero");
		for (i = 0; i < 8; i++)
			fill(p + i * 8 * MiB + PAGE, PAGE, 10 + i);
	} else if (!strcmp(shape, "mt")) {
		p = map(16 * MiB, MAP_ANON_PRIVATE, -1);
		fill(p, 16 * MiB, 11);
		for (i = 0; i < 4; i++) {
			unsigned char *stack = map_at(NULL, 64 * KiB, PROT_RW,
						      MAP_ANON_PRIVATE, -1);

			if (spawn_thread(stack + 64 * KiB) < 0)
				die("clone");
		}
	} else if (!strcmp(shape, "swap")) {
		unsigned char vec[32 * MiB / PAGE];
		unsigned long out = 0;

		p = map(32 * MiB, MAP_ANON_PRIVATE, -1);
		madv(p, 32 * MiB, MADV_NOHUGEPAGE_);
		fill(p, 32 * MiB, 12);
		madv(p, 32 * MiB, MADV_PAGEOUT_);
		if (raw_syscall3(__NR_mincore, p, 32 * MiB, vec))
			die("mincore");
		for (i = 0; i < sizeof(vec); i++)
			out += !(vec[i] & 1);
		fprintf(layout, "info swapped %lu of %lu\n", out, sizeof(vec));
	} else if (!strcmp(shape, "protnone")) {
		p = map_at(NULL, 64 * GiB, PROT_NONE,
			   MAP_ANON_PRIVATE | MAP_NORESERVE, -1);
		put_range("map", p, 64 * GiB);
		madv(p, 64 * GiB, MADV_NOHUGEPAGE_);
		if (raw_syscall3(__NR_mprotect, p + 33 * GiB, 2 * MiB,
				 PROT_RW) ||
		    raw_syscall3(__NR_mprotect, p + 40 * GiB, PAGE, PROT_RW))
			die("mprotect");
		fill(p + 33 * GiB, 2 * MiB, 13);
		fill(p + 40 * GiB, PAGE, 14);
		if (raw_syscall3(__NR_mprotect, p + 40 * GiB, PAGE, PROT_NONE))
			die("mprotect");
	} else if (!strcmp(shape, "dontneed")) {
		p = map_sparse(1 * GiB);
		empty_page_tables(p, 1 * GiB);
		for (i = 0; i < 8; i++)
			fill(p + i * 128 * MiB + 5 * PAGE, PAGE, 15 + i);
	} else if (!strcmp(shape, "uffd")) {
		struct uffdio_api api = { .api = UFFD_API };
		int uffd =
			raw_syscall1(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

		if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
			die("userfaultfd");
		p = map(64 * MiB, MAP_ANON_PRIVATE, -1);
		madv(p, 64 * MiB, MADV_NOHUGEPAGE_);
		q = map(16 * MiB, MAP_SHARED | MAP_ANONYMOUS, -1);
		for (i = 0; i < 16; i++)
			fill(p + i * 4 * MiB + PAGE, PAGE, 20 + i);
		for (i = 0; i < 4; i++)
			fill(q + i * 4 * MiB + 2 * PAGE, PAGE, 40 + i);
		uffd_register(uffd, p, 64 * MiB);
		uffd_register(uffd, q, 16 * MiB);
	} else if (!strcmp(shape, "clonevm")) {
		unsigned char *stack;

		p = map(16 * MiB, MAP_ANON_PRIVATE, -1);
		fill(p, 16 * MiB, 50);
		q = map_sparse(64 * GiB);
		for (i = 0; i < 4; i++)
			fill(q + i * 16 * GiB + 3 * GiB + i * PAGE, PAGE,
			     51 + i);
		churn = map_at(NULL, 32 * MiB, PROT_RW, MAP_ANON_PRIVATE, -1);
		put_range("ignore", churn, 32 * MiB);
		stack = map_at(NULL, 64 * KiB, PROT_RW, MAP_ANON_PRIVATE, -1);
		crashing = getpid();
		if (spawn_sibling(stack + 64 * KiB) < 0)
			die("clone");
	} else if (!strcmp(shape, "high")) {
		p = map_at((void *)(1UL << 52), 64 * GiB, PROT_RW,
			   MAP_ANON_PRIVATE | MAP_NORESERVE, -1);
		put_range("map", p, 64 * GiB);
		madv(p, 64 * GiB, MADV_NOHUGEPAGE_);
		fill(p + 33 * GiB + 9 * PAGE, PAGE, 60);
		fprintf(layout, "info above_2^47 %d\n",
			(unsigned long)p >= (1UL << 47));
	} else if (!strcmp(shape, "kill")) {
		/* dense first: higher address, dumped after the sparse part */
		p = map(32 * MiB, MAP_ANON_PRIVATE, -1);
		fill(p, 32 * MiB, 70);
		q = map_sparse(1024 * GiB);
		empty_page_tables(q, 16 * GiB);
		fill(q + 700 * GiB, PAGE, 71);
	} else {
		die("unknown shape");
	}
}

static unsigned long now_us(void)
{
	struct timeval tv = { 0 };

	if (gettimeofday(&tv, NULL))
		die("gettimeofday");
	return tv.tv_sec * 1000000UL + tv.tv_usec;
}

static unsigned long parse_hex(const char **p)
{
	unsigned long v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v * 16 + (unsigned long)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (unsigned long)(c - 'a' + 10);
		else
			return v;
	}
}

/*
 * Where the [vvar] mapping is (the child inherits it): since Linux 6.15 its
 * data pages are normal pages (VM_MIXEDMAP, the generic vDSO data store)
 * and the kernel dumps them with their current contents; before, they
 * were VM_PFNMAP and the dump had zeros there.  The buffer is cleared
 * again: the maps text (inode numbers) may differ between kernels.
 */
static void find_vvar(void)
{
	static char buf[16384];
	const char *line, *end, *p;
	long n, len = 0;
	int fd = open("/proc/self/maps", O_RDONLY);

	if (fd < 0)
		die("/proc/self/maps");
	while (len < (long)sizeof(buf) - 1 &&
	       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	for (line = buf; *line; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (end - line < 6 || strncmp(end - 6, "[vvar]", 6))
			continue;
		p = line;
		vvar_start = parse_hex(&p);
		if (*p++ != '-')
			die("/proc/self/maps: bad [vvar] line");
		vvar_len = parse_hex(&p) - vvar_start;
	}
	for (n = 0; n < (long)sizeof(buf); n++)
		((volatile char *)buf)[n] = 0;
}

static void child(const char *shape, int nodump)
{
	unsigned char *rnd = (unsigned char *)getauxval(AT_RANDOM);
	char path[64] = "/tmp/layout.";
	unsigned int i;
	int fd;

	/* The 16 random bytes the kernel put on the stack: the only
	 * per-exec random content left in memory.
	 */
	if (rnd)
		memset(rnd, 0, 16);
	if (nodump) {
		struct rlimit none = { 0, 0 };

		if (setrlimit(RLIMIT_CORE_, &none))
			die("setrlimit");
	}
	utoa_r(getpid(), path + strlen(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("layout");
	layout = fdopen(fd, "w");
	if (vvar_len)
		fprintf(layout, "kernel %p %lu [vvar]\n", (void *)vvar_start,
			vvar_len);
	build(shape);
	close(fd);
	/* the pid in the path would differ between two kernels' cores */
	for (i = 0; i < sizeof(path); i++)
		((volatile char *)path)[i] = 0;
	/*
	 * The dump's start: this process's last clock reading, sent to the
	 * parent (its own reading after the pipe wakes it could come late: a
	 * vCPU may run this child's whole dump before the parent's, as QEMU's
	 * -icount mode runs them in turn), then wiped like the path above.
	 */
	/* the system call itself: nolibc's wrapper leaves a copy on the stack
	 */
	if (raw_syscall2(__NR_gettimeofday, (struct timeval *)&ready_tv, 0))
		die("gettimeofday");
	if (write(ready_fd, (const void *)&ready_tv, sizeof(ready_tv)) !=
	    sizeof(ready_tv))
		die("ready");
	ready_tv.tv_sec = 0;
	ready_tv.tv_usec = 0;
	abort();
}

int main(int argc, char **argv)
{
	int i;

	find_vvar();
	for (i = 1; i < argc; i++) {
		char shape[32];
		int fds[2], status = 0, nodump;
		unsigned long t0, t1, tk = 0;
		struct timeval tv;
		char *colon;
		pid_t pid;

		strncpy(shape, argv[i], sizeof(shape) - 1);
		shape[sizeof(shape) - 1] = 0;
		colon = strchr(shape, ':');
		nodump = colon && !strcmp(colon, ":nodump");
		if (colon)
			*colon = 0;
		if (pipe(fds))
			die("pipe");
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(fds[0]);
			ready_fd = fds[1];
			child(shape, nodump);
		}
		close(fds[1]);
		if (read(fds[0], &tv, sizeof(tv)) != sizeof(tv))
			die("child died before it was ready");
		t0 = tv.tv_sec * 1000000UL + tv.tv_usec;
		/* a dump that never ends fails the run instead of hanging it */
		raw_syscall1(__NR_alarm, strcmp(shape, "kill") ? 1800 : 120);
		if (!strcmp(shape, "kill")) {
			usleep(100000);
			tk = now_us();
			kill(pid, SIGKILL_);
		}
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid");
		t1 = now_us();
		raw_syscall1(__NR_alarm, 0);
		close(fds[0]);
		if (tk)
			printf("%s pid %d dump_us %lu status %d kill_us %lu\n",
			       argv[i], (int)pid, t1 - t0, status, t1 - tk);
		else
			printf("%s pid %d dump_us %lu status %d\n", argv[i],
			       (int)pid, t1 - t0, status);
	}
	return 0;
}
