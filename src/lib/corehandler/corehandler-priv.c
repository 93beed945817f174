// SPDX-License-Identifier: MIT
/*
 * The core handler's privileges.
 *
 * The kernel starts the handler as root with every capability.  What it
 * needs them for is opening things at the start: the store (root's
 * directory), the crashing process's /proc files (pagemap, status: its
 * memory and its mapped files, which need CAP_SYS_PTRACE, CAP_SYS_ADMIN
 * for map_files and CAP_DAC_* to read a file mode 0400 of another user),
 * and starting the build-ID helper (CAP_SETUID, CAP_SETGID,
 * CAP_SYS_CHROOT).  Before it reads the stream it keeps only those;
 * once they are open it drops every capability, for good (bounding set
 * empty, no new privileges).  It stays uid 0 without capabilities: the
 * store is root's, so it can still write there and nowhere else root's
 * mode bits do not allow.
 *
 * The build IDs need libdwfl, a large parser, on the core: that runs in
 * a helper process forked before the drop, which at once roots itself in
 * an empty, deleted directory, becomes nobody (or the configured user),
 * reopens only the mapped files the handler opened for it (as nobody),
 * sets no-new-privileges, installs a seccomp filter that refuses every
 * open() and anything but reading, writing to its socket and memory
 * management, and waits for the core (with the build-ID debuginfo files
 * the handler opened under /usr/lib/debug, for the backtrace).  It
 * replies the modules first, then the backtrace.  It has a time limit of
 * its own: the handler kills an intermediate process whose death kills
 * the helper (PR_SET_PDEATHSIG), as it may not kill nobody's processes
 * itself.
 */
#include <acl/libacl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "corehandler-internal.h"

/* The helper's reply, at most. */
#define MAX_REPLY   (4u << 20)
#define REPLY_MAGIC 0x4b434249u /* "KCBI" */

struct ch_helper {
	pid_t reaper;
	int sock;
	char *why; /* why there is none */
};

static bool have_caps(void)
{
	cap_t c = cap_get_proc();
	cap_t empty = cap_init();
	bool any = c && empty && cap_compare(c, empty) != 0;

	cap_free(c);
	cap_free(empty);
	return any;
}

struct kcore_error *ch_priv_restrict(struct ch *ch)
{
	static const cap_value_t keep[] = {
		CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE,
		CAP_SYS_ADMIN,	  CAP_SETUID,	       CAP_SETGID,
		CAP_SYS_CHROOT,	  CAP_SETPCAP,
	};
	cap_t cur, want;
	int r;

	if (!have_caps())
		return NULL;
	cur = cap_get_proc();
	want = cap_init();
	if (!cur || !want) {
		cap_free(cur);
		cap_free(want);
		return &kcore_error_nomem;
	}
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		cap_flag_value_t v = CAP_CLEAR;

		cap_get_flag(cur, keep[i], CAP_PERMITTED, &v);
		if (v == CAP_SET) {
			cap_set_flag(want, CAP_PERMITTED, 1, &keep[i], CAP_SET);
			cap_set_flag(want, CAP_EFFECTIVE, 1, &keep[i], CAP_SET);
		}
	}
	r = cap_set_proc(want);
	cap_free(cur);
	cap_free(want);
	if (r < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot give up capabilities");
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return NULL;
}

struct kcore_error *ch_priv_drop(struct ch *ch)
{
	cap_t none;
	int r;

	/* The bounding set while CAP_SETPCAP is still ours. */
	if (have_caps())
		for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
			if (CAP_IS_SUPPORTED(c))
				cap_drop_bound(c);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	none = cap_init();
	if (!none)
		return &kcore_error_nomem;
	r = cap_set_proc(none);
	cap_free(none);
	if (r < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot give up capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot set no-new-privileges");
	/* Nothing of ours to debug or to dump, by anybody. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return NULL;
}

/* ---- ACLs ---- */

static int grant(int fd, uint32_t uid, bool read, bool exec)
{
	acl_t acl = acl_get_fd(fd);
	acl_entry_t e = NULL;
	acl_permset_t ps;
	int r = -1, id;

	if (!acl)
		return -1;
	for (id = ACL_FIRST_ENTRY; acl_get_entry(acl, id, &e) == 1;
	     id = ACL_NEXT_ENTRY) {
		acl_tag_t tag;
		uid_t *q;
		bool mine;

		if (acl_get_tag_type(e, &tag) < 0 || tag != ACL_USER)
			continue;
		q = acl_get_qualifier(e);
		mine = q && *q == uid;
		acl_free(q);
		if (mine)
			break;
		e = NULL;
	}
	if (!e && (acl_create_entry(&acl, &e) < 0 ||
		   acl_set_tag_type(e, ACL_USER) < 0 ||
		   acl_set_qualifier(e, &uid) < 0))
		goto out;
	if (acl_get_permset(e, &ps) < 0 || acl_clear_perms(ps) < 0 ||
	    (read && acl_add_perm(ps, ACL_READ) < 0) ||
	    (exec && acl_add_perm(ps, ACL_EXECUTE) < 0) ||
	    acl_calc_mask(&acl) < 0)
		goto out;
	r = acl_set_fd(fd, acl);
out:
	acl_free(acl);
	return r;
}

int ch_priv_grant_read(int fd, uint32_t uid, bool dir)
{
	return grant(fd, uid, true, dir);
}

/* The store itself: search only, so that nobody lists others' cores. */
int ch_priv_grant_search(int fd, uint32_t uid)
{
	return grant(fd, uid, false, true);
}

void ch_priv_decide_access(struct ch *ch)
{
	const struct kcore_ch_opts *o = ch->o;
	const struct ch_creds *c = &ch->creds;
	char *w = ch->access_why;
	size_t n = sizeof(ch->access_why);

	ch->user_access = false;
	if (!o->user_access) {
		snprintf(w, n, "--owner root");
		return;
	}
	/* systemd-coredump's rule: the user reads the core only if the
	 * process ran as that user and nothing else. */
	if (o->crash.dump_mode != 1) {
		if (o->crash.dump_mode < 0)
			snprintf(w, n,
				 "the dump mode is not known (no "
				 "--dump-mode=%%d in core_pattern)");
		else
			snprintf(w, n,
				 "dump mode %d: the process changed "
				 "credentials or is not dumpable by its user",
				 o->crash.dump_mode);
		return;
	}
	if (!c->have_uid || !c->have_euid || !c->have_gid || !c->have_egid ||
	    !c->have_secure) {
		snprintf(w, n,
			 "NT_AUXV does not give AT_UID, AT_EUID, "
			 "AT_GID, AT_EGID and AT_SECURE");
		return;
	}
	if (c->secure) {
		snprintf(w, n, "AT_SECURE is set: the exec gave privileges");
		return;
	}
	if (c->uid != c->euid || c->gid != c->egid) {
		snprintf(w, n,
			 "uid %" PRIu64 " / euid %" PRIu64 ", gid %" PRIu64
			 " / egid %" PRIu64 " differ",
			 c->uid, c->euid, c->gid, c->egid);
		return;
	}
	if (c->uid != o->crash.uid || c->gid != o->crash.gid) {
		snprintf(w, n,
			 "AT_UID %" PRIu64 " / AT_GID %" PRIu64
			 " are not the kernel's %" PRIu32 " / %" PRIu32,
			 c->uid, c->gid, o->crash.uid, o->crash.gid);
		return;
	}
	if (o->crash.uid == 0 || o->crash.uid == KCORE_NOBODY) {
		snprintf(w, n, "uid %" PRIu32 " gets no access of its own",
			 o->crash.uid);
		return;
	}
	snprintf(w, n, "uid == euid, gid == egid, AT_SECURE 0 and dump mode 1");
	ch->user_access = true;
}

/* Close every descriptor but the n in keep (sorted). */
static void close_others(const int *keep, size_t n)
{
	unsigned lo = 0;

	for (size_t i = 0; i <= n; i++) {
		unsigned hi = i < n ? (unsigned)keep[i] : ~0u;

		if (hi > lo) {
			if (syscall(SYS_close_range, lo, hi - 1, 0) < 0) {
				unsigned top = hi == ~0u ? 65536 : hi;

				for (unsigned fd = lo; fd < top; fd++)
					close((int)fd);
			}
		}
		if (i < n)
			lo = (unsigned)keep[i] + 1;
	}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void put32(FILE *f, uint32_t v)
{
	unsigned char b[4];

	kcore_store_le(b, v, 4);
	fwrite(b, 1, 4, f);
}

static void put64(FILE *f, uint64_t v)
{
	unsigned char b[8];

	kcore_store_le(b, v, 8);
	fwrite(b, 1, 8, f);
}

static void put_str(FILE *f, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put32(f, s ? (uint32_t)n : UINT32_MAX);
	if (n)
		fwrite(s, 1, n, f);
}

/* A frame's bytes in the reply. */
static size_t frame_size(const struct ch_frame *fr)
{
	return 32 + (fr->func ? strlen(fr->func) : 0) +
	       (fr->module ? strlen(fr->module) : 0);
}

/*
 * The backtrace: flags, seconds (µs), debuginfo files, error, threads;
 * frames beyond budget bytes left out (their thread marked truncated).
 */
static void put_bt(FILE *f, const struct ch_backtrace *bt, size_t budget)
{
	size_t used = 64;

	put32(f, (uint32_t)bt->made | (uint32_t)bt->threads_truncated << 1 |
			 (uint32_t)bt->timed_out << 2);
	put64(f, (uint64_t)(bt->seconds * 1e6));
	put32(f, bt->debug_files);
	put_str(f, bt->error);
	put32(f, (uint32_t)bt->nthreads);
	for (size_t i = 0; i < bt->nthreads; i++) {
		const struct ch_bt_thread *t = &bt->threads[i];
		size_t n = 0;

		used += 64 + (t->error ? strlen(t->error) : 0);
		while (n < t->nframes &&
		       used + frame_size(&t->frames[n]) <= budget)
			used += frame_size(&t->frames[n++]);
		put64(f, (uint64_t)t->tid);
		put32(f, t->truncated || n < t->nframes);
		put_str(f, t->error);
		put32(f, (uint32_t)n);
		for (size_t k = 0; k < n; k++) {
			const struct ch_frame *fr = &t->frames[k];

			put64(f, fr->pc);
			put64(f, fr->func_off);
			put64(f, fr->module_off);
			put_str(f, fr->func);
			put_str(f, fr->module);
		}
	}
}

/* Bytes of the reply written so far (the helper's). */
static size_t replied;

static void send_all(int sock, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len && replied < MAX_REPLY) {
		size_t n = len - done < MAX_REPLY - replied
				   ? len - done
				   : MAX_REPLY - replied;
		ssize_t w = write(sock, buf + done, n);

		if (w <= 0)
			break;
		done += (size_t)w;
		replied += (size_t)w;
	}
}

/*
 * The helper's reply, in two parts: what it saw of itself and the
 * modules, as soon as it has them; then the backtrace (so that a
 * backtrace past the time limit costs only itself).
 */
static void reply(int sock, const struct ch_buildids *ids)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	size_t elen = ids->error ? strlen(ids->error) : 0;

	if (!f)
		return;
	put32(f, REPLY_MAGIC);
	put64(f, (uint64_t)ids->uid);
	put64(f, (uint64_t)ids->gid);
	put32(f, (uint32_t)ids->no_new_privs | (uint32_t)ids->seccomp << 1 |
			 (uint32_t)ids->chroot << 2);
	put64(f, ids->cap_eff);
	put32(f, (uint32_t)(elen > 4096 ? 4096 : elen));
	fwrite(ids->error ? ids->error : "", 1, elen > 4096 ? 4096 : elen, f);
	put32(f, (uint32_t)ids->count);
	for (size_t i = 0; i < ids->count; i++) {
		const struct ch_module *m = &ids->mods[i];
		size_t nlen = strlen(m->name);

		put64(f, m->start);
		put64(f, m->end);
		put32(f, m->build_id_len);
		fwrite(m->build_id, 1, m->build_id_len, f);
		put32(f, (uint32_t)nlen);
		fwrite(m->name, 1, nlen, f);
	}
	if (fclose(f) == 0)
		send_all(sock, buf, len);
	free(buf);
}

static void reply_bt(int sock, const struct ch_backtrace *bt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	put_bt(f, bt, replied < MAX_REPLY ? MAX_REPLY - replied : 0);
	if (fclose(f) == 0)
		send_all(sock, buf, len);
	free(buf);
}

/* The modules are known: the first part of the reply. */
static bool modules_sent;

static void modules_done(const struct ch_buildids *ids, void *arg)
{
	reply(*(const int *)arg, ids);
	modules_sent = true;
}

/*
 * The helper's one message: a flag byte ('f' the stored core, 'm' the
 * first-pages image), le64 milliseconds for the backtrace, le32 count of
 * debuginfo files, each a byte of build-ID length and the ID; with the
 * core's descriptor, then the debuginfo files', as SCM_RIGHTS.
 */
#define MSG_MAX (1 + 8 + 4 + CH_MAX_DEBUG * 65)

union fds_cmsg {
	struct cmsghdr h;
	char b[CMSG_SPACE(sizeof(int) * (1 + CH_MAX_DEBUG))];
};

/* Received into *in (and debug, CH_MAX_DEBUG of them); false if the
 * message is not one. */
static bool recv_input(int sock, struct ch_buildid_input *in,
		       struct ch_debugfile *debug)
{
	unsigned char buf[MSG_MAX];
	struct iovec iov = { buf, sizeof(buf) };
	union fds_cmsg u;
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.b,
			      .msg_controllen = sizeof(u.b) };
	struct cmsghdr *c;
	int fds[1 + CH_MAX_DEBUG];
	size_t nfds = 0, pos = 13;
	ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	uint64_t count;

	if (n < 13)
		return false;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len >= CMSG_LEN(sizeof(int))) {
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfds > 1 + CH_MAX_DEBUG)
			nfds = 1 + CH_MAX_DEBUG;
		memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
	}
	if (!nfds)
		return false;
	in->core_fd = fds[0];
	in->memory = buf[0] == 'm';
	in->backtrace_ms = kcore_load(buf + 1, 8, false);
	count = kcore_load(buf + 9, 4, false);
	in->debug = debug;
	in->ndebug = 0;
	for (uint64_t i = 0; i < count && i + 1 < nfds; i++) {
		unsigned len;

		if (pos >= (size_t)n)
			break;
		len = buf[pos++];
		if (len > sizeof(debug->id) || len > (size_t)n - pos)
			break;
		memcpy(debug[i].id, buf + pos, len);
		debug[i].id_len = len;
		debug[i].fd = fds[i + 1];
		pos += len;
		in->ndebug++;
	}
	return true;
}

static int send_input(int sock, int fd, bool memory, uint64_t bt_ms,
		      const struct ch_debugfile *debug, size_t ndebug)
{
	unsigned char buf[MSG_MAX];
	struct iovec iov = { buf, 0 };
	union fds_cmsg u;
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.b,
			      .msg_controllen =
				      CMSG_SPACE(sizeof(int) * (1 + ndebug)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	size_t pos = 13;

	memset(u.b, 0, sizeof(u.b));
	buf[0] = memory ? 'm' : 'f';
	kcore_store_le(buf + 1, bt_ms, 8);
	kcore_store_le(buf + 9, ndebug, 4);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (1 + ndebug));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	for (size_t i = 0; i < ndebug; i++) {
		memcpy(CMSG_DATA(c) + sizeof(int) * (i + 1), &debug[i].fd,
		       sizeof(int));
		buf[pos++] = (unsigned char)debug[i].id_len;
		memcpy(buf + pos, debug[i].id, debug[i].id_len);
		pos += debug[i].id_len;
	}
	iov.iov_len = pos;
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)pos ? 0 : -1;
}

/*
 * The helper: becomes nobody in an empty root with the mapped files as
 * its only files, then waits for the core.  Never returns.
 */
static void helper_main(struct ch *ch, int sock, int empty_fd, pid_t reaper)
{
	const struct kcore_ch_opts *o = ch->o;
	uid_t uid = o->helper_uid ? o->helper_uid : KCORE_NOBODY;
	gid_t gid = o->helper_gid ? o->helper_gid : KCORE_NOBODY;
	struct ch_buildids ids = { .uid = -1, .gid = -1 };
	struct ch_buildid_input in = { .maps = ch->maps, .nmaps = ch->nmaps };
	int keep[CH_MAX_MAPS + 2], nkeep = 0, procfd;
	bool root = geteuid() == 0;
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3
	};
	struct __user_cap_data_struct data[2] = { 0 };
	struct ch_debugfile debug[CH_MAX_DEBUG];
	struct rlimit rl;

	procfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* An empty root: the directory made for us, already deleted. */
	if (root && empty_fd >= 0 && fchdir(empty_fd) == 0 &&
	    chroot(".") == 0 && chdir("/") == 0)
		ids.chroot = true;
	if (empty_fd >= 0)
		close(empty_fd);
	if (root) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0 || getuid() != uid ||
		    geteuid() != uid || getgid() != gid)
			_exit(2);
	}
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* Killed with the reaper; it may have gone already. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != reaper)
		_exit(3);
	/* The mapped files, opened again as what we are now: only regular
	 * files (opening a device node could act), and only if this user
	 * may read them. */
	for (size_t i = 0; i < ch->nmaps; i++) {
		struct ch_map *m = &ch->maps[i];
		struct stat st;
		char name[16];
		int fd = -1;

		if (procfd >= 0 && fstat(m->fd, &st) == 0 &&
		    S_ISREG(st.st_mode)) {
			snprintf(name, sizeof(name), "%d", m->fd);
			fd = openat(procfd, name,
				    O_RDONLY | O_CLOEXEC | O_NOCTTY |
					    O_NONBLOCK);
		}
		close(m->fd);
		m->fd = fd;
		if (fd >= 0)
			keep[nkeep++] = fd;
	}
	if (procfd >= 0)
		close(procfd);
	keep[nkeep++] = sock;
	qsort(keep, (size_t)nkeep, sizeof(int), cmp_int);
	close_others(keep, (size_t)nkeep);
	kcore_sandbox_rlimits(o->build_id_timeout_ms / 1000 +
			      o->backtrace_timeout_ms / 1000 + 2);
	/* Room for the core and the debuginfo files to come. */
	rl.rlim_cur = rl.rlim_max = (rlim_t)nkeep + 16 + 1 + CH_MAX_DEBUG;
	setrlimit(RLIMIT_NOFILE, &rl);
	ids.uid = getuid();
	ids.gid = getgid();
	if (syscall(SYS_capget, &hdr, data) == 0)
		ids.cap_eff = data[0].effective | (uint64_t)data[1].effective
							  << 32;
	ids.no_new_privs = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
	ids.seccomp = ids.no_new_privs && kcore_sandbox_seccomp();
	if (!ids.no_new_privs)
		_exit(4);
	if (!recv_input(sock, &in, debug))
		_exit(0);
	in.on_modules = modules_done;
	in.arg = &sock;
	ch_buildid_scan(&in, &ids);
	if (!modules_sent)
		reply(sock, &ids);
	if (in.backtrace_ms)
		reply_bt(sock, &ids.bt);
	_exit(0);
}

/* An empty directory of ours, already removed, for the helper's root. */
static int empty_dir(struct ch *ch)
{
	/* Made by ch_vacuum_enter(); ours to close now. */
	if (!ch->store.has_empty)
		return -1;
	ch->store.has_empty = false;
	return ch->store.empty_fd;
}

void ch_priv_open_maps(struct ch *ch)
{
	/* Only files of the process the kernel named while it dumps (its
	 * directory opened then): a reused pid would be another's. */
	if (!ch->proc_ok || ch->proc_fd < 0 || ch->o->build_id_timeout_ms == 0)
		return;
	for (size_t k = 0; k < ch->files.count && ch->nmaps < CH_MAX_MAPS;
	     k++) {
		const struct kcore_file_entry *f = &ch->files.entries[k];
		char path[160];
		int fd;

		if (f->offset != 0)
			continue;
		snprintf(path, sizeof(path), "map_files/%" PRIx64 "-%" PRIx64,
			 f->start, f->end);
		/* O_PATH: the file's own open() does not run. */
		fd = openat(ch->proc_fd, path, O_PATH | O_CLOEXEC);
		if (fd < 0)
			continue;
		ch->maps[ch->nmaps++] = (struct ch_map){ .start = f->start,
							 .end = f->end,
							 .fd = fd,
							 .name = f->name };
	}
}

void ch_priv_start_helper(struct ch *ch)
{
	struct ch_helper *h = calloc(1, sizeof(*h));
	int sv[2], empty;
	pid_t r;

	if (!h)
		return;
	ch->helper = h;
	h->sock = -1;
	if (ch->o->build_id_timeout_ms == 0) {
		h->why = strdup("build IDs not read (--build-id-timeout 0)");
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		if (asprintf(&h->why, "socketpair: %s", strerror(errno)) < 0)
			h->why = NULL;
		return;
	}
	empty = geteuid() == 0 ? empty_dir(ch) : -1;
	fflush(NULL);
	r = fork();
	if (r == 0) {
		/* The reaper: its death is the helper's, and the handler's
		 * its own. */
		pid_t me = getpid(), c;
		int keep[1] = { 0 };

		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() == 1)
			_exit(0);
		c = fork();

		if (c == 0)
			helper_main(ch, sv[1], empty, me);
		close_others(keep, 0);
		while (c > 0 && waitpid(c, NULL, 0) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	if (empty >= 0)
		close(empty);
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		if (asprintf(&h->why, "fork: %s", strerror(errno)) < 0)
			h->why = NULL;
		return;
	}
	h->reaper = r;
	h->sock = sv[0];
	/* The helper has what it needs of the mapped files. */
	for (size_t i = 0; i < ch->nmaps; i++)
		close(ch->maps[i].fd);
	ch->nmaps = 0;
}

static uint64_t get(const unsigned char **p, const unsigned char *end,
		    unsigned size, bool *bad)
{
	uint64_t v;

	if ((size_t)(end - *p) < size) {
		*bad = true;
		return 0;
	}
	v = kcore_load(*p, size, false);
	*p += size;
	return v;
}

/* A string of the reply: NULL for none (UINT32_MAX), at most max. */
static char *get_str(const unsigned char **p, const unsigned char *end,
		     size_t max, bool *bad)
{
	uint64_t n = get(p, end, 4, bad);
	char *s;

	if (*bad || n == UINT32_MAX)
		return NULL;
	if (n > max || n > (uint64_t)(end - *p)) {
		*bad = true;
		return NULL;
	}
	s = strndup((const char *)*p, n);
	*p += n;
	if (!s)
		*bad = true;
	return s;
}

static void parse_bt(const unsigned char **p, const unsigned char *end,
		     struct ch_backtrace *bt, bool *bad)
{
	uint64_t flags = get(p, end, 4, bad), n;

	bt->made = flags & 1;
	bt->threads_truncated = flags & 2;
	bt->timed_out = flags & 4;
	bt->seconds = (double)get(p, end, 8, bad) / 1e6;
	bt->debug_files = (unsigned)get(p, end, 4, bad);
	bt->error = get_str(p, end, 4096, bad);
	n = get(p, end, 4, bad);
	if (*bad || !n)
		return;
	if (n > CH_BT_MAX_THREADS) {
		*bad = true;
		return;
	}
	bt->threads = calloc(n, sizeof(*bt->threads));
	if (!bt->threads) {
		*bad = true;
		return;
	}
	for (uint64_t i = 0; i < n && !*bad; i++) {
		struct ch_bt_thread *t = &bt->threads[i];
		uint64_t nf;

		bt->nthreads++;
		t->tid = (int64_t)get(p, end, 8, bad);
		t->truncated = get(p, end, 4, bad) != 0;
		t->error = get_str(p, end, 4096, bad);
		nf = get(p, end, 4, bad);
		if (*bad || !nf)
			continue;
		if (nf > CH_BT_MAX_FRAMES) {
			*bad = true;
			break;
		}
		t->frames = calloc(nf, sizeof(*t->frames));
		if (!t->frames) {
			*bad = true;
			break;
		}
		for (uint64_t k = 0; k < nf && !*bad; k++) {
			struct ch_frame *fr = &t->frames[k];

			t->nframes++;
			fr->pc = get(p, end, 8, bad);
			fr->func_off = get(p, end, 8, bad);
			fr->module_off = get(p, end, 8, bad);
			fr->func = get_str(p, end, 4096, bad);
			fr->module = get_str(p, end, 4096, bad);
		}
	}
}

/* The helper's reply, parsed with every length checked. */
/* *ret_bt_cut: in, the helper was killed; out, no backtrace came.
 * False if the modules' part is not whole (killed: nothing set). */
static bool parse_reply(const unsigned char *buf, size_t len,
			struct ch_buildids *ids, bool *ret_bt_cut)
{
	const unsigned char *p = buf, *end = buf + len;
	bool bad = false;
	uint64_t flags, elen, count;

	if (get(&p, end, 4, &bad) != REPLY_MAGIC || bad) {
		if (!*ret_bt_cut)
			ids->error = strdup(len ? "the build-ID helper's reply "
						  "is malformed"
						: "the build-ID helper gave no "
						  "reply");
		return false;
	}
	ids->uid = (int64_t)get(&p, end, 8, &bad);
	ids->gid = (int64_t)get(&p, end, 8, &bad);
	flags = get(&p, end, 4, &bad);
	ids->no_new_privs = flags & 1;
	ids->seccomp = flags & 2;
	ids->chroot = flags & 4;
	ids->cap_eff = get(&p, end, 8, &bad);
	elen = get(&p, end, 4, &bad);
	if (!bad && elen && elen <= (uint64_t)(end - p)) {
		ids->error = strndup((const char *)p, elen);
		p += elen;
	} else if (elen) {
		bad = true;
	}
	count = get(&p, end, 4, &bad);
	if (!bad && count)
		ids->mods =
			calloc(count < 4096 ? count : 4096, sizeof(*ids->mods));
	for (uint64_t i = 0; !bad && ids->mods && i < count && i < 4096; i++) {
		struct ch_module *m = &ids->mods[i];
		uint64_t idlen, nlen;

		m->start = get(&p, end, 8, &bad);
		m->end = get(&p, end, 8, &bad);
		idlen = get(&p, end, 4, &bad);
		if (bad || idlen > sizeof(m->build_id) ||
		    idlen > (uint64_t)(end - p)) {
			bad = true;
			break;
		}
		memcpy(m->build_id, p, idlen);
		m->build_id_len = (unsigned)idlen;
		p += idlen;
		nlen = get(&p, end, 4, &bad);
		if (bad || nlen > 4096 || nlen > (uint64_t)(end - p)) {
			bad = true;
			break;
		}
		m->name = strndup((const char *)p, nlen);
		p += nlen;
		if (!m->name) {
			bad = true;
			break;
		}
		ids->count++;
	}
	/* The backtrace's part, if it came (whole). */
	if (!bad && p < end) {
		parse_bt(&p, end, &ids->bt, &bad);
		if (bad) {
			ch_backtrace_deinit(&ids->bt);
			if (!*ret_bt_cut)
				ids->bt.error =
					strdup("the build-ID helper's "
					       "backtrace is malformed");
			bad = false;
		}
	} else if (!bad) {
		*ret_bt_cut = true;
	}
	if (bad && *ret_bt_cut)
		return false;
	if (bad && !ids->error)
		ids->error = strdup("the build-ID helper's reply is "
				    "malformed");
	return true;
}

void ch_priv_build_ids(struct ch *ch, int core_fd, const unsigned char *img,
		       size_t img_len)
{
	struct ch_helper *h = ch->helper;
	struct ch_buildids *ids = &ch->ids;
	uint64_t deadline = ch_mono_ns() + (ch->o->build_id_timeout_ms +
					    ch->o->backtrace_timeout_ms) *
						   1000000ull;
	struct ch_debugfile debug[CH_MAX_DEBUG];
	size_t ndebug = 0;
	unsigned char *buf = NULL;
	size_t len = 0;
	bool timed_out = false, ended = false;
	int fd = -1;

	ids->uid = ids->gid = -1;
	ids->from = img ? "first pages" : "stored core";
	if (!h || h->sock < 0) {
		ids->from = "none";
		ids->error =
			strdup(h && h->why ? h->why : "no build-ID helper");
		return;
	}
	if (img) {
		fd = memfd_create("kcoredump-first-pages",
				  MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0) {
			struct kcore_error *err = kcore_write_all(
				NULL, fd, "memfd", img, img_len);

			if (err ||
			    fcntl(fd, F_ADD_SEALS,
				  F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK |
					  F_SEAL_SEAL) < 0) {
				kcore_error_destroy(err);
				close(fd);
				fd = -1;
				errno = EIO;
			}
		}
	} else {
		char proc[64];

		/* Read-only: the helper cannot change what we publish. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", core_fd);
		fd = open(proc, O_RDONLY | O_CLOEXEC);
	}
	if (ch->o->backtrace_timeout_ms)
		ndebug = ch_buildid_debug_files(ch, debug, CH_MAX_DEBUG);
	if (fd < 0 ||
	    send_input(h->sock, fd, img != NULL, ch->o->backtrace_timeout_ms,
		       debug, ndebug) < 0) {
		if (asprintf(&ids->error,
			     "cannot hand the core to the "
			     "build-ID helper: %s",
			     strerror(errno)) < 0)
			ids->error = NULL;
		if (fd >= 0)
			close(fd);
		goto done;
	}
	close(fd);
	for (size_t i = 0; i < ndebug; i++)
		close(debug[i].fd);
	ndebug = 0;
	buf = malloc(MAX_REPLY);
	while (buf && len < MAX_REPLY) {
		struct pollfd pfd = { .fd = h->sock, .events = POLLIN };
		uint64_t now = ch_mono_ns();
		ssize_t n;

		if (now >= deadline) {
			timed_out = true;
			break;
		}
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
			continue;
		n = read(h->sock, buf + len, MAX_REPLY - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ended = n == 0;
			break;
		}
		len += (size_t)n;
	}
	if (timed_out) {
		bool cut = true;
		char *why = NULL;

		if (asprintf(&why,
			     "the build-ID helper did not finish within "
			     "%.3f s; killed",
			     (double)(ch->o->build_id_timeout_ms +
				      ch->o->backtrace_timeout_ms) /
				     1000) < 0)
			why = NULL;
		/* The modules may have come before the backtrace. */
		if (buf && parse_reply(buf, len, ids, &cut)) {
			if (cut && ch->o->backtrace_timeout_ms && !ids->bt.made)
				ids->bt.error = why, why = NULL;
		} else {
			ch_buildids_deinit(ids);
			ids->error = why, why = NULL;
		}
		free(why);
	} else if (buf) {
		bool cut = false;

		parse_reply(buf, len, ids, &cut);
	} else {
		ids->error = strdup("out of memory");
	}
done:
	for (size_t i = 0; i < ndebug; i++)
		close(debug[i].fd);
	free(buf);
	/* The helper closed its end: it is exiting, and the reaper after
	 * it.  Otherwise the reaper's death ends the helper too. */
	if (!ended)
		kill(h->reaper, SIGKILL);
	while (waitpid(h->reaper, NULL, 0) < 0 && errno == EINTR)
		;
	h->reaper = 0;
	close(h->sock);
	h->sock = -1;
}

void ch_priv_deinit(struct ch *ch)
{
	struct ch_helper *h = ch->helper;

	for (size_t i = 0; i < ch->nmaps; i++)
		close(ch->maps[i].fd);
	ch->nmaps = 0;
	if (h) {
		if (h->sock >= 0)
			close(h->sock);
		if (h->reaper > 0) {
			kill(h->reaper, SIGKILL);
			while (waitpid(h->reaper, NULL, 0) < 0 &&
			       errno == EINTR)
				;
		}
		free(h->why);
		free(h);
	}
	ch->helper = NULL;
	ch_buildids_deinit(&ch->ids);
}
