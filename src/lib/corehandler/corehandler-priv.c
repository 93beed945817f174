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
#include "sandbox.h"

/* The helper's reply, at most. */
#define MAX_REPLY (4u << 20)

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

/* The helper's reply, in two parts (corehandler-wire.c). */
static void reply(int sock, const struct ch_buildids *ids)
{
	size_t len = 0;
	char *buf = ch_wire_modules(ids, &len);

	if (buf)
		send_all(sock, buf, len);
	free(buf);
}

static void reply_bt(int sock, const struct ch_backtrace *bt)
{
	size_t len = 0;
	char *buf = ch_wire_backtrace(
		bt, replied < MAX_REPLY ? MAX_REPLY - replied : 0, &len);

	if (buf)
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
	if (!ch_wire_recv_input(sock, &in, debug))
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
	if (fd < 0 || ch_wire_send_input(h->sock, fd, img != NULL,
					 ch->o->backtrace_timeout_ms, debug,
					 ndebug) < 0) {
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
		if (buf && ch_wire_parse_reply(buf, len, ids, &cut)) {
			if (cut && ch->o->backtrace_timeout_ms && !ids->bt.made)
				ids->bt.error = why, why = NULL;
		} else {
			ch_buildids_deinit(ids);
			ids->error = why, why = NULL;
		}
		free(why);
	} else if (buf) {
		bool cut = false;

		ch_wire_parse_reply(buf, len, ids, &cut);
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
