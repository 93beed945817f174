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
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcoredump/notes.h"
#include "modules.h"
#include "source-impl.h"

#define DEBUG_DIR "/usr/lib/debug/.build-id"

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
		return kcore_modules_list(elf, path, true, ret, ret_count);
	err = kcore_modules_sandboxed(elf, core_fd, path, ret, ret_count);
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
