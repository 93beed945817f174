/* SPDX-License-Identifier: MIT */
/*
 * Decoders for the notes of ELF cores: NT_PRSTATUS, NT_PRPSINFO,
 * NT_SIGINFO, NT_AUXV, NT_FILE.  Note contents are untrusted: every
 * decoder checks sizes and returns a KCORE_ERR_FORMAT error naming the
 * note's offset rather than reading past its end.
 */
#ifndef KCOREDUMP_NOTES_H
#define KCOREDUMP_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "source.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "NT_PRSTATUS" etc. for name "CORE"/"LINUX"/"VMCOREINFO", and
 * "KCOREDUMP_METADATA" for our own note; else NULL. */
const char *kcore_note_type_name(const char *name, uint32_t type);

#define KCORE_MAX_REGS 34

struct kcore_timeval {
	int64_t sec;
	int64_t usec;
};

struct kcore_prstatus {
	int32_t signo, code, err;
	int16_t cursig;
	uint64_t sigpend, sighold;
	int32_t pid, ppid, pgrp, sid;
	struct kcore_timeval utime, stime, cutime, cstime;
	unsigned nregs; /* 0 if the machine's register layout is unknown */
	const char *const *reg_names;
	uint64_t regs[KCORE_MAX_REGS];
	int32_t fpvalid;
};

struct kcore_prpsinfo {
	char state; /* numeric pr_state */
	char sname; /* state letter */
	char zomb;
	int8_t nice;
	uint64_t flag;
	uint32_t uid, gid;
	int32_t pid, ppid, pgrp, sid;
	char fname[17];
	char psargs[81];
};

struct kcore_siginfo {
	int32_t signo, err, code;
	bool has_addr; /* SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP */
	uint64_t addr;
	bool has_sender; /* SI_USER/SI_TKILL/SI_QUEUE: pid and uid sent it */
	int32_t pid;
	uint32_t uid;
};

struct kcore_auxv_entry {
	uint64_t type;
	uint64_t value;
};

struct kcore_file_entry {
	uint64_t start;
	uint64_t end;
	uint64_t offset;  /* bytes */
	const char *name; /* points into the note */
};

struct kcore_file_table {
	uint64_t page_size;
	size_t count;
	struct kcore_file_entry *entries;
};

struct kcore_error *kcore_note_prstatus(const struct kcore_source *src,
					const struct kcore_note *note,
					struct kcore_prstatus *ret);
struct kcore_error *kcore_note_prpsinfo(const struct kcore_source *src,
					const struct kcore_note *note,
					struct kcore_prpsinfo *ret);
struct kcore_error *kcore_note_siginfo(const struct kcore_source *src,
				       const struct kcore_note *note,
				       struct kcore_siginfo *ret);
/* *ret is malloc()ed; the AT_NULL terminator is not included. */
struct kcore_error *kcore_note_auxv(const struct kcore_source *src,
				    const struct kcore_note *note,
				    struct kcore_auxv_entry **ret,
				    size_t *ret_count);
/* ret->entries is malloc()ed; names point into the note. */
struct kcore_error *kcore_note_file(const struct kcore_source *src,
				    const struct kcore_note *note,
				    struct kcore_file_table *ret);

/*
 * kcoredump's metadata note (name "KCOREDUMP"): its "key=value" lines in
 * order.  Keys may repeat ("segment", "unreadable"); values are the
 * note's untrusted text (escape them for a terminal).  Keys and values
 * point into text; kcore_metadata_deinit() frees both.  A note of more
 * than KCORE_METADATA_MAX_FIELDS lines is refused (KCORE_ERR_FORMAT): our
 * writer puts about 40 lines and one per segment.
 */
#define KCORE_METADATA_MAX_FIELDS (1u << 20)
struct kcore_metadata_field {
	const char *key;
	const char *value;
};
struct kcore_metadata {
	char *text;
	struct kcore_metadata_field *fields;
	size_t nfields;
};
struct kcore_error *kcore_note_metadata(const struct kcore_source *src,
					const struct kcore_note *note,
					struct kcore_metadata *ret);
void kcore_metadata_deinit(struct kcore_metadata *m);
/* The first value of key, or NULL. */
const char *kcore_metadata_get(const struct kcore_metadata *m, const char *key);

/*
 * When a dump read address addr, from its note's time map ("read_time="
 * lines, kcoredump(8) METADATA NOTE): the segment whose vaddr range holds
 * addr (physical: whose paddr range), and the cell of it that holds addr,
 * read from start_us to end_us after read_start.  False when no segment
 * holds addr or its cell has no time (the dump predates the time map, or
 * the bytes were not read: holes, excluded pages).
 */
struct kcore_read_when {
	size_t segment;
	uint64_t seg_vaddr, seg_offset;	   /* addr's place in the segment */
	uint64_t cell_offset, cell_length; /* the cell holding it */
	uint64_t start_us, end_us;
	const char *read_start; /* the note's read_start (UTC), or NULL */
};
bool kcore_metadata_read_time(const struct kcore_metadata *m, uint64_t addr,
			      bool physical, struct kcore_read_when *ret);

const char *kcore_auxv_name(uint64_t type);
/* Whether an auxv value is an address (printed in hex). */
bool kcore_auxv_is_address(uint64_t type);
const char *kcore_signal_name(int sig);

#ifdef __cplusplus
}
#endif

#endif
