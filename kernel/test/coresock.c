// SPDX-License-Identifier: MIT
/*
 * coresock SOCKET DIR [LOG]: a minimal coredump socket server for the VM
 * rig (core_pattern "@@SOCKET"), to time and check what the kernel sends
 * through the coredump socket.  It serves one connection at a time: reads
 * the kernel's request, acknowledges COREDUMP_KERNEL | COREDUMP_WAIT, plus
 * COREDUMP_HOLES (bit 4, kernel/patches-7.3/4-coredump-socket-holes) when
 * the kernel offers it, and writes the core to DIR/core.PID (PID from
 * SO_PEERCRED) as the kernel would write a core file: with holes records,
 * data at its offsets and holes seeked over; without, every byte read
 * and zero pages seeked over (so a sparse core fits the guest's tmpfs).
 * A line per core goes to LOG: "pid P mask M ack A received R core C".
 * Environment: CORESOCK_NO_HOLES=1 never asks for holes records.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "coredump-proto.h"

#define PAGE 4096

static char buf[1 << 20];

static void die(const char *what)
{
	fprintf(stderr, "coresock: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* exactly len bytes; 0 at EOF before the first, -1 else */
static ssize_t read_all(int fd, void *p, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done || n < 0 ? -1 : 0;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int all_zero(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i += sizeof(uint64_t))
		if (*(const uint64_t *)(p + i))
			return 0;
	return 1;
}

/* len bytes at off: zero pages become holes */
static int put(int fd, const char *p, size_t len, uint64_t off)
{
	for (size_t i = 0; i < len; i += PAGE) {
		size_t k = len - i < PAGE ? len - i : PAGE;

		if (k == PAGE && all_zero(p + i, k))
			continue;
		if (pwrite(fd, p + i, k, (off_t)(off + i)) != (ssize_t)k)
			return -1;
	}
	return 0;
}

/* the core, framed in records or plain; its size, or -1 */
static int64_t receive(int conn, int fd, int holes, uint64_t *received)
{
	uint64_t off = 0;
	ssize_t n;

	if (!holes) {
		while ((n = read(conn, buf, sizeof(buf))) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || put(fd, buf, (size_t)n, off))
				return -1;
			off += (uint64_t)n;
			*received += (uint64_t)n;
		}
		return (int64_t)off;
	}
	for (;;) {
		struct cd_record rec;

		n = read_all(conn, &rec, sizeof(rec));
		if (n == 0)
			return (int64_t)off;
		if (n < 0 || rec.size < sizeof(rec) || rec.size > sizeof(buf))
			return -1;
		if (rec.size > sizeof(rec) &&
		    read_all(conn, buf, rec.size - sizeof(rec)) <= 0)
			return -1;
		*received += rec.size;
		if (rec.type == CD_REC_HOLE) {
			off += rec.len;
			continue;
		}
		if (rec.type != CD_REC_DATA)
			return -1;
		while (rec.len) {
			size_t k =
				rec.len < sizeof(buf) ? rec.len : sizeof(buf);

			if (read_all(conn, buf, k) != (ssize_t)k ||
			    pwrite(fd, buf, k, (off_t)off) != (ssize_t)k)
				return -1;
			off += k;
			rec.len -= k;
			*received += k;
		}
	}
}

static void serve(int conn, const char *dir, FILE *log, int no_holes)
{
	struct cd_req req;
	struct cd_ack ack = { 16, 0, CD_KERNEL | CD_WAIT };
	struct ucred uc;
	socklen_t ul = sizeof(uc);
	uint64_t received = 0;
	char path[256];
	uint32_t mark;
	int64_t size;
	int fd;

	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &uc, &ul) ||
	    recv(conn, &req, sizeof(req), MSG_PEEK | MSG_WAITALL) !=
		    sizeof(req) ||
	    req.size < sizeof(req) || req.size > sizeof(buf) ||
	    read_all(conn, buf, req.size) != (ssize_t)req.size) {
		fprintf(stderr, "coresock: no coredump request\n");
		return;
	}
	if ((req.mask & CD_HOLES) && !no_holes)
		ack.mask |= CD_HOLES;
	if (send(conn, &ack, sizeof(ack), MSG_NOSIGNAL) != sizeof(ack) ||
	    read_all(conn, &mark, sizeof(mark)) != sizeof(mark) || mark) {
		fprintf(stderr,
			"coresock: pid %d: the kernel refused the ack\n",
			(int)uc.pid);
		return;
	}
	snprintf(path, sizeof(path), "%s/core.%d", dir, (int)uc.pid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die(path);
	size = receive(conn, fd, !!(ack.mask & CD_HOLES), &received);
	if (size < 0 || ftruncate(fd, size) || close(fd)) {
		fprintf(stderr, "coresock: pid %d: bad or short core stream\n",
			(int)uc.pid);
		return;
	}
	if (log) {
		fprintf(log,
			"pid %d mask %#llx ack %#llx received %llu core %lld\n",
			(int)uc.pid, (unsigned long long)req.mask,
			(unsigned long long)ack.mask,
			(unsigned long long)received, (long long)size);
		fflush(log);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *nh = getenv("CORESOCK_NO_HOLES");
	FILE *log = NULL;
	int srv;

	if (argc < 3 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "usage: coresock SOCKET DIR [LOG]\n");
		return 2;
	}
	/* a crash of ours must not come back to us */
	prctl(PR_SET_DUMPABLE, 0);
	strcpy(addr.sun_path, argv[1]);
	unlink(argv[1]);
	srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv < 0 || bind(srv, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(srv, 16))
		die(argv[1]);
	if (argc > 3 && !(log = fopen(argv[3], "a")))
		die(argv[3]);
	for (;;) {
		int conn = accept4(srv, NULL, NULL, SOCK_CLOEXEC);

		if (conn < 0) {
			if (errno == EINTR)
				continue;
			die("accept");
		}
		serve(conn, argv[2], log, nh && *nh == '1');
		close(conn);
	}
}
