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
 * had mapped), matched by address, and its find_debuginfo callback finds
 * nothing.  libdwfl's own open() of link-map names (link_map.c, before
 * any callback) fails in the helper: it has no file system to open
 * anything in, and its seccomp filter refuses open().
 */
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corehandler-internal.h"

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

static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	*debuginfo_file_name = NULL;
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
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, add_module, ret, 0);
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
