// SPDX-License-Identifier: MIT
/* Facts about the running kernel: why kcore cannot be opened, and where
 * the VMCOREINFO of kernels whose kcore lacks the note is.  Reads files of
 * /proc and /sys only, never the source. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source-impl.h"

bool kcore_boot_id(char out[64])
{
	FILE *b = fopen("/proc/sys/kernel/random/boot_id", "re");
	bool ok = b && fgets(out, 64, b);

	if (b)
		fclose(b);
	if (!ok)
		return false;
	out[strcspn(out, "\n")] = '\0';
	for (char *c = out; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
		      *c == '-'))
			return false;
	return out[0] != '\0';
}

/* Largest VMCOREINFO note we accept from memory. */
#define MAX_VMCOREINFO_NOTE (1u << 20)

static void sys_path(char *buf, size_t size, const char *sysroot,
		     const char *rel)
{
	snprintf(buf, size, "%s/%s", sysroot ? sysroot : "", rel);
}

/* The lockdown mode in brackets, e.g. "confidentiality", or "". */
static void lockdown_mode(const char *sysroot, char *mode, size_t size)
{
	char path[PATH_MAX], line[256];
	FILE *f;

	mode[0] = '\0';
	sys_path(path, sizeof(path), sysroot, "sys/kernel/security/lockdown");
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		char *open = strchr(line, '['), *close;

		if (open && (close = strchr(open, ']'))) {
			*close = '\0';
			snprintf(mode, size, "%s", open + 1);
		}
	}
	fclose(f);
}

struct kcore_error *kcore_explain_open_error(const char *path, int errnum,
					     bool live, const char *sysroot)
{
	char mode[64];

	if (!live) {
		if (errnum == ENOENT)
			return kcore_error_create(KCORE_ERR_NOT_FOUND, errnum,
						  path, "cannot open");
		if (errnum == EACCES || errnum == EPERM)
			return kcore_error_create(KCORE_ERR_ACCESS, errnum,
						  path, "cannot open");
		return kcore_error_create(KCORE_ERR_OS, errnum, path,
					  "cannot open");
	}
	if (errnum == ENOENT)
		return kcore_error_create(KCORE_ERR_NOT_FOUND, 0, path,
					  "this kernel has no /proc/kcore "
					  "(built without CONFIG_PROC_KCORE, "
					  "or /proc is not mounted)");
	if (errnum != EACCES && errnum != EPERM)
		return kcore_error_create(KCORE_ERR_OS, errnum, path,
					  "cannot open the kernel's memory");
	lockdown_mode(sysroot, mode, sizeof(mode));
	if (strcmp(mode, "confidentiality") == 0)
		return kcore_error_create(
			KCORE_ERR_ACCESS, errnum, path,
			"kernel lockdown in confidentiality "
			"mode forbids reading /proc/kcore "
			"(see /sys/kernel/security/lockdown)");
	if (geteuid() != 0)
		return kcore_error_create(KCORE_ERR_ACCESS, errnum, path,
					  "reading /proc/kcore needs root "
					  "(CAP_SYS_RAWIO); run as root");
	return kcore_error_create(KCORE_ERR_ACCESS, errnum, path,
				  "access denied although running as root: "
				  "CAP_SYS_RAWIO missing or a security module "
				  "forbids it");
}

struct kcore_error *kcore_vmcoreinfo_sysfs(const char *sysroot, char *path,
					   size_t path_size,
					   uint64_t *ret_paddr,
					   uint32_t *ret_size)
{
	unsigned long long paddr;
	unsigned int size;
	FILE *f;
	int n;

	*ret_size = 0;
	sys_path(path, path_size, sysroot, "sys/kernel/vmcoreinfo");
	f = fopen(path, "re");
	if (!f)
		return NULL; /* nothing to fall back to: no VMCOREINFO */
	n = fscanf(f, "%llx %x", &paddr, &size);
	fclose(f);
	if (n != 2 || size < 12 || size > MAX_VMCOREINFO_NOTE)
		return kcore_error_create(KCORE_ERR_FORMAT, 0, path,
					  "expected \"ADDRESS SIZE\" in hex");
	*ret_paddr = paddr;
	*ret_size = size;
	return NULL;
}
