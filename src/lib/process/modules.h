/* SPDX-License-Identifier: MIT */
/*
 * Internal to the modules of a process core (process/): modules.c (the
 * entry points, the build-ID files, a stream's memfd), modules-dwfl.c
 * (libdwfl's listing) and modules-sandbox.c (that listing in a forked
 * sandbox, its reply encoded and checked) share.
 */
#ifndef KCOREDUMP_MODULES_H
#define KCOREDUMP_MODULES_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>

#include "kcoredump/source.h"

/* The longest build ID the sandboxed listing reports. */
#define MAX_ID_LEN 64u

/* The modules of a process core open as elf; open_files: with libdwfl's
 * standard callbacks, which open the files the core names. */
struct kcore_error *kcore_modules_list(Elf *elf, const char *path,
				       bool open_files,
				       struct kcore_module **ret,
				       size_t *ret_count);
/* List the modules of elf (read through core_fd) in a forked sandbox. */
struct kcore_error *kcore_modules_sandboxed(Elf *elf, int core_fd,
					    const char *path,
					    struct kcore_module **ret,
					    size_t *ret_count);

#endif
