// SPDX-License-Identifier: MIT
/*
 * The kernel's coredump socket (core_pattern "@/path" since Linux 6.16,
 * "@@/path" since 6.17): the kernel connects to a listening AF_UNIX
 * stream socket as the crashing task, so the connection's peer is that
 * task (SO_PEERPIDFD: a pidfd of its thread-group leader, which pidfs
 * keeps describing the crash; SO_PEERCRED: its pid and effective ids).
 *
 * "@": the ELF core follows at once, as into a pipe (the socket cannot
 * seek, so dump_skip() writes zeros), and the kernel shuts its side down
 * at the end.
 *
 * "@@", the request protocol: first the kernel sends a request of
 * req.size bytes (le32 size, le32 size_ack, le64 mask of what it
 * supports: bit 0 the kernel writes the core, 1 user space does, 2 no
 * core, 3 the kernel waits until the server closes); the server answers
 * with an ack of at least 16 and at most size_ack bytes (le32 size, le32
 * 0, le64 mask: exactly one of bits 0..2, plus 3 if it likes); the
 * kernel checks it and sends a le32 mark (0 accepted; 1 ack too small,
 * 2 too big, 3 unsupported bits, 4 conflicting bits), then, with bit 0,
 * the core.  We always ask for the kernel to write the core and to wait
 * for us: the process then stays until we have closed the socket, as it
 * does for the pipe handler while the stream is read.  A kernel that
 * offers bit 4 (COREDUMP_HOLES, kcoredump's kernel patch "coredump: let
 * the coredump socket server ask for holes as records") is asked for it
 * too: it then frames the core in records and sends its holes as lengths,
 * not zeros (corehandler-stream.c reads them); any other is asked for the
 * plain stream.
 *
 * Which one it is shows in the first bytes: a core starts with "\177ELF",
 * a request with its size (16 or more, little-endian), never that.
 *
 * A connection is served only when the peer's pidfd says the kernel is
 * dumping that task's core (require_coredump()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "corehandler-internal.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define REQ_KERNEL    (1ull << 0)
#define REQ_USERSPACE (1ull << 1)
#define REQ_REJECT    (1ull << 2)
#define REQ_WAIT      (1ull << 3)
#define REQ_SIZE_VER0 16u
#define ACK_SIZE_VER0 16u
/* A request beyond this is not the kernel's (systemd draws the same
 * line). */
#define REQ_SIZE_MAX 4096u

/* include/uapi/linux/pidfd.h, up to coredump_signal (Linux 6.19). */
struct ch_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid,
		fsgid;
	int32_t exit_code;
	uint32_t coredump_mask, coredump_signal;
};
#define PIDFD_GET_INFO_ _IOWR(0xFF, 11, struct ch_pidfd_info)
#define INFO_PID	(1ull << 0)
#define INFO_CREDS	(1ull << 1)
#define INFO_CGROUPID	(1ull << 2)
#define INFO_COREDUMP	(1ull << 4)
#define CD_COREDUMPED	(1u << 0)
#define CD_SKIP		(1u << 1)
#define CD_USER		(1u << 2)
#define CD_ROOT		(1u << 3)

static const char *const via_names[] = {
	[KCORE_CH_VIA_PIPE] = "pipe",
	[KCORE_CH_VIA_SOCKET] = "socket",
	[KCORE_CH_VIA_SOCKET_REQUEST] = "socket-request",
};

const char *kcore_ch_via_name(enum kcore_ch_via v)
{
	return (unsigned)v <= KCORE_CH_VIA_SOCKET_REQUEST ? via_names[v]
							  : "unknown";
}

static struct kcore_error *proto_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static struct kcore_error *proto_error(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kcore_error_create(KCORE_ERR_FORMAT, 0, "<coredump socket>",
				  "%s", msg);
}

/*
 * Exactly len bytes, or fewer at the end of the connection (flags:
 * MSG_PEEK to leave them there); -1 on an error or at the deadline
 * (errno ETIMEDOUT).  Blocking reads under SO_RCVTIMEO: MSG_WAITALL
 * waits for all of them, with MSG_PEEK too on a stream socket.
 */
static ssize_t recv_all(int fd, void *buf, size_t len, int flags,
			uint64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		struct timeval tv = { 0, 0 };
		ssize_t n;

		if (deadline) {
			uint64_t now = ch_mono_ns(), left;

			if (now >= deadline) {
				errno = ETIMEDOUT;
				return -1;
			}
			left = (deadline - now) / 1000u + 1;
			tv.tv_sec = (time_t)(left / 1000000u);
			tv.tv_usec = (suseconds_t)(left % 1000000u);
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (flags & MSG_PEEK)
			n = recv(fd, buf, len, MSG_PEEK | MSG_WAITALL);
		else
			n = recv(fd, (char *)buf + done, len - done,
				 MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			errno = ETIMEDOUT;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		if (flags & MSG_PEEK) {
			done = (size_t)n;
			break;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)kcore_load(p, 4, false);
}

/* SO_PEERPIDFD, SO_PEERCRED and PIDFD_GET_INFO: who is at the other end. */
static void peer_facts(int fd, struct kcore_ch_crash *crash,
		       struct kcore_ch_peer *peer)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	int pidfd = -1;
	struct ch_pidfd_info info;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0 &&
	    len == sizeof(uc) && uc.pid > 0) {
		peer->have_peercred = true;
		peer->peer_pid = uc.pid;
		peer->peer_uid = uc.uid;
		peer->peer_gid = uc.gid;
		crash->pid = uc.pid;
		crash->uid = uc.uid;
		crash->gid = uc.gid;
	}
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 &&
	    pidfd >= 0) {
		fcntl(pidfd, F_SETFD, FD_CLOEXEC);
		peer->pidfd = pidfd;
	} else {
		snprintf(peer->pidfd_why, sizeof(peer->pidfd_why),
			 "SO_PEERPIDFD: %s", strerror(errno));
		return;
	}
	memset(&info, 0, sizeof(info));
	info.mask = INFO_PID | INFO_CREDS | INFO_CGROUPID | INFO_COREDUMP;
	if (ioctl(pidfd, PIDFD_GET_INFO_, &info) < 0) {
		snprintf(peer->pidfd_why, sizeof(peer->pidfd_why),
			 "PIDFD_GET_INFO: %s", strerror(errno));
		return;
	}
	peer->have_info = true;
	if (info.mask & INFO_PID && info.tgid > 0)
		crash->pid = info.tgid;
	if (info.mask & INFO_CREDS) {
		/* %u and %g are the real ids. */
		crash->uid = info.ruid;
		crash->gid = info.rgid;
	}
	if (info.mask & INFO_CGROUPID) {
		peer->have_cgroupid = true;
		peer->cgroupid = info.cgroupid;
	}
	if (info.mask & INFO_COREDUMP) {
		peer->have_coredump_mask = true;
		peer->coredump_mask = info.coredump_mask;
		/* The kernel's %d: 1 dumps as the user, 2 as root (suid
		 * dumpable), 0 would be no dump at all. */
		crash->dump_mode = info.coredump_mask & CD_USER	  ? 1
				   : info.coredump_mask & CD_ROOT ? 2
				   : info.coredump_mask & CD_SKIP ? 0
								  : -1;
	}
	if (info.coredump_signal > 0 && info.coredump_signal < 128)
		crash->signal = (int)info.coredump_signal;
}

bool kcore_ch_peer_alive(const struct kcore_ch_peer *peer, int64_t pid)
{
	struct ch_pidfd_info info;

	if (!peer || peer->pidfd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	info.mask = INFO_PID;
	/* Credentials come back only while the task lives (not reaped). */
	return ioctl(peer->pidfd, PIDFD_GET_INFO_, &info) == 0 &&
	       (info.mask & INFO_CREDS) && (int64_t)info.tgid == pid;
}

static struct kcore_error *handshake(int fd, uint64_t deadline,
				     struct kcore_ch_peer *peer,
				     enum kcore_ch_via *ret_via)
{
	unsigned char head[REQ_SIZE_VER0], ack[ACK_SIZE_VER0], mark[4];
	uint32_t size, size_ack, m;
	uint64_t mask, want;
	ssize_t n;

	*ret_via = KCORE_CH_VIA_SOCKET;
	n = recv_all(fd, head, 4, MSG_PEEK, deadline);
	if (n < 0)
		return kcore_error_create(
			KCORE_ERR_OS, errno, "<coredump socket>",
			errno == ETIMEDOUT ? "nothing came within the "
					     "time limit"
					   : "cannot read");
	if (n < 4)
		return proto_error("the connection ended after %zd bytes, "
				   "before a core or a request",
				   n);
	if (memcmp(head, "\177ELF", 4) == 0)
		return NULL;
	*ret_via = KCORE_CH_VIA_SOCKET_REQUEST;
	size = le32(head);
	if (size < REQ_SIZE_VER0 || size > REQ_SIZE_MAX)
		return proto_error("neither a core nor a coredump request "
				   "(first word 0x%08" PRIx32 ")",
				   size);
	n = recv_all(fd, head, sizeof(head), 0, deadline);
	if (n != (ssize_t)sizeof(head))
		return n < 0 ? kcore_error_create(KCORE_ERR_OS, errno,
						  "<coredump socket>",
						  "cannot read the request")
			     : proto_error("the request ends after %zd of "
					   "%" PRIu32 " bytes",
					   n, size);
	/* What a newer kernel adds, we do not know: skip it. */
	for (uint32_t left = size - REQ_SIZE_VER0; left;) {
		unsigned char skip[256];
		uint32_t k = left < sizeof(skip) ? left : sizeof(skip);

		n = recv_all(fd, skip, k, 0, deadline);
		if (n != (ssize_t)k)
			return proto_error(
				"the request ends before its %" PRIu32 " bytes",
				size);
		left -= k;
	}
	size_ack = le32(head + 4);
	mask = kcore_load(head + 8, 8, false);
	peer->req_size = size;
	peer->req_size_ack = size_ack;
	peer->req_mask = mask;
	if (size_ack < ACK_SIZE_VER0)
		return proto_error("the request allows a %" PRIu32 "-byte "
				   "answer; ours takes %u",
				   size_ack, ACK_SIZE_VER0);
	if (!(mask & REQ_KERNEL))
		return proto_error("the kernel does not offer to write the "
				   "core (mask 0x%" PRIx64 ")",
				   mask);
	want = REQ_KERNEL | (mask & (REQ_WAIT | CH_REQ_HOLES));
	kcore_store_le(ack, ACK_SIZE_VER0, 4);
	kcore_store_le(ack + 4, 0, 4);
	kcore_store_le(ack + 8, want, 8);
	if (send(fd, ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack))
		return kcore_error_create(KCORE_ERR_OS, errno,
					  "<coredump socket>",
					  "cannot send the answer");
	peer->ack_mask = want;
	n = recv_all(fd, mark, sizeof(mark), 0, deadline);
	if (n != (ssize_t)sizeof(mark))
		return n < 0 ? kcore_error_create(KCORE_ERR_OS, errno,
						  "<coredump socket>",
						  "no mark after our answer")
			     : proto_error("the connection ended after our "
					   "answer, without a mark");
	m = le32(mark);
	if (m != 0)
		return proto_error(
			"the kernel refused our answer (mark %" PRIu32 ": %s)",
			m,
			m == 1	 ? "too small"
			: m == 2 ? "too big"
			: m == 3 ? "unsupported bits"
			: m == 4 ? "conflicting bits"
				 : "unknown");
	return NULL;
}

/*
 * Only the kernel's connection for a crash is served: the peer's pidfd
 * must say, through PIDFD_GET_INFO, that the task is dumping core
 * (PIDFD_COREDUMPED, which the kernel sets before it connects, since
 * the coredump socket came in Linux 6.16), as systemd-coredump requires.  Any
 * other process that can connect (root's own, or anyone's, should the socket's
 * mode allow it) would have its "core" stored as a crash.  Nothing is read from
 * it, no answer sent.
 */
static struct kcore_error *require_coredump(const struct kcore_ch_crash *crash,
					    const struct kcore_ch_peer *peer)
{
	const char *why = NULL;
	char buf[128];

	if (peer->pidfd < 0 || !peer->have_info) {
		why = peer->pidfd_why[0] ? peer->pidfd_why : "no pidfd";
	} else if (!peer->have_coredump_mask) {
		why = "PIDFD_GET_INFO has no coredump information (a kernel "
		      "before 6.16)";
	} else if (!(peer->coredump_mask & CD_COREDUMPED)) {
		snprintf(buf, sizeof(buf),
			 "PIDFD_GET_INFO: coredump mask 0x%" PRIx32
			 " without PIDFD_COREDUMPED",
			 peer->coredump_mask);
		why = buf;
	}
	if (!why)
		return NULL;
	return kcore_error_create(
		KCORE_ERR_ACCESS, 0, "<coredump socket>",
		"the peer (pid %" PRId64 ", uid %" PRIu32 ") is not a task "
		"the kernel is dumping: %s; nothing read or stored",
		crash->pid, crash->uid, why);
}

struct kcore_error *kcore_ch_socket_accept(int fd, uint64_t timeout_ms,
					   struct kcore_ch_crash *crash,
					   struct kcore_ch_peer *peer,
					   enum kcore_ch_via *ret_via)
{
	uint64_t deadline =
		timeout_ms ? ch_mono_ns() + timeout_ms * 1000000u : 0;
	struct timeval none = { 0, 0 };
	struct kcore_error *err;
	int fl;

	memset(peer, 0, sizeof(*peer));
	peer->pidfd = -1;
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	crash->time = (int64_t)time(NULL);
	crash->dump_mode = -1;
	peer_facts(fd, crash, peer);
	err = require_coredump(crash, peer);
	if (err)
		return err;
	err = handshake(fd, deadline, peer, ret_via);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	return err;
}

void kcore_ch_peer_deinit(struct kcore_ch_peer *peer)
{
	if (peer && peer->pidfd >= 0) {
		close(peer->pidfd);
		peer->pidfd = -1;
	}
}

/* ---- what /proc says of the crashing process's place ---- */

/* The namespace link name of dir (a /proc/PID directory), "" if none;
 * the errno, or 0. */
static int ns_of(int dir, const char *name, char *out, size_t size)
{
	char path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "ns/%s", name);
	n = dir >= 0 ? readlinkat(dir, path, out, size - 1) : -1;
	out[n > 0 ? n : 0] = '\0';
	return n > 0 ? 0 : n < 0 && dir >= 0 ? errno : EIO;
}

void ch_place_facts(struct ch *ch)
{
	static const char *const names[CH_NS_NUM] = { "pid",   "mnt", "net",
						      "user",  "uts", "ipc",
						      "cgroup" };
	const char *procfs = ch->o->procfs ? ch->o->procfs : "/proc";
	struct ch_place *pl = &ch->place;
	char path[96], buf[4096], mine[64];
	const char *p;
	ssize_t n;
	int fd, self;

	pl->ns_pid = -1;
	if (!ch->proc_ok || ch->proc_fd < 0)
		return;
	fd = openat(ch->proc_fd, "status", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		p = strstr(buf, "\nNSpid:");
		if (p) {
			char *end;
			int k = 0;

			p += 7;
			for (;;) {
				long long v = strtoll(p, &end, 10);

				if (end == p)
					break;
				pl->ns_pid = v;
				k++;
				p = end;
			}
			pl->pid_levels = k;
		}
	}
	snprintf(path, sizeof(path), "%s/self", procfs);
	self = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < CH_NS_NUM; i++) {
		int e = ns_of(ch->proc_fd, names[i], pl->ns[i],
			      sizeof(pl->ns[i]));

		if (e && !pl->ns_err)
			pl->ns_err = e;
		ns_of(self, names[i], mine, sizeof(mine));
		pl->ns_differs[i] =
			pl->ns[i][0] && mine[0] && strcmp(pl->ns[i], mine) != 0;
		pl->ns_name[i] = names[i];
	}
	if (self >= 0)
		close(self);
	/* The pids of /proc/PID/status go from our namespace down to its
	 * own: more than one is a PID namespace below ours. */
	pl->container = pl->pid_levels > 1 || pl->ns_differs[0];
	pl->known = pl->pid_levels > 0 || pl->ns[0][0];
	/* A pid from a socket: the pidfd must still be that process, or
	 * what we read was another's. */
	if (ch->o->peer && ch->o->peer->pidfd >= 0 &&
	    !kcore_ch_peer_alive(ch->o->peer, ch->o->crash.pid)) {
		memset(pl, 0, sizeof(*pl));
		pl->ns_pid = -1;
		ch->proc_ok = false;
		snprintf(ch->proc_why, sizeof(ch->proc_why),
			 "the pidfd of the connection's peer no longer names "
			 "pid %" PRId64,
			 ch->o->crash.pid);
	}
}
