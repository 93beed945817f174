// SPDX-License-Identifier: MIT
/*
 * The build IDs of a stored core, as the sandboxed helper process finds
 * them with libdwfl (the list `eu-unstrip -n --core` prints).
 *
 * libdwfl would open files by the names the core gives: the link map's
 * l_name strings, NT_FILE names, paths under /usr/lib/debug.  The core's
 * process wrote those names.  Here libdwfl's find_elf callback only ever
 * hands out descriptors of the files the handler opened itself through
 * /proc/PID/map_files while the process was dumping (the very files it
 * had mapped), matched by address, and its find_debuginfo callback only
 * the build-ID debuginfo files the handler opened (below).  libdwfl's
 * own open() of link-map names (link_map.c, before any callback) fails
 * in the helper: it has no file system to open anything in, and its
 * seccomp filter refuses open().
 *
 * The backtrace (systemd-coredump's stack trace): after the modules, the
 * helper attaches the core's threads (NT_PRSTATUS) and unwinds each with
 * the CFI of the files above and of the build-ID debuginfo files the
 * handler opened under /usr/lib/debug/.build-id (named by hex digits,
 * never by a path in the core), bounded in threads, frames and time.
 */
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corehandler-internal.h"
#include "elf-parse.h"
#include "kcoredump/json.h"

/* Bounds of what the helper reports. */
#define MAX_MODULES  4096
#define MAX_NAME_LEN 4096

/* The helper is a process of its own: its one input is a global. */
static const struct ch_buildid_input *input;

static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	Dwarf_Addr start, end;

	*file_name = NULL;
	*elfp = NULL;
	if (!input ||
	    !dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL))
		return -1;
	/* libdwfl checks the build ID of what we give against the one in
	 * the core's memory and drops a file that does not match. */
	for (size_t i = 0; i < input->nmaps; i++)
		if (input->maps[i].fd >= 0 && input->maps[i].start >= start &&
		    input->maps[i].start < end)
			return dup(input->maps[i].fd);
	return -1;
}

/* Only a debuginfo file the handler opened for the module's build ID. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len;

	*debuginfo_file_name = NULL;
	if (!input || !input->ndebug)
		return -1;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len <= 0)
		return -1;
	for (size_t i = 0; i < input->ndebug; i++)
		if (input->debug[i].fd >= 0 &&
		    input->debug[i].id_len == (unsigned)len &&
		    memcmp(input->debug[i].id, bits, (size_t)len) == 0)
			return dup(input->debug[i].fd);
	return -1;
}

static int add_module(Dwfl_Module *mod, void **userdata, const char *name,
		      Dwarf_Addr start, void *arg)
{
	struct ch_buildids *ids = arg;
	struct ch_module *m;
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	Dwarf_Addr s, e;
	int len;

	if (ids->count >= MAX_MODULES)
		return DWARF_CB_ABORT;
	/* Room doubles at each power of two. */
	if (!ids->mods ||
	    (ids->count >= 16 && !(ids->count & (ids->count - 1)))) {
		size_t cap = ids->count >= 16 ? 2 * ids->count : 16;
		struct ch_module *n = realloc(ids->mods, cap * sizeof(*n));

		if (!n)
			return DWARF_CB_ABORT;
		ids->mods = n;
	}
	/* The file, if one of ours matches: its build ID if the core's
	 * memory has none. */
	dwfl_module_getelf(mod, &bias);
	m = &ids->mods[ids->count];
	memset(m, 0, sizeof(*m));
	s = start;
	e = start;
	dwfl_module_info(mod, NULL, &s, &e, NULL, NULL, NULL, NULL);
	m->start = s;
	m->end = e;
	m->name = strndup(name ? name : "", MAX_NAME_LEN);
	if (!m->name)
		return DWARF_CB_ABORT;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > 0 && (size_t)len <= sizeof(m->build_id)) {
		memcpy(m->build_id, bits, (size_t)len);
		m->build_id_len = (unsigned)len;
	}
	ids->count++;
	return DWARF_CB_OK;
}

/* ---- the backtrace ---- */

#define MAX_SYMBOL_LEN 512

struct unwind {
	Dwfl *dwfl;
	struct ch_backtrace *bt;
	struct ch_bt_thread *t;
	uint64_t deadline;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct unwind *u = arg;
	struct ch_bt_thread *t = u->t;
	struct ch_frame *f;
	Dwarf_Addr pc, adj, start = 0;
	bool activation = false;
	Dwfl_Module *mod;

	if (mono_ns() >= u->deadline) {
		u->bt->timed_out = true;
		return DWARF_CB_ABORT;
	}
	if (!dwfl_frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	if (t->nframes >= CH_BT_MAX_FRAMES) {
		t->truncated = true;
		return DWARF_CB_ABORT;
	}
	if (!t->frames) {
		t->frames = calloc(CH_BT_MAX_FRAMES, sizeof(*t->frames));
		if (!t->frames)
			return DWARF_CB_ABORT;
	}
	f = &t->frames[t->nframes++];
	f->pc = pc;
	/* A return address points after the call. */
	adj = pc - (activation ? 0 : 1);
	mod = dwfl_addrmodule(u->dwfl, adj);
	if (mod) {
		const char *name = dwfl_module_info(mod, NULL, &start, NULL,
						    NULL, NULL, NULL, NULL);
		GElf_Off off = 0;
		GElf_Sym sym;
		const char *fn = dwfl_module_addrinfo(mod, adj, &off, &sym,
						      NULL, NULL, NULL);

		if (name)
			f->module = strndup(name, MAX_NAME_LEN);
		f->module_off = pc - start;
		if (fn) {
			f->func = strndup(fn, MAX_SYMBOL_LEN);
			f->func_off = off + (activation ? 0 : 1);
		}
	}
	return DWARF_CB_OK;
}

static int thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct unwind *u = arg;
	struct ch_backtrace *bt = u->bt;
	struct ch_bt_thread *t;

	if (bt->nthreads >= CH_BT_MAX_THREADS) {
		bt->threads_truncated = true;
		return DWARF_CB_ABORT;
	}
	if (!bt->threads) {
		bt->threads = calloc(CH_BT_MAX_THREADS, sizeof(*bt->threads));
		if (!bt->threads)
			return DWARF_CB_ABORT;
	}
	t = &bt->threads[bt->nthreads++];
	t->tid = dwfl_thread_tid(thread);
	u->t = t;
	if (dwfl_thread_getframes(thread, frame_cb, u) < 0 && !t->truncated &&
	    !bt->timed_out) {
		const char *msg = dwfl_errmsg(-1);

		/* The end of the stack is no error. */
		if (msg && t->nframes < 2)
			t->error = strndup(msg, MAX_NAME_LEN);
	}
	return bt->timed_out ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static void unwind(Dwfl *dwfl, Elf *elf, uint64_t ms, struct ch_backtrace *bt)
{
	uint64_t t0 = mono_ns();
	struct unwind u = { .dwfl = dwfl,
			    .bt = bt,
			    .deadline = t0 + ms * 1000000u };

	bt->made = true;
	if (dwfl_core_file_attach(dwfl, elf) < 0) {
		const char *msg = dwfl_errmsg(-1);

		if (asprintf(&bt->error, "cannot attach the core's threads: %s",
			     msg ? msg : "?") < 0)
			bt->error = NULL;
		return;
	}
	if (dwfl_getthreads(dwfl, thread_cb, &u) < 0 && !bt->nthreads &&
	    !bt->error) {
		const char *msg = dwfl_errmsg(-1);

		bt->error = strndup(msg ? msg : "no threads", MAX_NAME_LEN);
	}
	bt->seconds = (double)(mono_ns() - t0) / 1e9;
}

void ch_backtrace_deinit(struct ch_backtrace *bt)
{
	for (size_t i = 0; i < bt->nthreads; i++) {
		struct ch_bt_thread *t = &bt->threads[i];

		for (size_t k = 0; k < t->nframes; k++) {
			free(t->frames[k].func);
			free(t->frames[k].module);
		}
		free(t->frames);
		free(t->error);
	}
	free(bt->threads);
	free(bt->error);
	memset(bt, 0, sizeof(*bt));
}

void ch_buildid_scan(const struct ch_buildid_input *in, struct ch_buildids *ret)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks callbacks = {
		.find_elf = find_elf,
		.find_debuginfo = find_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	void *img = MAP_FAILED;
	struct stat st;
	Dwfl *dwfl = NULL;
	Elf *elf = NULL;
	int n;

	input = in;
	elf_version(EV_CURRENT);
	if (in->memory) {
		if (fstat(in->core_fd, &st) < 0 || st.st_size <= 0) {
			ret->error = strdup("the first-pages image is empty");
			return;
		}
		img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			   in->core_fd, 0);
		if (img != MAP_FAILED)
			elf = elf_memory(img, (size_t)st.st_size);
	} else {
		elf = elf_begin(in->core_fd, ELF_C_READ, NULL);
	}
	if (!elf) {
		int e = elf_errno();

		ret->error =
			strdup(e ? elf_errmsg(e) : "libelf gives no reason");
		goto out;
	}
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		ret->error = strdup(dwfl_errmsg(-1));
		goto out;
	}
	n = dwfl_core_file_report(dwfl, elf, NULL);
	if (n < 0) {
		const char *msg = dwfl_errmsg(-1);

		if (asprintf(&ret->error,
			     "cannot list the modules of the "
			     "core: %s",
			     msg ? msg : "?") < 0)
			ret->error = NULL;
		goto out;
	}
	/* A mapped file the core's memory did not let libdwfl find (the
	 * first pages of a compressed core hold no link map): reported
	 * from the file itself, at the address it was mapped at. */
	for (size_t i = 0; i < in->nmaps; i++) {
		const struct ch_map *m = &in->maps[i];
		int fd;

		if (m->fd < 0 || dwfl_addrmodule(dwfl, m->start))
			continue;
		fd = dup(m->fd);
		if (fd >= 0 && !dwfl_report_elf(dwfl, m->name ? m->name : "",
						m->name ? m->name : "", fd,
						m->start, false))
			close(fd);
	}
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, add_module, ret, 0);
	if (in->on_modules)
		in->on_modules(ret, in->arg);
	if (in->backtrace_ms) {
		ret->bt.debug_files = (unsigned)in->ndebug;
		unwind(dwfl, elf, in->backtrace_ms, &ret->bt);
	}
out:
	if (dwfl)
		dwfl_end(dwfl);
	if (elf)
		elf_end(elf);
	if (img != MAP_FAILED)
		munmap(img, (size_t)st.st_size);
	input = NULL;
}

void ch_buildids_deinit(struct ch_buildids *ids)
{
	for (size_t i = 0; i < ids->count; i++)
		free(ids->mods[i].name);
	free(ids->mods);
	free(ids->error);
	ch_backtrace_deinit(&ids->bt);
	ids->mods = NULL;
	ids->count = 0;
	ids->error = NULL;
}

void ch_buildid_add_first_pages(struct ch *ch)
{
	struct ch_buildids *ids = &ch->ids;

	for (size_t k = 0; k < ch->files.count && ids->count < MAX_MODULES;
	     k++) {
		const struct kcore_file_entry *fe = &ch->files.entries[k];
		const struct ch_capture *c = NULL;
		const unsigned char *id = NULL;
		struct ch_module *m;
		uint64_t end = fe->end;
		size_t idlen;
		bool known = false;

		if (fe->offset != 0)
			continue;
		for (size_t i = 0; i < ids->count && !known; i++)
			known = ids->mods[i].start == fe->start;
		for (size_t i = 0; i < ch->phnum && !c && !known; i++)
			if (ch->ph[i].type == PT_LOAD &&
			    ch->ph[i].vaddr == fe->start && ch->caps[i].len)
				c = &ch->caps[i];
		if (known || !c)
			continue;
		idlen = ch_first_page_build_id(ch->cap + c->off, c->len, &id);
		if (!idlen || idlen > sizeof(m->build_id))
			continue;
		for (size_t j = k + 1;
		     j < ch->files.count &&
		     strcmp(ch->files.entries[j].name, fe->name) == 0;
		     j++)
			end = ch->files.entries[j].end;
		m = realloc(ids->mods, (ids->count + 1) * sizeof(*m));
		if (!m)
			break;
		ids->mods = m;
		m = &m[ids->count];
		memset(m, 0, sizeof(*m));
		m->name = strndup(fe->name, MAX_NAME_LEN);
		if (!m->name)
			break;
		memcpy(m->build_id, id, idlen);
		m->build_id_len = (unsigned)idlen;
		m->start = fe->start;
		m->end = end;
		ids->count++;
	}
}

/* The first page of the PT_LOAD at vaddr, as stored (sparse ELF: read
 * into page) or kept (compressed); NULL if there is none. */
static const unsigned char *first_page_at(struct ch *ch, uint64_t vaddr,
					  unsigned char *page, size_t *ret_len)
{
	uint64_t end = ch->cut != UINT64_MAX ? ch->cut : ch->res->stream_bytes;

	for (size_t i = 0; i < ch->phnum; i++) {
		const struct ch_phdr *ph = &ch->ph[i];
		size_t len;

		if (ph->type != PT_LOAD || ph->vaddr != vaddr || !ph->filesz)
			continue;
		if (ch->os) {
			if (!ch->caps || !ch->caps[i].len)
				return NULL;
			*ret_len = ch->caps[i].len;
			return ch->cap + ch->caps[i].off;
		}
		len = ph->filesz < CH_PAGE ? (size_t)ph->filesz : CH_PAGE;
		if (ph->offset > end || len > end - ph->offset ||
		    pread(ch->out->fd, page, len, (off_t)ph->offset) !=
			    (ssize_t)len)
			return NULL;
		*ret_len = len;
		return page;
	}
	return NULL;
}

size_t ch_buildid_debug_files(struct ch *ch, struct ch_debugfile *out,
			      size_t max)
{
	unsigned char page[CH_PAGE];
	size_t n = 0;

	for (size_t k = 0; k < ch->files.count && n < max; k++) {
		const struct kcore_file_entry *fe = &ch->files.entries[k];
		const unsigned char *first, *id = NULL;
		char path[64 + 2 * sizeof(out->id) + 16], hex[2 * 64 + 1];
		size_t len = 0, idlen;
		bool dup_id = false;
		struct stat st;
		int fd;

		if (fe->offset != 0)
			continue;
		first = first_page_at(ch, fe->start, page, &len);
		if (!first)
			continue;
		idlen = ch_first_page_build_id(first, len, &id);
		/* Debian's and Fedora's: NN/REST.debug, at least 2 bytes. */
		if (idlen < 2 || idlen > sizeof(out->id))
			continue;
		for (size_t i = 0; i < n && !dup_id; i++)
			dup_id = out[i].id_len == idlen &&
				 memcmp(out[i].id, id, idlen) == 0;
		if (dup_id)
			continue;
		kcore_hex(id, idlen, hex);
		snprintf(path, sizeof(path),
			 "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
			 hex + 2);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			continue;
		}
		memcpy(out[n].id, id, idlen);
		out[n].id_len = (unsigned)idlen;
		out[n].fd = fd;
		n++;
	}
	return n;
}

/* ---- package notes (https://systemd.io/ELF_PACKAGE_METADATA/) ---- */

#ifndef NT_FDO_PACKAGING_METADATA
#define NT_FDO_PACKAGING_METADATA 0xcafe1a7e
#endif

struct pj {
	const char *p, *end;
};

static void pj_ws(struct pj *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* A JSON string at j->p, decoded (kcore_json_unescape()), or NULL. */
static char *pj_string(struct pj *j)
{
	return kcore_json_unescape(&j->p, j->end);
}

static void package_free(struct ch_package *p)
{
	free(p->type);
	free(p->name);
	free(p->version);
	free(p->arch);
	free(p->os_cpe);
	free(p->debuginfod);
	memset(p, 0, sizeof(*p));
}

bool ch_package_parse(const char *json, size_t len, struct ch_package *p)
{
	struct pj j = { json, json + len };

	memset(p, 0, sizeof(*p));
	/* The note's JSON ends with its NUL (and padding). */
	while (j.end > j.p && j.end[-1] == '\0')
		j.end--;
	if (memchr(j.p, '\0', (size_t)(j.end - j.p)))
		return false;
	pj_ws(&j);
	if (j.p >= j.end || *j.p++ != '{')
		return false;
	pj_ws(&j);
	if (j.p < j.end && *j.p == '}') {
		j.p++;
	} else {
		for (;;) {
			char *key, *val, **slot = NULL;

			pj_ws(&j);
			key = pj_string(&j);
			if (!key)
				goto bad;
			pj_ws(&j);
			if (j.p >= j.end || *j.p++ != ':') {
				free(key);
				goto bad;
			}
			pj_ws(&j);
			val = pj_string(&j);
			if (!val) {
				free(key);
				goto bad;
			}
			if (strcmp(key, "type") == 0)
				slot = &p->type;
			else if (strcmp(key, "name") == 0)
				slot = &p->name;
			else if (strcmp(key, "version") == 0)
				slot = &p->version;
			else if (strcmp(key, "architecture") == 0)
				slot = &p->arch;
			else if (strcmp(key, "osCpe") == 0)
				slot = &p->os_cpe;
			else if (strcmp(key, "debugInfoUrl") == 0)
				slot = &p->debuginfod;
			free(key);
			if (slot && !*slot)
				*slot = val;
			else
				free(val);
			pj_ws(&j);
			if (j.p < j.end && *j.p == ',') {
				j.p++;
				continue;
			}
			if (j.p < j.end && *j.p == '}') {
				j.p++;
				break;
			}
			goto bad;
		}
	}
	pj_ws(&j);
	if (j.p != j.end || (!p->name && !p->type))
		goto bad;
	return true;
bad:
	package_free(p);
	return false;
}

/* The package note of the ELF file whose first page is page. */
static bool first_page_package(const unsigned char *page, size_t len,
			       struct ch_package *ret)
{
	size_t descsz;
	const unsigned char *json =
		kcore_elf_find_note(page, len, "FDO", NT_FDO_PACKAGING_METADATA,
				    0, CH_MAX_PACKAGE_JSON, &descsz);

	return json && ch_package_parse((const char *)json, descsz, ret);
}

void ch_buildid_packages(struct ch *ch)
{
	const struct ch_buildids *ids = &ch->ids;
	unsigned char page[CH_PAGE];

	for (size_t m = 0; m < ids->count; m++) {
		const unsigned char *first = NULL;
		size_t len = 0;
		struct ch_package pkg, *n;

		for (size_t i = 0; i < ch->phnum && !first; i++) {
			const struct ch_phdr *ph = &ch->ph[i];
			uint64_t end = ch->cut != UINT64_MAX
					       ? ch->cut
					       : ch->res->stream_bytes;
			ssize_t r;

			if (ph->type != PT_LOAD ||
			    ph->vaddr != ids->mods[m].start || !ph->filesz)
				continue;
			if (ch->os) {
				if (ch->caps && ch->caps[i].len) {
					first = ch->cap + ch->caps[i].off;
					len = ch->caps[i].len;
				}
				continue;
			}
			/* A sparse ELF: the page as stored. */
			len = ph->filesz < CH_PAGE ? (size_t)ph->filesz
						   : CH_PAGE;
			if (ph->offset > end || len > end - ph->offset)
				continue;
			r = pread(ch->out->fd, page, len, (off_t)ph->offset);
			if (r == (ssize_t)len)
				first = page;
		}
		if (!first || len > CH_PAGE ||
		    !first_page_package(first, len, &pkg))
			continue;
		n = realloc(ch->pkgs, (ch->npkgs + 1) * sizeof(*n));
		if (!n) {
			package_free(&pkg);
			break;
		}
		ch->pkgs = n;
		pkg.module = m;
		ch->pkgs[ch->npkgs++] = pkg;
	}
}

void ch_packages_deinit(struct ch *ch)
{
	for (size_t i = 0; i < ch->npkgs; i++)
		package_free(&ch->pkgs[i]);
	free(ch->pkgs);
	ch->pkgs = NULL;
	ch->npkgs = 0;
}
