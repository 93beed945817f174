// SPDX-License-Identifier: MIT
/*
 * Modules mapped in a process core, as libdwfl sees them (the list
 * `eu-unstrip -n --core` prints).
 *
 * The core's process wrote its link map: libdwfl open()s each l_name
 * (link_map.c, before any callback), and its standard callbacks open
 * NT_FILE names and the files those lead to.  A FIFO there hangs us; a
 * file such as /etc/shadow is opened as root and handed to libelf.  So,
 * as in the core handler, libdwfl runs in a forked process that may open
 * nothing (seccomp; as nobody when we are root), and reports only what
 * the core's memory holds.  The files for the build IDs it reports are
 * then looked up by us under /usr/lib/debug/.build-id, keyed by the
 * build ID and checked against it, never by a name from the core.
 * KCORE_MODULES_OPEN_FILES (info --open-mapped-files) opens the names as
 * eu-unstrip does, and only in the caller's own cores.
 */
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bytes.h"
#include "kcoredump/notes.h"
#include "sandbox.h"
#include "source-impl.h"

/* Bounds of what the sandboxed listing reports. */
#define MAX_MODULES  65536u
#define MAX_NAME_LEN 4096u
#define MAX_ID_LEN   64u
#define MAX_REPLY    (64u << 20)
#define REPLY_MAGIC  0x4b434d4cu /* "KCML" */
/* The listing's CPU time, at most: libdwfl takes milliseconds on a
 * real core. */
#define LIST_CPU_SECONDS 60
#define DEBUG_DIR	 "/usr/lib/debug/.build-id"

struct module_list {
	struct kcore_module *mods;
	size_t count;
	size_t cap;
	bool nomem;
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int add_module(Dwfl_Module *mod, void **userdata, const char *name,
		      Dwarf_Addr start, void *arg)
{
	struct module_list *list = arg;
	struct kcore_module *m;
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	const char *mainfile = NULL, *debugfile = NULL;
	Dwarf_Addr end;
	int len;

	if (list->count == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 16;
		struct kcore_module *mods =
			realloc(list->mods, cap * sizeof(*mods));

		if (!mods) {
			list->nomem = true;
			return DWARF_CB_ABORT;
		}
		list->mods = mods;
		list->cap = cap;
	}
	/* Look for the file on this system, as eu-unstrip does. */
	Elf *elf = dwfl_module_getelf(mod, &bias);

	dwfl_module_getdwarf(mod, &bias);
	dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, &mainfile,
			 &debugfile);
	m = &list->mods[list->count];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->name = dup_or_null(name ? name : "");
	m->file = dup_or_null(mainfile);
	m->elf_in_core = elf && !mainfile;
	m->debug_file = dup_or_null(debugfile);
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > 0) {
		m->build_id = malloc((size_t)len);
		if (m->build_id) {
			memcpy(m->build_id, bits, (size_t)len);
			m->build_id_len = (size_t)len;
			m->build_id_vaddr = vaddr;
		}
	}
	list->count++;
	if (!m->name || (mainfile && !m->file) ||
	    (debugfile && !m->debug_file) || (len > 0 && !m->build_id)) {
		list->nomem = true;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

/* libdwfl's callbacks in the sandbox: no file is ours to give. */
static int find_no_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		       Dwarf_Addr base, char **file_name, Elf **elfp)
{
	*file_name = NULL;
	*elfp = NULL;
	return -1;
}

static int find_no_debuginfo(Dwfl_Module *mod, void **userdata,
			     const char *modname, Dwarf_Addr base,
			     const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc,
			     char **debuginfo_file_name)
{
	*debuginfo_file_name = NULL;
	return -1;
}

/* The modules of a process core open as elf; open_files: with libdwfl's
 * standard callbacks, which open the files the core names. */
static struct kcore_error *list_modules(Elf *elf, const char *path,
					bool open_files,
					struct kcore_module **ret,
					size_t *ret_count)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks standard = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	static const Dwfl_Callbacks closed = {
		.find_elf = find_no_elf,
		.find_debuginfo = find_no_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	struct module_list list = { 0 };
	Dwfl *dwfl;
	int n;

	*ret = NULL;
	*ret_count = 0;
	dwfl = dwfl_begin(open_files ? &standard : &closed);
	if (!dwfl)
		return &kcore_error_nomem;
	n = dwfl_core_file_report(dwfl, elf, NULL);
	if (n < 0) {
		struct kcore_error *err = kcore_error_create(
			KCORE_ERR_FORMAT, 0, path,
			"cannot list the modules of the core: %s",
			dwfl_errmsg(-1));

		dwfl_end(dwfl);
		return err;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, add_module, &list, 0);
	dwfl_end(dwfl);
	if (list.nomem) {
		kcore_modules_free(list.mods, list.count);
		return &kcore_error_nomem;
	}
	*ret = list.mods;
	*ret_count = list.count;
	return NULL;
}

/* ---- the sandboxed listing ---- */

struct buf {
	unsigned char *p;
	size_t len, cap;
	bool nomem;
};

static void buf_put(struct buf *b, const void *data, size_t len)
{
	if (b->nomem)
		return;
	if (b->cap - b->len < len) {
		size_t cap = b->cap ? b->cap : 4096;
		unsigned char *p;

		while (cap - b->len < len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->nomem = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void buf_put_le(struct buf *b, uint64_t v, unsigned size)
{
	unsigned char le[8];

	kcore_store_le(le, v, size);
	buf_put(b, le, size);
}

static void buf_put_str(struct buf *b, const void *s, size_t len, size_t max)
{
	if (len > max)
		len = max;
	buf_put_le(b, len, 4);
	buf_put(b, s, len);
}

/* What the sandbox sends back: an error or the modules. */
static void encode_reply(struct buf *b, const char *error,
			 const struct kcore_module *mods, size_t count)
{
	buf_put_le(b, REPLY_MAGIC, 4);
	buf_put_str(b, error ? error : "", error ? strlen(error) : 0,
		    MAX_NAME_LEN);
	if (count > MAX_MODULES)
		count = MAX_MODULES;
	buf_put_le(b, count, 4);
	for (size_t i = 0; i < count; i++) {
		const struct kcore_module *m = &mods[i];

		buf_put_le(b, m->start, 8);
		buf_put_le(b, m->end, 8);
		buf_put_le(b, m->build_id_vaddr, 8);
		buf_put_le(b, m->elf_in_core, 4);
		buf_put_str(b, m->build_id, m->build_id_len, MAX_ID_LEN);
		buf_put_str(b, m->name, strlen(m->name), MAX_NAME_LEN);
	}
}

struct reader {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t get_le(struct reader *r, unsigned size)
{
	uint64_t v;

	if (r->bad || (size_t)(r->end - r->p) < size) {
		r->bad = true;
		return 0;
	}
	v = kcore_load(r->p, size, false);
	r->p += size;
	return v;
}

/* A counted string of at most max bytes, or NULL (bad set). */
static const unsigned char *get_str(struct reader *r, size_t max,
				    size_t *ret_len)
{
	uint64_t len = get_le(r, 4);
	const unsigned char *s = r->p;

	if (r->bad || len > max || len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return NULL;
	}
	r->p += len;
	*ret_len = (size_t)len;
	return s;
}

/* The sandbox's reply, every length checked. */
static struct kcore_error *decode_reply(const unsigned char *p, size_t len,
					const char *path,
					struct kcore_module **ret,
					size_t *ret_count)
{
	struct reader r = { p, p + len, false };
	struct kcore_module *mods = NULL;
	const unsigned char *s;
	size_t slen, n = 0;
	uint64_t count;

	if (get_le(&r, 4) != REPLY_MAGIC)
		return kcore_error_create(KCORE_ERR_OS, 0, path,
					  "the module listing (libdwfl, "
					  "sandboxed) gave %s",
					  len ? "a malformed reply"
					      : "no reply");
	s = get_str(&r, MAX_NAME_LEN, &slen);
	if (s && slen)
		return kcore_error_create(KCORE_ERR_FORMAT, 0, path, "%.*s",
					  (int)slen, (const char *)s);
	count = get_le(&r, 4);
	if (!r.bad && count > MAX_MODULES)
		r.bad = true;
	if (!r.bad && count) {
		mods = calloc((size_t)count, sizeof(*mods));
		if (!mods)
			return &kcore_error_nomem;
	}
	for (; !r.bad && n < count; n++) {
		struct kcore_module *m = &mods[n];

		m->start = get_le(&r, 8);
		m->end = get_le(&r, 8);
		m->build_id_vaddr = get_le(&r, 8);
		m->elf_in_core = get_le(&r, 4) & 1;
		s = get_str(&r, MAX_ID_LEN, &slen);
		if (s && slen) {
			m->build_id = malloc(slen);
			if (!m->build_id)
				break;
			memcpy(m->build_id, s, slen);
			m->build_id_len = slen;
		}
		s = get_str(&r, MAX_NAME_LEN, &slen);
		if (!s)
			break;
		m->name = strndup((const char *)s, slen);
		if (!m->name)
			break;
	}
	if (r.bad || n < count) {
		bool nomem = !r.bad;

		kcore_modules_free(mods, count);
		return nomem ? &kcore_error_nomem
			     : kcore_error_create(KCORE_ERR_OS, 0, path,
						  "the module listing "
						  "(libdwfl, sandboxed) gave "
						  "a malformed reply");
	}
	*ret = mods;
	*ret_count = n;
	return NULL;
}

/* Close every descriptor but a and b (and standard error, for the
 * sanitizers' reports). */
static void close_all_but(int a, int b)
{
	int keep[3] = { 2, a < b ? a : b, a < b ? b : a };
	unsigned lo = 0;

	for (int i = 0; i <= 3; i++) {
		unsigned hi = i < 3 ? (unsigned)keep[i] : ~0u;

		if (hi > lo && syscall(SYS_close_range, lo, hi - 1, 0) < 0) {
			unsigned top = hi == ~0u ? 65536 : hi;

			for (unsigned fd = lo; fd < top; fd++)
				close((int)fd);
		}
		if (i < 3)
			lo = (unsigned)keep[i] + 1;
	}
}

static void write_reply(int fd, const struct buf *b)
{
	size_t done = 0;

	while (!b->nomem && done < b->len) {
		ssize_t w = write(fd, b->p + done, b->len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
}

/* The forked listing: nobody (if we are root), no new privileges, no
 * open(), bounded CPU and memory; writes its reply to wfd.  Never
 * returns. */
static void sandbox_main(Elf *elf, int core_fd, const char *path, int wfd)
{
	struct kcore_module *mods = NULL;
	struct kcore_error *err = NULL;
	struct buf b = { 0 };
	size_t count = 0;
	char *why = NULL;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	close_all_but(core_fd, wfd);
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) < 0 ||
	     setresgid(KCORE_NOBODY, KCORE_NOBODY, KCORE_NOBODY) < 0 ||
	     setresuid(KCORE_NOBODY, KCORE_NOBODY, KCORE_NOBODY) < 0 ||
	     geteuid() != KCORE_NOBODY))
		why = "cannot become nobody";
	kcore_sandbox_rlimits(LIST_CPU_SECONDS);
	if (!why && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		     !kcore_sandbox_seccomp()))
		why = "no seccomp sandbox for libdwfl on this system";
	if (!why)
		err = list_modules(elf, path, false, &mods, &count);
	if (err) {
		why = kcore_error_describe(err);
		if (!why)
			why = "out of memory";
	}
	encode_reply(&b, why, mods, count);
	write_reply(wfd, &b);
	_exit(0);
}

/* List the modules of elf (read through core_fd) in a forked sandbox. */
static struct kcore_error *sandboxed_modules(Elf *elf, int core_fd,
					     const char *path,
					     struct kcore_module **ret,
					     size_t *ret_count)
{
	struct kcore_error *err = NULL;
	unsigned char *reply = NULL;
	size_t len = 0, cap = 0;
	int fds[2], status = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot create a pipe");
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		sandbox_main(elf, core_fd, path, fds[1]);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return kcore_error_create(KCORE_ERR_OS, errno, NULL,
					  "cannot fork the module listing");
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			unsigned char *p;

			cap = cap ? 2 * cap : 1 << 16;
			p = cap <= MAX_REPLY ? realloc(reply, cap) : NULL;
			if (!p) {
				err = cap <= MAX_REPLY
					      ? &kcore_error_nomem
					      : kcore_error_create(
							KCORE_ERR_OS, 0, path,
							"the module listing's "
							"reply is over %u MiB",
							MAX_REPLY >> 20);
				break;
			}
			reply = p;
		}
		n = read(fds[0], reply + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fds[0]);
	if (err)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!err && WIFSIGNALED(status))
		err = kcore_error_create(
			KCORE_ERR_FORMAT, 0, path,
			"the module listing (libdwfl, sandboxed) was killed "
			"by signal %d%s",
			WTERMSIG(status),
			WTERMSIG(status) == SIGXCPU ? " (its CPU time limit)"
			: WTERMSIG(status) == SIGSYS
				? " (a system call its sandbox forbids)"
				: "");
	if (!err)
		err = decode_reply(reply, len, path, ret, ret_count);
	free(reply);
	return err;
}

/* Whether the ELF file open as fd has the GNU build ID id. */
static bool has_build_id(int fd, const unsigned char *id, size_t len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	const void *bits;
	bool same = false;

	if (elf) {
		ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);

		same = n > 0 && (size_t)n == len && memcmp(bits, id, len) == 0;
		elf_end(elf);
	}
	return same;
}

/* DEBUG_DIR/xx/rest[suffix] if it is a regular file with build ID id. */
static char *build_id_file(const unsigned char *id, size_t len,
			   const char *suffix)
{
	char path[sizeof(DEBUG_DIR) + 2 * MAX_ID_LEN + 16];
	struct stat st;
	bool found;
	int fd, at;

	at = snprintf(path, sizeof(path), "%s/%02x/", DEBUG_DIR, id[0]);
	for (size_t i = 1; i < len; i++)
		at += snprintf(path + at, sizeof(path) - (size_t)at, "%02x",
			       id[i]);
	snprintf(path + at, sizeof(path) - (size_t)at, "%s", suffix);
	/* O_NONBLOCK: not even a FIFO planted there could stall us. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	found = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		has_build_id(fd, id, len);
	close(fd);
	return found ? strdup(path) : NULL;
}

/* The files of this system for the modules' build IDs, as libdwfl's
 * build-ID lookup finds them: by build ID only. */
static void find_build_id_files(struct kcore_module *mods, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		struct kcore_module *m = &mods[i];

		if (m->build_id_len < 2 || m->build_id_len > MAX_ID_LEN)
			continue;
		m->file = build_id_file(m->build_id, m->build_id_len, "");
		m->debug_file =
			build_id_file(m->build_id, m->build_id_len, ".debug");
	}
}

/* The modules of elf (read through core_fd), by the rule above. */
static struct kcore_error *elf_modules(Elf *elf, int core_fd, const char *path,
				       bool open_files,
				       struct kcore_module **ret,
				       size_t *ret_count)
{
	struct kcore_error *err;

	if (open_files)
		return list_modules(elf, path, true, ret, ret_count);
	err = sandboxed_modules(elf, core_fd, path, ret, ret_count);
	if (!err)
		find_build_id_files(*ret, *ret_count);
	return err;
}

struct kcore_error *kcore_source_check_process_uid(struct kcore_source *src,
						   uid_t uid)
{
	bool have_ps = false, other = false;
	uint64_t who = 0;

	for (size_t i = 0; i < src->nnotes; i++) {
		const struct kcore_note *note = &src->notes[i];

		if (strcmp(note->name, "CORE") != 0)
			continue;
		if (note->type == NT_PRPSINFO) {
			struct kcore_prpsinfo ps;
			struct kcore_error *err =
				kcore_note_prpsinfo(src, note, &ps);

			if (err)
				return err;
			if (ps.uid != uid) {
				who = ps.uid;
				other = true;
			}
			have_ps = true;
		} else if (note->type == NT_AUXV) {
			struct kcore_auxv_entry *av;
			size_t n;
			struct kcore_error *err =
				kcore_note_auxv(src, note, &av, &n);

			if (err)
				return err;
			for (size_t k = 0; k < n; k++)
				if ((av[k].type == AT_UID ||
				     av[k].type == AT_EUID) &&
				    av[k].value != uid) {
					who = av[k].value;
					other = true;
				}
			free(av);
		}
	}
	if (!have_ps)
		return kcore_error_create(
			KCORE_ERR_ACCESS, 0, src->path,
			"no NT_PRPSINFO says whose process this core is: the "
			"paths it names are not opened");
	if (other)
		return kcore_error_create(
			KCORE_ERR_ACCESS, 0, src->path,
			"a core of uid %llu's process, not the caller's (uid "
			"%u): the paths it names are not opened",
			(unsigned long long)who, (unsigned)uid);
	return NULL;
}

/*
 * KCORE_MODULES_OPEN_FILES only for the caller's own cores: a file the
 * caller owns, of a process that ran as the caller (NT_PRPSINFO, and
 * the auxiliary vector's AT_UID and AT_EUID where there is one).
 */
static struct kcore_error *check_own_core(struct kcore_source *src)
{
	uid_t me = getuid();
	struct stat st;

	if (fstat(src->fd, &st) != 0)
		return kcore_error_create(KCORE_ERR_OS, errno, src->path,
					  "cannot stat");
	if (st.st_uid != me)
		return kcore_error_create(
			KCORE_ERR_ACCESS, 0, src->path,
			"the file is uid %u's, not the caller's (uid %u): the "
			"paths a core names are opened only in one's own "
			"cores",
			(unsigned)st.st_uid, (unsigned)me);
	return kcore_source_check_process_uid(src, me);
}

/* Copy the data of segment seg into fd at its offset, holes left out. */
static struct kcore_error *copy_segment(struct kcore_source *src,
					const struct kcore_segment *seg, int fd,
					unsigned char *buf, size_t len)
{
	uint64_t pos = seg->offset, end = seg->offset + seg->filesz;

	while (pos < end) {
		uint64_t data, data_end;
		struct kcore_error *err =
			kcore_source_next_data(src, pos, end, &data, &data_end);

		if (err)
			return err;
		if (data >= end)
			break;
		for (pos = data; pos < data_end;) {
			size_t n = data_end - pos < len
					   ? (size_t)(data_end - pos)
					   : len;

			err = kcore_source_pread(src, buf, n, pos);
			if (err)
				return err;
			if (pwrite(fd, buf, n, (off_t)pos) != (ssize_t)n)
				return kcore_error_create(KCORE_ERR_OS, errno,
							  NULL,
							  "cannot write a "
							  "memfd");
			pos += n;
		}
	}
	return NULL;
}

/*
 * libdwfl reads a core's memory through libelf, which reads a file or a
 * buffer, not a .zst/.xz stream.  For such a source, hand it a sparse
 * in-memory file (memfd) with the headers, the notes and the data of the
 * segments it reads, through the random-access reader: the file-backed
 * ones (ELF headers and build IDs of the mapped files, the dynamic
 * linker's data), the vDSO and anonymous areas of at most 1 MiB (the
 * dynamic linker's allocations).  The cost follows those segments' data,
 * not the core's.
 */
static struct kcore_error *stream_modules(struct kcore_source *src,
					  bool open_files,
					  struct kcore_module **ret,
					  size_t *ret_count)
{
	enum { CHUNK = 1 << 20, SMALL_AREA = 1 << 20 };
	struct kcore_error *err = NULL;
	unsigned char *buf = malloc(CHUNK);
	int fd = memfd_create("kcoredump-modules", MFD_CLOEXEC);
	Elf *elf = NULL;

	if (!buf || fd < 0) {
		err = buf ? kcore_error_create(KCORE_ERR_OS, errno, NULL,
					       "cannot create a memfd")
			  : &kcore_error_nomem;
		goto out;
	}
	if (pwrite(fd, src->image, src->image_size, 0) !=
		    (ssize_t)src->image_size ||
	    ftruncate(fd, (off_t)src->info.file_size) != 0) {
		err = kcore_error_create(KCORE_ERR_OS, errno, NULL,
					 "cannot write a memfd");
		goto out;
	}
	for (size_t i = 0; !err && i < src->nsegments; i++) {
		const struct kcore_segment *seg = &src->segments[i];

		/* The mapped files and the vDSO; small anonymous areas,
		 * where the dynamic linker keeps its link_map list (stacks
		 * and large areas hold none of it). */
		if (seg->type == PT_LOAD && (seg->cls == KCORE_CLASS_FILE ||
					     seg->cls == KCORE_CLASS_VDSO ||
					     ((seg->cls == KCORE_CLASS_ANON ||
					       seg->cls == KCORE_CLASS_HEAP) &&
					      seg->filesz <= SMALL_AREA)))
			err = copy_segment(src, seg, fd, buf, CHUNK);
	}
	if (err)
		goto out;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		int e = elf_errno();

		err = kcore_error_create(KCORE_ERR_FORMAT, 0, src->path,
					 "cannot list the modules of the "
					 "core: %s",
					 e ? elf_errmsg(e)
					   : "libelf gives no reason");
		goto out;
	}
	err = elf_modules(elf, fd, src->path, open_files, ret, ret_count);
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

struct kcore_error *kcore_source_modules(struct kcore_source *src,
					 unsigned flags,
					 struct kcore_module **ret,
					 size_t *ret_count)
{
	bool open_files = flags & KCORE_MODULES_OPEN_FILES;

	*ret = NULL;
	*ret_count = 0;
	if (src->info.kind != KCORE_SOURCE_PROCESS_CORE)
		return NULL;
	if (open_files) {
		struct kcore_error *err = check_own_core(src);

		if (err)
			return err;
	}
	if (src->image)
		return stream_modules(src, open_files, ret, ret_count);
	return elf_modules(src->elf, src->fd, src->path, open_files, ret,
			   ret_count);
}

void kcore_modules_free(struct kcore_module *mods, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(mods[i].name);
		free(mods[i].file);
		free(mods[i].debug_file);
		free(mods[i].build_id);
	}
	free(mods);
}
