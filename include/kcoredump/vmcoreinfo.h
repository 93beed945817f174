/* SPDX-License-Identifier: MIT */
/*
 * VMCOREINFO: the kernel's "KEY=VALUE\n" description of its own layout.
 */
#ifndef KCOREDUMP_VMCOREINFO_H
#define KCOREDUMP_VMCOREINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kcore_vmcoreinfo_entry {
	const char *key;
	const char *value;
};

struct kcore_vmcoreinfo;

/* Parse text (need not be NUL-terminated).  Lines without '=' are kept
 * with an empty value so nothing is lost. */
struct kcore_error *kcore_vmcoreinfo_parse(const char *text, size_t len,
					   struct kcore_vmcoreinfo **ret);
void kcore_vmcoreinfo_destroy(struct kcore_vmcoreinfo *vi);

size_t kcore_vmcoreinfo_count(const struct kcore_vmcoreinfo *vi);
const struct kcore_vmcoreinfo_entry *
kcore_vmcoreinfo_entry(const struct kcore_vmcoreinfo *vi, size_t i);
/* Raw text as parsed. */
const char *kcore_vmcoreinfo_text(const struct kcore_vmcoreinfo *vi,
				  size_t *ret_len);

/* Value of the last line with this key, or NULL. */
const char *kcore_vmcoreinfo_get(const struct kcore_vmcoreinfo *vi,
				 const char *key);
/*
 * Numeric value.  SYMBOL(), OFFSET(), SIZE(), LENGTH(), KERNELOFFSET,
 * PAGE_OFFSET-style values are hexadecimal without prefix; NUMBER() values
 * are decimal unless they carry "0x".  This follows how the kernel prints
 * each kind.
 */
bool kcore_vmcoreinfo_get_u64(const struct kcore_vmcoreinfo *vi,
			      const char *key, uint64_t *ret);

#ifdef __cplusplus
}
#endif

#endif
