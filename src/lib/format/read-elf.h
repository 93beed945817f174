/* SPDX-License-Identifier: MIT */
/* Internal to the ELF reader: read-elf.c's use of read-elf-notes.c. */
#ifndef KCOREDUMP_READ_ELF_H
#define KCOREDUMP_READ_ELF_H

#include <stdbool.h>

#include "kcoredump/kcore.h"

/* libelf's last error, or "libelf gives no reason" when it set none. */
const char *kcore_elf_reason(void);
/* Read, check and keep the notes of PT_NOTE segment seg. */
struct kcore_error *kcore_elf_read_notes(struct kcore_source *src,
					 const struct kcore_segment *seg);
/* VMCOREINFO from its note, when there is one. */
struct kcore_error *kcore_elf_parse_vmcoreinfo(struct kcore_source *src);
/* The source's kind, from its notes (live: /proc/kcore). */
void kcore_elf_decide_kind(struct kcore_source *src, bool live);
/* A process core's pid, signal and name, from its notes. */
void kcore_elf_fill_process_info(struct kcore_source *src);
/* Whether the dump says it is incomplete (our metadata, its trailer). */
void kcore_elf_read_completeness(struct kcore_source *src);
/* VMCOREINFO where /sys/kernel/vmcoreinfo (under sysroot) says it is in
 * RAM, for kernels before v4.19, whose /proc/kcore had no note of it. */
struct kcore_error *kcore_elf_vmcoreinfo_sysfs(struct kcore_source *src,
					       const char *sysroot);

#endif
