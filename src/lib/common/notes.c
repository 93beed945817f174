// SPDX-License-Identifier: MIT
/*
 * Note decoders.  Layouts are the Linux ones (include/uapi/linux/elfcore.h,
 * the arch's user_regs_struct) for 64-bit targets and for 32-bit i386 and
 * arm (also what x86_64 and arm64 write for their compat tasks:
 * compat_elf_prstatus, compat_siginfo); every read is bounds-checked
 * against the note's descriptor size.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "bytes.h"
#include "metanote.h"
#include "source-impl.h"

#ifndef NT_TASKSTRUCT
#define NT_TASKSTRUCT 4
#endif

/* i386 user_regs_struct (also x86_64's user_regs_struct32). */
static const char *const i386_regs[] = {
	"ebx", "ecx", "edx",	  "esi", "edi", "ebp",	  "eax", "ds", "es",
	"fs",  "gs",  "orig_eax", "eip", "cs",	"eflags", "esp", "ss",
};

/* arm's 18 words of elf_gregset_t (also arm64's compat_elf_gregset_t). */
static const char *const arm_regs[] = {
	"r0", "r1",  "r2", "r3", "r4", "r5", "r6", "r7",   "r8",
	"r9", "r10", "fp", "ip", "sp", "lr", "pc", "cpsr", "orig_r0",
};

_Static_assert(sizeof(i386_regs) / sizeof(i386_regs[0]) == 17,
	       "i386 user_regs_struct has 17 registers");
_Static_assert(sizeof(arm_regs) / sizeof(arm_regs[0]) == 18,
	       "arm elf_gregset_t has 18 registers");

const char *kcore_note_type_name(const char *name, uint32_t type)
{
	if (strcmp(name, "VMCOREINFO") == 0)
		return "VMCOREINFO";
	if (strcmp(name, KCORE_META_NOTE_NAME) == 0)
		return type == KCORE_META_NOTE_TYPE ? "KCOREDUMP_METADATA"
						    : NULL;
	if (strcmp(name, "GNU") == 0) {
		switch (type) {
		case NT_GNU_BUILD_ID:
			return "NT_GNU_BUILD_ID";
		case NT_GNU_PROPERTY_TYPE_0:
			return "NT_GNU_PROPERTY_TYPE_0";
		}
		return NULL;
	}
	if (strcmp(name, "CORE") != 0 && strcmp(name, "LINUX") != 0)
		return NULL;
	switch (type) {
	case NT_PRSTATUS:
		return "NT_PRSTATUS";
	case NT_PRFPREG:
		return "NT_PRFPREG";
	case NT_PRPSINFO:
		return "NT_PRPSINFO";
	case NT_TASKSTRUCT:
		return "NT_TASKSTRUCT";
	case NT_AUXV:
		return "NT_AUXV";
	case NT_SIGINFO:
		return "NT_SIGINFO";
	case NT_FILE:
		return "NT_FILE";
	case NT_PRXFPREG:
		return "NT_PRXFPREG";
	case NT_X86_XSTATE:
		return "NT_X86_XSTATE";
	case NT_ARM_TLS:
		return "NT_ARM_TLS";
	case NT_ARM_HW_BREAK:
		return "NT_ARM_HW_BREAK";
	case NT_ARM_HW_WATCH:
		return "NT_ARM_HW_WATCH";
	case NT_ARM_SYSTEM_CALL:
		return "NT_ARM_SYSTEM_CALL";
	case NT_ARM_SVE:
		return "NT_ARM_SVE";
	case NT_ARM_PAC_MASK:
		return "NT_ARM_PAC_MASK";
	case NT_ARM_TAGGED_ADDR_CTRL:
		return "NT_ARM_TAGGED_ADDR_CTRL";
	case NT_386_TLS:
		return "NT_386_TLS";
	}
	return NULL;
}

static struct kcore_error *too_small(const struct kcore_source *src,
				     const struct kcore_note *note,
				     const char *what, size_t need)
{
	return kcore_error_create_at(
		KCORE_ERR_FORMAT, 0, src->path, note->offset,
		"%s note at offset 0x%" PRIx64 " has 0x%zx bytes, needs 0x%zx",
		what, note->offset, note->descsz, need);
}

/*
 * The layout of the notes: 64-bit, or the 32-bit one of i386 and arm
 * (the only 32-bit machines whose cores the kernels we read write).
 */
static struct kcore_error *need_known(const struct kcore_source *src,
				      const struct kcore_note *note,
				      const char *what)
{
	if (src->info.elf_class == 64 || src->info.machine == EM_386 ||
	    src->info.machine == EM_ARM)
		return NULL;
	return kcore_error_create_at(
		KCORE_ERR_UNSUPPORTED, 0, src->path, note->offset,
		"%s layout of 32-bit cores of this machine is not decoded",
		what);
}

#define LD(p, size) kcore_load((p), (size), src->info.big_endian)

/* The size of the kernel's long (and of a pointer) in the core. */
static unsigned core_word(const struct kcore_source *src)
{
	return src->info.elf_class == 64 ? 8 : 4;
}

static size_t align_up(size_t off, unsigned word)
{
	return (off + word - 1) & ~(size_t)(word - 1);
}

/*
 * elf_prstatus, for both word sizes (the 32-bit one is also x86_64's and
 * arm64's compat_elf_prstatus): the siginfo head (three ints), cursig
 * (a short), sigpend and sighold (longs), pid, ppid, pgrp and sid (ints),
 * four timevals of two longs, the registers (longs), then pr_fpvalid.
 * Each long is aligned to the word: 64-bit puts the registers at 112,
 * 32-bit at 72.
 */
struct kcore_error *kcore_note_prstatus(const struct kcore_source *src,
					const struct kcore_note *note,
					struct kcore_prstatus *ret)
{
	const unsigned char *d = note->desc;
	struct kcore_prstatus st = { 0 };
	struct kcore_error *err = need_known(src, note, "NT_PRSTATUS");
	unsigned w = core_word(src);
	size_t sigpend = align_up(14, w), ids = sigpend + 2 * w;
	size_t times = align_up(ids + 16, w), regs = times + 8 * w, need;

	if (err)
		return err;
	/* A 64-bit task's registers are its architecture table's; the
	 * 32-bit ones (also compat tasks') are the process cores' own. */
	if (src->arch) {
		st.nregs = w == 8 ? src->arch->nregs : 0;
		st.reg_names = src->arch->regs;
	}
	switch (src->info.machine) {
	case EM_386:
		st.nregs = w == 4 ? 17 : 0;
		st.reg_names = i386_regs;
		break;
	case EM_ARM:
		st.nregs = w == 4 ? 18 : 0;
		st.reg_names = arm_regs;
		break;
	}
	need = regs + (size_t)w * st.nregs;
	if (note->descsz < need)
		return too_small(src, note, "NT_PRSTATUS", need);
	st.signo = (int32_t)LD(d, 4);
	st.code = (int32_t)LD(d + 4, 4);
	st.err = (int32_t)LD(d + 8, 4);
	st.cursig = (int16_t)LD(d + 12, 2);
	st.sigpend = LD(d + sigpend, w);
	st.sighold = LD(d + sigpend + w, w);
	st.pid = (int32_t)LD(d + ids, 4);
	st.ppid = (int32_t)LD(d + ids + 4, 4);
	st.pgrp = (int32_t)LD(d + ids + 8, 4);
	st.sid = (int32_t)LD(d + ids + 12, 4);
	struct kcore_timeval *tv[] = { &st.utime, &st.stime, &st.cutime,
				       &st.cstime };
	for (unsigned i = 0; i < 4; i++) {
		/* Sign-extend a 32-bit long; a 64-bit one is already. */
		uint64_t sec = LD(d + times + 2 * w * i, w);
		uint64_t usec = LD(d + times + 2 * w * i + w, w);

		tv[i]->sec = w == 8 ? (int64_t)sec : (int32_t)sec;
		tv[i]->usec = w == 8 ? (int64_t)usec : (int32_t)usec;
	}
	for (unsigned i = 0; i < st.nregs; i++)
		st.regs[i] = LD(d + regs + (size_t)w * i, w);
	if (st.nregs && note->descsz >= need + 4)
		st.fpvalid = (int32_t)LD(d + need, 4);
	*ret = st;
	return NULL;
}

static void copy_cstr(char *dst, const unsigned char *src, size_t len)
{
	size_t n = strnlen((const char *)src, len);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/*
 * elf_prpsinfo, for both word sizes: four chars, pr_flag (a long), uid
 * and gid (16-bit in the 32-bit layout of i386 and arm, and in the compat
 * one, 32-bit otherwise), pid, ppid, pgrp and sid (ints), then the
 * 16-byte fname and the 80-byte psargs: 136 bytes, or 124.
 */
struct kcore_error *kcore_note_prpsinfo(const struct kcore_source *src,
					const struct kcore_note *note,
					struct kcore_prpsinfo *ret)
{
	const unsigned char *d = note->desc;
	struct kcore_prpsinfo ps = { 0 };
	struct kcore_error *err = need_known(src, note, "NT_PRPSINFO");
	unsigned w = core_word(src), idw = w / 2;
	size_t flag = align_up(4, w), uid = flag + w, ids = uid + 2 * idw;
	size_t fname = ids + 16, need = fname + 16 + 80;

	if (err)
		return err;
	if (note->descsz < need)
		return too_small(src, note, "NT_PRPSINFO", need);
	ps.state = (char)d[0];
	ps.sname = (char)d[1];
	ps.zomb = (char)d[2];
	ps.nice = (int8_t)d[3];
	ps.flag = LD(d + flag, w);
	ps.uid = (uint32_t)LD(d + uid, idw);
	ps.gid = (uint32_t)LD(d + uid + idw, idw);
	ps.pid = (int32_t)LD(d + ids, 4);
	ps.ppid = (int32_t)LD(d + ids + 4, 4);
	ps.pgrp = (int32_t)LD(d + ids + 8, 4);
	ps.sid = (int32_t)LD(d + ids + 12, 4);
	copy_cstr(ps.fname, d + fname, 16);
	copy_cstr(ps.psargs, d + fname + 16, 80);
	*ret = ps;
	return NULL;
}

struct kcore_error *kcore_note_siginfo(const struct kcore_source *src,
				       const struct kcore_note *note,
				       struct kcore_siginfo *ret)
{
	const unsigned char *d = note->desc;
	struct kcore_siginfo si = { 0 };
	struct kcore_error *err = need_known(src, note, "NT_SIGINFO");

	if (err)
		return err;
	if (note->descsz < 128)
		return too_small(src, note, "NT_SIGINFO", 128);
	si.signo = (int32_t)LD(d, 4);
	si.err = (int32_t)LD(d + 4, 4);
	si.code = (int32_t)LD(d + 8, 4);
	/* The union follows the three ints, aligned to the word: at 16 or
	 * 12 (a pointer in it sets its alignment). */
	unsigned word = core_word(src);
	const unsigned char *u = d + align_up(12, word);
	switch (si.signo) {
	case SIGSEGV:
	case SIGBUS:
	case SIGILL:
	case SIGFPE:
	case SIGTRAP:
		if (si.code > 0) { /* raised by the kernel: a fault */
			si.has_addr = true;
			si.addr = LD(u, word);
		}
		break;
	}
	if (!si.has_addr && (si.code == SI_USER || si.code == SI_TKILL ||
			     si.code == SI_QUEUE)) {
		si.has_sender = true;
		si.pid = (int32_t)LD(u, 4);
		si.uid = (uint32_t)LD(u + 4, 4);
	}
	*ret = si;
	return NULL;
}

struct kcore_error *kcore_note_auxv(const struct kcore_source *src,
				    const struct kcore_note *note,
				    struct kcore_auxv_entry **ret,
				    size_t *ret_count)
{
	unsigned word = core_word(src);
	size_t max = note->descsz / (2 * word), n = 0;
	struct kcore_auxv_entry *v = calloc(max ? max : 1, sizeof(*v));

	if (!v)
		return &kcore_error_nomem;
	for (size_t i = 0; i < max; i++) {
		uint64_t type = LD(note->desc + 2 * word * i, word);

		if (type == AT_NULL)
			break;
		v[n].type = type;
		v[n].value = LD(note->desc + 2 * word * i + word, word);
		n++;
	}
	*ret = v;
	*ret_count = n;
	return NULL;
}

struct kcore_error *kcore_note_file(const struct kcore_source *src,
				    const struct kcore_note *note,
				    struct kcore_file_table *ret)
{
	unsigned word = core_word(src);
	const unsigned char *d = note->desc;
	size_t size = note->descsz;
	uint64_t count, page_size, table;
	struct kcore_file_entry *e;
	size_t pos;

	if (size < 2 * word)
		return too_small(src, note, "NT_FILE", 2 * word);
	count = LD(d, word);
	page_size = LD(d + word, word);
	if (__builtin_mul_overflow(count, 3 * (uint64_t)word, &table) ||
	    table > size - 2 * word)
		return kcore_error_create_at(
			KCORE_ERR_FORMAT, 0, src->path, note->offset,
			"NT_FILE note at offset 0x%" PRIx64 " claims %" PRIu64
			" entries but has room for %zu",
			note->offset, count, (size - 2 * word) / (3 * word));
	e = calloc(count ? count : 1, sizeof(*e));
	if (!e)
		return &kcore_error_nomem;
	pos = 2 * word + table;
	for (uint64_t i = 0; i < count; i++) {
		const unsigned char *t = d + 2 * word + 3 * word * i;
		const char *name = (const char *)d + pos;
		size_t len;

		if (pos >= size ||
		    (len = strnlen(name, size - pos)) == size - pos) {
			free(e);
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, note->offset,
				"NT_FILE note at offset 0x%" PRIx64
				": name %" PRIu64 " of %" PRIu64
				" is missing or not terminated",
				note->offset, i, count);
		}
		e[i].start = LD(t, word);
		e[i].end = LD(t + word, word);
		e[i].offset = LD(t + 2 * word, word) * page_size;
		e[i].name = name;
		pos += len + 1;
	}
	ret->page_size = page_size;
	ret->count = count;
	ret->entries = e;
	return NULL;
}

struct auxv_name {
	uint64_t type;
	const char *name;
	bool address;
};

static const struct auxv_name auxv_names[] = {
	{ AT_IGNORE, "AT_IGNORE", false },
	{ AT_EXECFD, "AT_EXECFD", false },
	{ AT_PHDR, "AT_PHDR", true },
	{ AT_PHENT, "AT_PHENT", false },
	{ AT_PHNUM, "AT_PHNUM", false },
	{ AT_PAGESZ, "AT_PAGESZ", false },
	{ AT_BASE, "AT_BASE", true },
	{ AT_FLAGS, "AT_FLAGS", true },
	{ AT_ENTRY, "AT_ENTRY", true },
	{ AT_NOTELF, "AT_NOTELF", false },
	{ AT_UID, "AT_UID", false },
	{ AT_EUID, "AT_EUID", false },
	{ AT_GID, "AT_GID", false },
	{ AT_EGID, "AT_EGID", false },
	{ AT_PLATFORM, "AT_PLATFORM", true },
	{ AT_HWCAP, "AT_HWCAP", true },
	{ AT_CLKTCK, "AT_CLKTCK", false },
	{ AT_SECURE, "AT_SECURE", false },
	{ AT_BASE_PLATFORM, "AT_BASE_PLATFORM", true },
	{ AT_RANDOM, "AT_RANDOM", true },
	{ AT_HWCAP2, "AT_HWCAP2", true },
	{ AT_EXECFN, "AT_EXECFN", true },
	{ AT_SYSINFO, "AT_SYSINFO", true },
	{ AT_SYSINFO_EHDR, "AT_SYSINFO_EHDR", true },
	{ AT_MINSIGSTKSZ, "AT_MINSIGSTKSZ", false },
	{ 27, "AT_RSEQ_FEATURE_SIZE", false },
	{ 28, "AT_RSEQ_ALIGN", false },
	{ 29, "AT_HWCAP3", true },
	{ 30, "AT_HWCAP4", true },
};

static const struct auxv_name *find_auxv(uint64_t type)
{
	for (size_t i = 0; i < sizeof(auxv_names) / sizeof(auxv_names[0]); i++)
		if (auxv_names[i].type == type)
			return &auxv_names[i];
	return NULL;
}

const char *kcore_auxv_name(uint64_t type)
{
	const struct auxv_name *a = find_auxv(type);

	return a ? a->name : NULL;
}

bool kcore_auxv_is_address(uint64_t type)
{
	const struct auxv_name *a = find_auxv(type);

	return a ? a->address : true;
}

const char *kcore_signal_name(int sig)
{
	static const char *const names[] = {
		[SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",
		[SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
		[SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
		[SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
		[SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1",
		[SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
		[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM",
		[SIGTERM] = "SIGTERM", [SIGSTKFLT] = "SIGSTKFLT",
		[SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",
		[SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP",
		[SIGTTIN] = "SIGTTIN", [SIGTTOU] = "SIGTTOU",
		[SIGURG] = "SIGURG",   [SIGXCPU] = "SIGXCPU",
		[SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM",
		[SIGPROF] = "SIGPROF", [SIGWINCH] = "SIGWINCH",
		[SIGIO] = "SIGIO",     [SIGPWR] = "SIGPWR",
		[SIGSYS] = "SIGSYS",
	};

	if (sig > 0 && (size_t)sig < sizeof(names) / sizeof(names[0]))
		return names[sig];
	return NULL;
}

/*
 * Our metadata note: "key=value" lines (kcoredump(8) METADATA NOTE).  The
 * text is copied (up to its first NUL) and split in place; a line without
 * '=' makes the note undecodable rather than being skipped, so that what
 * is shown is all the note says; so does a line past the
 * KCORE_METADATA_MAX_FIELDS'th.
 */
struct kcore_error *kcore_note_metadata(const struct kcore_source *src,
					const struct kcore_note *note,
					struct kcore_metadata *ret)
{
	struct kcore_metadata m = { 0 };
	size_t len, cap = 0, line = 0;
	char *p;

	if (strcmp(note->name, KCORE_META_NOTE_NAME) ||
	    note->type != KCORE_META_NOTE_TYPE)
		return kcore_error_create_at(
			KCORE_ERR_INVALID, 0, src->path, note->offset,
			"note at offset 0x%" PRIx64 " is not kcoredump's "
			"metadata note",
			note->offset);
	len = strnlen((const char *)note->desc, note->descsz);
	m.text = malloc(len + 1);
	if (!m.text)
		return &kcore_error_nomem;
	memcpy(m.text, note->desc, len);
	m.text[len] = '\0';
	for (p = m.text; *p;) {
		char *end = strchr(p, '\n'), *eq;

		if (end)
			*end = '\0';
		line++;
		eq = strchr(p, '=');
		if (!eq || eq == p) {
			kcore_metadata_deinit(&m);
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, note->offset,
				"metadata note at offset 0x%" PRIx64
				": line %zu is not key=value",
				note->offset, line);
		}
		if (m.nfields == KCORE_METADATA_MAX_FIELDS) {
			kcore_metadata_deinit(&m);
			return kcore_error_create_at(
				KCORE_ERR_FORMAT, 0, src->path, note->offset,
				"metadata note at offset 0x%" PRIx64
				": more than %u lines",
				note->offset, KCORE_METADATA_MAX_FIELDS);
		}
		if (m.nfields == cap) {
			size_t ncap = cap ? 2 * cap : 32;
			struct kcore_metadata_field *f =
				realloc(m.fields, ncap * sizeof(*f));

			if (!f) {
				kcore_metadata_deinit(&m);
				return &kcore_error_nomem;
			}
			m.fields = f;
			cap = ncap;
		}
		*eq = '\0';
		m.fields[m.nfields].key = p;
		m.fields[m.nfields].value = eq + 1;
		m.nfields++;
		if (!end)
			break;
		p = end + 1;
	}
	*ret = m;
	return NULL;
}

void kcore_metadata_deinit(struct kcore_metadata *m)
{
	free(m->fields);
	free(m->text);
	m->fields = NULL;
	m->text = NULL;
	m->nfields = 0;
}

const char *kcore_metadata_get(const struct kcore_metadata *m, const char *key)
{
	for (size_t i = 0; i < m->nfields; i++)
		if (!strcmp(m->fields[i].key, key))
			return m->fields[i].value;
	return NULL;
}

/* A segment line's "vaddr=", "size=" or "paddr=" hex value. */
static bool meta_hex(const char *line, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);

	for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
		char *end;

		if ((p != line && p[-1] != ' ') || p[klen] != '=')
			continue;
		errno = 0;
		*ret = strtoull(p + klen + 1, &end, 16);
		return !errno && end != p + klen + 1;
	}
	return false;
}

bool kcore_metadata_read_time(const struct kcore_metadata *m, uint64_t addr,
			      bool physical, struct kcore_read_when *ret)
{
	bool found = false;

	memset(ret, 0, sizeof(*ret));
	ret->read_start = kcore_metadata_get(m, "read_start");
	/* The segment: "N vaddr=0x... size=0x... [paddr=0x...] ...". */
	for (size_t i = 0; i < m->nfields && !found; i++) {
		const char *v = m->fields[i].value;
		uint64_t base, size;
		char *end;

		if (strcmp(m->fields[i].key, "segment") != 0)
			continue;
		errno = 0;
		ret->segment = (size_t)strtoull(v, &end, 10);
		if (errno || end == v || *end != ' ' ||
		    !meta_hex(v, physical ? "paddr" : "vaddr", &base) ||
		    !meta_hex(v, "size", &size) ||
		    !meta_hex(v, "vaddr", &ret->seg_vaddr))
			continue;
		if (addr >= base && addr - base < size) {
			ret->seg_offset = addr - base;
			found = true;
		}
	}
	if (!found)
		return false;
	for (size_t i = 0; i < m->nfields; i++) {
		unsigned long long seg, off, len, t0, t1;

		if (strcmp(m->fields[i].key, "read_time") != 0 ||
		    sscanf(m->fields[i].value,
			   "segment=%llu offset=%llx length=%llx start_us=%llu "
			   "end_us=%llu",
			   &seg, &off, &len, &t0, &t1) != 5 ||
		    seg != ret->segment || ret->seg_offset < off ||
		    ret->seg_offset - off >= len)
			continue;
		ret->cell_offset = off;
		ret->cell_length = len;
		ret->start_us = t0;
		ret->end_us = t1;
		return true;
	}
	return false;
}
