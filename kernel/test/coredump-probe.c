// SPDX-License-Identifier: MIT
/*
 * coredump-probe SOCKET GIB: what a coredump socket server that acks
 * COREDUMP_USERSPACE | COREDUMP_WAIT (the kernel writes nothing, the task
 * stays until the server closes) can read of the dying process itself:
 * the alternative to COREDUMP_HOLES that posting 4's cover letter
 * discusses.  Forks a process with a GIB GiB MAP_NORESERVE mapping (16
 * pages touched, 'A'..'P') and three spinning threads that aborts; serves
 * its connection (core_pattern must be "@@SOCKET": kernel/coredump-probe.sh
 * sets it under the shared lock) and reports on stdout: the threads'
 * state, /proc/PID/task/TID/syscall and wchan, auxv, maps, the dumping
 * thread's kernel stack, PAGEMAP_SCAN over the mapping and the touched
 * pages read through /proc/PID/mem (timed), a plain pagemap read (timed),
 * and what ptrace gets of a thread (PTRACE_SEIZE, PTRACE_INTERRUPT,
 * PTRACE_GETREGSET).  Root.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/elf.h>

#include "coredump-proto.h"
#include <sys/stat.h>
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages,
		category_inverted, category_mask, category_anyof_mask,
		return_mask;
};
#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
	volatile unsigned long x = (unsigned long)arg;
	for (;;)
		x++;
	return NULL;
}

static void child(unsigned long long size, int fd)
{
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pthread_t t;
	int i;

	for (i = 0; i < 16; i++)
		memset(p + (size / 16) * i, 'A' + i, 4096);
	for (i = 0; i < 3; i++)
		pthread_create(&t, NULL, spin,
			       (void *)(0x1111111111111111UL * (i + 1)));
	write(fd, &p, sizeof(p));
	close(fd);
	usleep(100000);
	abort();
}

static ssize_t readfile(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

static void try_ptrace(int tid)
{
	long r;
	int ws;
	pid_t w;
	r = ptrace(PTRACE_SEIZE, tid, 0, 0);
	printf(", PTRACE_SEIZE %s", r ? strerror(errno) : "ok");
	if (!r) {
		r = ptrace(PTRACE_INTERRUPT, tid, 0, 0);
		printf(", PTRACE_INTERRUPT %s", r ? strerror(errno) : "ok");
		w = waitpid(tid, &ws, __WALL | WNOHANG);
		usleep(200000);
		if (!w)
			w = waitpid(tid, &ws, __WALL | WNOHANG);
		printf(", waitpid %d", w);
		struct user_regs_struct regs;
		struct iovec iov = { &regs, sizeof(regs) };
		r = ptrace(PTRACE_GETREGSET, tid, NT_PRSTATUS, &iov);
		printf(", GETREGSET %s", r ? strerror(errno) : "ok");
		if (!r)
			printf(" (rip %llx)", regs.rip);
		ptrace(PTRACE_DETACH, tid, 0, 0);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	unsigned long long size;
	int srv, conn, pfd[2], status;
	struct cd_req req;
	struct cd_ack ack = { 16, 0, CD_USERSPACE | CD_WAIT };
	uint32_t mark;
	struct ucred uc;
	socklen_t len = sizeof(uc);
	char path[128], buf[65536], *addr_map;
	double t0, t;
	pid_t pid, c;
	ssize_t n;

	if (argc != 3 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "usage: coredump-probe SOCKET GIB\n");
		return 2;
	}
	size = strtoull(argv[2], NULL, 0) << 30;
	strcpy(addr.sun_path, argv[1]);
	unlink(argv[1]);
	srv = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(srv, (void *)&addr, sizeof(addr)) || listen(srv, 4)) {
		perror("bind");
		return 1;
	}
	chmod(argv[1], 0666);
	prctl(PR_SET_DUMPABLE, 0);
	pipe(pfd);
	c = fork();
	if (c == 0) {
		close(pfd[0]);
		if (fork() == 0) {
			prctl(PR_SET_DUMPABLE, 1);
			child(size, pfd[1]);
		}
		_exit(0);
	}
	waitpid(c, &status, 0);
	close(pfd[1]);
	read(pfd[0], &addr_map, sizeof(addr_map));
	t0 = now();
	conn = accept(srv, NULL, NULL);
	getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &uc, &len);
	pid = uc.pid;
	recv(conn, &req, sizeof(req), MSG_WAITALL);
	printf("request: size %u size_ack %u mask %#llx\n", req.size,
	       req.size_ack, (unsigned long long)req.mask);
	send(conn, &ack, sizeof(ack), MSG_NOSIGNAL);
	recv(conn, &mark, 4, MSG_WAITALL);
	printf("ack USERSPACE|WAIT: mark %u (pid %d, child %d)\n", mark, pid,
	       c);

	/* the threads and their state */
	char path_task[64];
	snprintf(path_task, sizeof(path_task), "/proc/%d/task", pid);
	DIR *d = opendir(path_task);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		int tid = atoi(de->d_name);
		char p2[160];
		snprintf(p2, sizeof(p2), "/proc/%d/task/%d/stat", pid, tid);
		n = readfile(p2, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		char *st = strrchr(buf, ')');
		printf("thread %d: state %.1s", tid, st ? st + 2 : "?");
		snprintf(p2, sizeof(p2), "/proc/%d/task/%d/syscall", pid, tid);
		n = readfile(p2, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		buf[strcspn(buf, "\n")] = 0;
		printf(", syscall: %s", n >= 0 ? buf : strerror(-n));
		snprintf(p2, sizeof(p2), "/proc/%d/task/%d/wchan", pid, tid);
		n = readfile(p2, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		printf(", wchan %s", n >= 0 ? buf : strerror(-n));
		printf("\n");
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	n = readfile(path, buf, sizeof(buf));
	printf("auxv: %zd bytes%s%s\n", n, n < 0 ? " " : "",
	       n < 0 ? strerror(-n) : "");
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	n = readfile(path, buf, sizeof(buf) - 1);
	printf("maps: %zd bytes\n", n);
	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	n = readfile(path, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	printf("stack of the dumping thread:\n%s", n >= 0 ? buf : strerror(-n));

	/* the memory: PAGEMAP_SCAN for present/swapped pages, then mem */
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	int pm = open(path, O_RDONLY);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	int mem = open(path, O_RDONLY);
	printf("pagemap fd %d, mem fd %d\n", pm, mem);
	t = now();
	struct page_region regions[4096];
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = (unsigned long)addr_map,
		.end = (unsigned long)addr_map + size,
		.vec = (unsigned long)regions,
		.vec_len = 4096,
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
	};
	long nr = ioctl(pm, PAGEMAP_SCAN, &arg);
	double scan = now() - t;
	unsigned long long pages = 0, ok = 0;
	t = now();
	for (long i = 0; i < nr; i++)
		for (unsigned long a = regions[i].start; a < regions[i].end;
		     a += 4096) {
			pages++;
			if (pread(mem, buf, 4096, a) == 4096 && buf[0] >= 'A' &&
			    buf[0] < 'A' + 16)
				ok++;
		}
	double rd = now() - t;
	printf("PAGEMAP_SCAN of %llu GiB: %ld regions (%s) in %.6f s; %llu "
	       "pages read from mem (%llu with the pattern) in %.6f s\n",
	       size >> 30, nr, nr < 0 ? strerror(errno) : "ok", scan, pages, ok,
	       rd);
	/* the plain pagemap read over the whole mapping, for comparison */
	t = now();
	unsigned long long entries = 0, present = 0;
	for (unsigned long long off = 0; off < size / 4096;
	     off += sizeof(buf) / 8) {
		n = pread(pm, buf, sizeof(buf),
			  ((unsigned long)addr_map / 4096 + off) * 8);
		if (n <= 0)
			break;
		for (ssize_t k = 0; k < n / 8; k++) {
			entries++;
			if (((uint64_t *)buf)[k] & (3ULL << 62))
				present++;
		}
	}
	printf("plain pagemap read of %llu entries: %llu present, %.3f s\n",
	       entries, present, now() - t);
	/* ptrace last: first a thread that is not dumping, then the dumper */
	d = opendir(path_task);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || atoi(de->d_name) == pid)
			continue;
		printf("ptrace thread %s:", de->d_name);
		try_ptrace(atoi(de->d_name));
		break;
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	printf("dumping thread still there before its ptrace: %s\n",
	       readfile(path, buf, 10) > 0 ? "yes" : "no");
	printf("ptrace dumping thread %d:", pid);
	try_ptrace(pid);
	usleep(300000);
	printf("dumping thread still there after its ptrace: %s\n",
	       readfile(path, buf, 10) > 0 ? "yes" : "no");
	printf("server done %.3f s after accept\n", now() - t0);
	close(conn);
	return 0;
}
