// SPDX-License-Identifier: MIT
/*
 * The modules of a process core as libdwfl reports them (the list
 * `eu-unstrip -n --core` prints): in the sandbox with callbacks that open
 * nothing, or with libdwfl's standard ones (modules.c says when); and
 * freeing a list.
 */
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "modules.h"

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
struct kcore_error *kcore_modules_list(Elf *elf, const char *path,
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
