// SPDX-License-Identifier: MIT
/*
 * Kernel symbols by name, for addresses people can write under KASLR
 * (--range _stext+16M): VMCOREINFO's SYMBOL() lines, which every dump of
 * a kernel carries, then, for the live kernel, /proc/kallsyms (whose
 * addresses read as zero unless kernel.kptr_restrict lets root see them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/kcore.h"
#include "kcoredump/vmcoreinfo.h"
#include "source-impl.h"

static bool kallsyms(const char *name, uint64_t *ret, bool *hidden)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char type, sym[256];
		uint64_t addr;

		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, sym) !=
			    3 ||
		    strcmp(sym, name))
			continue;
		if (!addr) {
			*hidden = true;
			continue;
		}
		*ret = addr;
		found = true;
	}
	fclose(f);
	return found;
}

struct kcore_error *kcore_source_symbol(const struct kcore_source *src,
					const char *name, uint64_t *ret)
{
	char key[300];
	bool hidden = false;

	if (!*name || strlen(name) > 255 || strpbrk(name, "()= \t\n"))
		return kcore_error_create(KCORE_ERR_INVALID, 0, src->path,
					  "'%s' is not a symbol name", name);
	snprintf(key, sizeof(key), "SYMBOL(%s)", name);
	if (src->vmcoreinfo &&
	    kcore_vmcoreinfo_get_u64(src->vmcoreinfo, key, ret))
		return NULL;
	if (src->info.kind == KCORE_SOURCE_LIVE_KCORE &&
	    kallsyms(name, ret, &hidden))
		return NULL;
	if (hidden)
		return kcore_error_create(
			KCORE_ERR_ACCESS, 0, "/proc/kallsyms",
			"the address of '%s' is hidden (kernel.kptr_restrict; "
			"as root, 'sysctl kernel.kptr_restrict=1' shows it)",
			name);
	return kcore_error_create(
		KCORE_ERR_NOT_FOUND, 0, src->path, "no symbol '%s' in %s%s",
		name, src->vmcoreinfo ? "its VMCOREINFO" : "it (no VMCOREINFO)",
		src->info.kind == KCORE_SOURCE_LIVE_KCORE
			? " nor /proc/kallsyms"
			: " (VMCOREINFO has SYMBOL(_stext), "
			  "SYMBOL(swapper_pg_dir), SYMBOL(init_uts_ns), ...)");
}
