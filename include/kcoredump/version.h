/* SPDX-License-Identifier: MIT */
/* How this libkcore was built: static or shared, for which machine, and
 * the versions of the libraries it carries (static) or loaded (shared). */
#ifndef KCOREDUMP_VERSION_H
#define KCOREDUMP_VERSION_H

#include <stdbool.h>
#include <stddef.h>

struct kcore_library_version {
	const char *name;
	const char *version;
};

/* True when the program was linked with -static (KCOREDUMP_STATIC). */
bool kcore_build_is_static(void);

/* The machine the code was compiled for: "x86_64", "aarch64", ... */
const char *kcore_build_machine(void);

/* The C library's version ("2.36"). */
const char *kcore_build_libc_version(void);

/* The libraries in use, in a fixed order; *ret_count entries. */
const struct kcore_library_version *kcore_library_versions(size_t *ret_count);

#endif
