// SPDX-License-Identifier: MIT
/*
 * zero-stream KIND MIB WRITE: what a stream of zeros costs its writer and
 * its reader per GiB, through a pipe or an AF_UNIX stream socket, as the
 * kernel's core dump writes one into core_pattern's pipe or socket
 * (bench/core-handler.sh --host-crash: the costs a kernel change to the
 * dump's holes would cut, measured without a crash).
 *   KIND   pipe (a 1 MiB pipe) or socket (a socketpair with the default
 *          send buffer, net.core.wmem_default)
 *   MIB    MiB to send
 *   WRITE  bytes per write(2) from a buffer of zeros (4096: what the
 *          kernel's dump_skip() does, a page at a time), or "refs":
 *          64 KiB a call as 16 references to one zero page (vmsplice(2)
 *          into a pipe, splice(2) on: the socket gets MSG_SPLICE_PAGES)
 * A thread writes; the main thread reads as the handler does: poll(2),
 * then splice(2) to /dev/null (from a socket through a pipe of its own).
 * Prints: writer_cpu_s_per_gib reader_cpu_s_per_gib wall_s_per_gib
 * writer_blocks reader_calls.  Every failure exits 1 with a message.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define REFS 16

static int wfd;
static long long total;
static size_t wsize; /* 0: refs */
static double w_cpu;
static long w_blocks;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double thread_cpu(long *ret_blocks)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		die("getrusage");
	if (ret_blocks)
		*ret_blocks = ru.ru_nvcsw;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_refs(void)
{
	static char zero[PAGE] __attribute__((aligned(PAGE)));
	struct iovec iov[REFS];
	int p[2];

	if (pipe(p) < 0)
		die("pipe");
	for (int i = 0; i < REFS; i++) {
		iov[i].iov_base = zero;
		iov[i].iov_len = PAGE;
	}
	for (long long done = 0; done < total;) {
		ssize_t v = vmsplice(p[1], iov, REFS, 0);

		if (v <= 0)
			die("vmsplice");
		for (ssize_t o = 0; o < v;) {
			ssize_t k = splice(p[0], NULL, wfd, NULL,
					   (size_t)(v - o), 0);

			if (k <= 0)
				die("splice into the stream");
			o += k;
		}
		done += v;
	}
}

static void *writer(void *arg)
{
	(void)arg;
	if (wsize == 0) {
		write_refs();
	} else {
		char *zeros = calloc(1, wsize);

		if (!zeros)
			die("calloc");
		for (long long done = 0; done < total; done += (long long)wsize)
			if (write(wfd, zeros, wsize) != (ssize_t)wsize)
				die("write");
		free(zeros);
	}
	w_cpu = thread_cpu(&w_blocks);
	close(wfd);
	return NULL;
}

int main(int argc, char **argv)
{
	int fds[2], drain[2] = { -1, -1 }, rfd, null_fd;
	bool sock;
	long long got = 0, calls = 0;
	double t0, gib;
	pthread_t t;

	if (argc != 4 ||
	    (strcmp(argv[1], "pipe") && strcmp(argv[1], "socket"))) {
		fprintf(stderr,
			"usage: zero-stream pipe|socket MIB WRITE|refs\n");
		return 2;
	}
	sock = strcmp(argv[1], "socket") == 0;
	total = atoll(argv[2]) << 20;
	wsize = strcmp(argv[3], "refs") == 0 ? 0 : strtoul(argv[3], NULL, 0);
	if (total <= 0 ||
	    (wsize && (wsize > (64u << 20) || total % (long long)wsize)) ||
	    (!wsize && total % (REFS * PAGE))) {
		fprintf(stderr, "zero-stream: MIB must be a positive multiple "
				"of WRITE\n");
		return 2;
	}
	if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0 : pipe(fds) < 0)
		die(sock ? "socketpair" : "pipe");
	/* A pipe's ends are [read, write], a socketpair's either way. */
	rfd = sock ? fds[1] : fds[0];
	wfd = sock ? fds[0] : fds[1];
	if (!sock && fcntl(wfd, F_SETPIPE_SZ, 1 << 20) < 0)
		die("F_SETPIPE_SZ");
	null_fd = open("/dev/null", O_WRONLY);
	if (null_fd < 0)
		die("/dev/null");
	if (sock &&
	    (pipe(drain) < 0 || fcntl(drain[1], F_SETPIPE_SZ, 1 << 20) < 0))
		die("the drain pipe");
	t0 = now();
	if (pthread_create(&t, NULL, writer, NULL))
		die("pthread_create");
	for (;;) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, -1) < 0)
			die("poll");
		n = splice(rfd, NULL, sock ? drain[1] : null_fd, NULL, 1 << 20,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0)
			continue; /* EAGAIN: the writer came and went */
		if (n == 0)
			break;
		for (ssize_t o = 0; sock && o < n;) {
			ssize_t k = splice(drain[0], NULL, null_fd, NULL,
					   (size_t)(n - o), SPLICE_F_MOVE);

			if (k <= 0)
				die("splice to /dev/null");
			o += k;
		}
		got += n;
		calls++;
	}
	pthread_join(t, NULL);
	if (got != total) {
		fprintf(stderr, "zero-stream: read %lld of %lld bytes\n", got,
			total);
		return 1;
	}
	gib = (double)total / (1 << 30);
	printf("%.4f %.4f %.4f %ld %lld\n", w_cpu / gib, thread_cpu(NULL) / gib,
	       (now() - t0) / gib, w_blocks, calls);
	return 0;
}
