// SPDX-License-Identifier: MIT
/*
 * crash-shapes SHAPE...: for each SHAPE, fork a child that builds that
 * memory layout, fills it with a deterministic pattern and aborts, so that
 * the kernel writes its core; print "SHAPE dump_us N status S" with the
 * time from the child's last instruction before abort() to the parent's
 * waitpid() return (the core dump, mostly).
 *
 * Built against the kernel tree's tools/include/nolibc (kernel/test.sh):
 * no libc start-up code, no stack canary, no TLS, so with ASLR off
 * (randomize_va_space=0) and AT_RANDOM cleared the memory of the dumped
 * process is the same on every run and every kernel, and two kernels'
 * cores can be compared byte for byte (minus the notes: pids, times).
 *
 * Shapes (sizes in the table below):
 *   dense      64 MiB anonymous, every word written
 * The sparse shapes are MADV_NOHUGEPAGE (the test kernel has THP
 * "always", which would back every touched page with 2 MiB).
 *   sparse64g  64 GiB MAP_NORESERVE, one page written
 *   sparse1t   1 TiB MAP_NORESERVE, one page written
 *   strided    16 GiB MAP_NORESERVE, a page every 16 MiB and every 3 GiB
 *   thp        16 MiB anonymous, MADV_HUGEPAGE, one page per 2 MiB written
 *   file       64 MiB tmpfs file, MAP_SHARED and MAP_PRIVATE, 64 pages
 *              written (coredump_filter 0x7f: file mappings are dumped)
 *   shmem      64 MiB MAP_SHARED|MAP_ANONYMOUS, every 16th page written
 *   zeropage   64 MiB anonymous, every page read (zero page), 8 written
 *   mt         4 threads (raw clone) + 16 MiB anonymous written
 */
#ifndef NOLIBC
#error "build with -nostdlib -include tools/include/nolibc/nolibc.h"
#endif

#define KiB (1UL << 10)
#define MiB (1UL << 20)
#define GiB (1UL << 30)
#define PAGE 4096UL

#define PROT_RW (PROT_READ | PROT_WRITE)
#define MAP_ANON_PRIVATE (MAP_PRIVATE | MAP_ANONYMOUS)
#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0x4000
#endif
#define MADV_HUGEPAGE_ 14
#define MADV_NOHUGEPAGE_ 15

static int ready_fd = -1;

static void die(const char *what)
{
	write(2, "crash-shapes: ", 14);
	write(2, what, strlen(what));
	write(2, "\n", 1);
	exit(1);
}

/* 8-byte words that depend on the offset in the region and a seed */
static void fill(void *p, unsigned long len, unsigned long seed)
{
	unsigned long *w = p;
	unsigned long i;

	for (i = 0; i < len / 8; i++) {
		unsigned long x = (i * 8 + seed * 0x9e3779b97f4a7c15UL) ^ seed;

		x ^= x >> 31;
		x *= 0xbf58476d1ce4e5b9UL;
		x ^= x >> 29;
		w[i] = x | 1;	/* never a zero word */
	}
}

static void *map(unsigned long len, int flags, int fd)
{
	void *p = mmap(NULL, len, PROT_RW, flags, fd, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* sparse: 4 KiB pages even with THP "always" (2 MiB per touched page) */
static void *map_sparse(unsigned long len)
{
	void *p = map(len, MAP_ANON_PRIVATE | MAP_NORESERVE, -1);

	my_syscall3(__NR_madvise, p, len, MADV_NOHUGEPAGE_);
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

static void build(const char *shape)
{
	unsigned char *p;
	unsigned long i;

	if (!strcmp(shape, "dense")) {
		p = map(64 * MiB, MAP_ANON_PRIVATE, -1);
		fill(p, 64 * MiB, 1);
	} else if (!strcmp(shape, "sparse64g")) {
		p = map_sparse(64 * GiB);
		fill(p + 33 * GiB + 5 * PAGE, PAGE, 2);
	} else if (!strcmp(shape, "sparse1t")) {
		p = map_sparse(1024 * GiB);
		fill(p + 700 * GiB + 7 * PAGE, PAGE, 3);
	} else if (!strcmp(shape, "strided")) {
		p = map_sparse(16 * GiB);
		for (i = 0; i < 16 * GiB; i += 16 * MiB)
			fill(p + i + (i / (16 * MiB) % 512) * PAGE, PAGE, 4 + i);
		for (i = 3 * PAGE; i < 16 * GiB; i += 3 * GiB)
			fill(p + i, PAGE, 5 + i);
	} else if (!strcmp(shape, "thp")) {
		unsigned char *base = map(18 * MiB, MAP_ANON_PRIVATE, -1);

		p = (unsigned char *)(((unsigned long)base + 2 * MiB - 1) &
				      ~(2 * MiB - 1));
		my_syscall3(__NR_madvise, p, 16 * MiB, MADV_HUGEPAGE_);
		for (i = 0; i < 16 * MiB; i += 2 * MiB)
			fill(p + i + PAGE, PAGE, 6 + i);
	} else if (!strcmp(shape, "file")) {
		int fd = open("/tmp/kc-shape-file", O_RDWR | O_CREAT | O_TRUNC,
			      0600);
		unsigned char *q;

		if (fd < 0 || my_syscall2(__NR_ftruncate, fd, 64 * MiB) < 0)
			die("file");
		set_filter("0x7f");
		p = map(64 * MiB, MAP_SHARED, fd);
		for (i = 0; i < 64; i++)
			fill(p + i * MiB, PAGE, 7 + i);
		q = map(64 * MiB, MAP_PRIVATE, fd);
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
			unsigned char *stack = map(64 * KiB, MAP_ANON_PRIVATE, -1);

			if (spawn_thread(stack + 64 * KiB) < 0)
				die("clone");
		}
	} else {
		die("unknown shape");
	}
}

static unsigned long now_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec * 1000000UL + tv.tv_usec;
}

static void child(const char *shape)
{
	unsigned char *rnd = (unsigned char *)getauxval(AT_RANDOM);

	/* The 16 random bytes the kernel put on the stack: the only
	 * per-exec random content left in memory.
	 */
	if (rnd)
		memset(rnd, 0, 16);
	build(shape);
	if (write(ready_fd, "r", 1) != 1)
		die("ready");
	abort();
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		int fds[2], status = 0;
		unsigned long t0, t1;
		char c;
		pid_t pid;

		if (pipe(fds))
			die("pipe");
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(fds[0]);
			ready_fd = fds[1];
			child(argv[i]);
		}
		close(fds[1]);
		if (read(fds[0], &c, 1) != 1)
			die("child died before it was ready");
		t0 = now_us();
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid");
		t1 = now_us();
		close(fds[0]);
		printf("%s pid %d dump_us %lu status %d\n", argv[i], (int)pid,
		       t1 - t0, status);
	}
	return 0;
}
