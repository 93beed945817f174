/* SPDX-License-Identifier: MIT */
/*
 * mkcore: write ELF core files (kernel vmcores, kcore look-alikes, process
 * cores and deliberately broken variants) from the small text specs in
 * tests/fixtures/.  Everything is encoded by hand from <elf.h> constants so
 * that any field can be made wrong on purpose; the spec language is
 * documented in tests/fixtures/README.md.
 *
 * Usage: mkcore SPEC OUTPUT
 *        mkcore --describe SPEC
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "pattern.h"

#define PAGE	       4096ULL
#define MAX_TOKENS     64
#define MAX_NOTE_SEGS  16
#define MAX_EHDR_OVR   32
#define CHUNK	       (1U << 20)
#define ALIGN_UP(x, a) (((x) + (a)-1) & ~((uint64_t)(a)-1))
#define ARRAY_SIZE(a)  (sizeof(a) / sizeof((a)[0]))

enum fill { FILL_PATTERN, FILL_ZERO, FILL_BYTE, FILL_RANDOM };

/* One `data` or `hole` line of a segment, or one `append`. */
struct piece {
	bool hole;
	enum fill fill;
	uint64_t arg; /* seed or byte */
	uint64_t size;
};

struct seg {
	uint32_t type, flags;
	uint64_t vaddr, paddr, align, memsz, offset, filesz, pattern_at;
	bool has_memsz, has_offset, has_pattern_at;
	uint64_t repeat, vstep, pstep;
	struct piece *pieces;
	size_t npieces;
};

/* A generic program header, encoded for the target class at write time. */
struct phdr {
	uint64_t type, flags, offset, vaddr, paddr, filesz, memsz, align;
};

struct buf {
	unsigned char *p;
	size_t len, cap;
};

struct ovr {
	uint64_t index; /* phdr index, unused for ehdr/shdr */
	int field;
	uint64_t value;
};

struct spec {
	const char *path;
	int line;
	int class; /* ELFCLASS32 / ELFCLASS64 */
	int data;  /* ELFDATA2LSB / ELFDATA2MSB */
	uint64_t machine, type, default_align;
	struct buf notes[MAX_NOTE_SEGS];
	size_t nnotesegs, cur_note;
	struct seg *segs;
	size_t nsegs;
	uint64_t pending_repeat, pending_vstep, pending_pstep;
	struct ovr ehdr_ovr[MAX_EHDR_OVR];
	size_t nehdr_ovr;
	struct ovr shdr_ovr[8];
	size_t nshdr_ovr;
	struct ovr *phdr_ovr;
	size_t nphdr_ovr;
	struct piece *appends;
	size_t nappends;
	uint64_t truncate;
	bool has_truncate;
};

/* Computed layout. */
struct layout {
	uint64_t ehsize, phentsize, phoff, phnum, shoff, shentsize;
	uint64_t note_off[MAX_NOTE_SEGS];
	bool xnum;
	struct phdr *ph;
	uint64_t end; /* file size before appends/truncate */
};

static struct spec S;

static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mkcore: ");
	if (S.path && S.line)
		fprintf(stderr, "%s:%d: ", S.path, S.line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

/* ---- numbers and names ------------------------------------------------ */

struct name_val {
	const char *name;
	uint64_t val;
};

static const struct name_val machines[] = {
	{ "x86_64", EM_X86_64 }, { "aarch64", EM_AARCH64 }, { "i386", EM_386 },
	{ "arm", EM_ARM },	 { "ppc64", EM_PPC64 },	    { "s390", EM_S390 },
	{ "riscv", EM_RISCV },	 { "none", EM_NONE },
};

static const struct name_val etypes[] = {
	{ "none", ET_NONE }, { "rel", ET_REL },	  { "exec", ET_EXEC },
	{ "dyn", ET_DYN },   { "core", ET_CORE },
};

static const struct name_val ptypes[] = {
	{ "null", PT_NULL },	 { "load", PT_LOAD }, { "dynamic", PT_DYNAMIC },
	{ "interp", PT_INTERP }, { "note", PT_NOTE }, { "phdr", PT_PHDR },
};

static const struct name_val signals[] = {
	{ "SIGHUP", 1 },   { "SIGINT", 2 },   { "SIGQUIT", 3 },
	{ "SIGILL", 4 },   { "SIGTRAP", 5 },  { "SIGABRT", 6 },
	{ "SIGBUS", 7 },   { "SIGFPE", 8 },   { "SIGKILL", 9 },
	{ "SIGUSR1", 10 }, { "SIGSEGV", 11 }, { "SIGUSR2", 12 },
	{ "SIGPIPE", 13 }, { "SIGALRM", 14 }, { "SIGTERM", 15 },
	{ "SIGSTOP", 19 }, { "SIGSYS", 31 },
};

static const struct name_val auxv_names[] = {
	{ "AT_NULL", 0 },
	{ "AT_IGNORE", 1 },
	{ "AT_EXECFD", 2 },
	{ "AT_PHDR", 3 },
	{ "AT_PHENT", 4 },
	{ "AT_PHNUM", 5 },
	{ "AT_PAGESZ", 6 },
	{ "AT_BASE", 7 },
	{ "AT_FLAGS", 8 },
	{ "AT_ENTRY", 9 },
	{ "AT_NOTELF", 10 },
	{ "AT_UID", 11 },
	{ "AT_EUID", 12 },
	{ "AT_GID", 13 },
	{ "AT_EGID", 14 },
	{ "AT_PLATFORM", 15 },
	{ "AT_HWCAP", 16 },
	{ "AT_CLKTCK", 17 },
	{ "AT_SECURE", 23 },
	{ "AT_BASE_PLATFORM", 24 },
	{ "AT_RANDOM", 25 },
	{ "AT_HWCAP2", 26 },
	{ "AT_RSEQ_FEATURE_SIZE", 27 },
	{ "AT_RSEQ_ALIGN", 28 },
	{ "AT_EXECFN", 31 },
	{ "AT_SYSINFO_EHDR", 33 },
	{ "AT_MINSIGSTKSZ", 51 },
};

static bool lookup(const struct name_val *t, size_t n, const char *s,
		   uint64_t *ret)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcasecmp(t[i].name, s)) {
			*ret = t[i].val;
			return true;
		}
	}
	return false;
}

/* One term: 0x.., decimal, with an optional K/M/G/T/P (binary) suffix. */
static bool parse_term(const char **sp, uint64_t *ret)
{
	const char *s = *sp;
	char *end;
	uint64_t v;

	if (!((*s >= '0' && *s <= '9')))
		return false;
	errno = 0;
	/* decimal unless 0x: a leading zero does not mean octal here */
	v = strtoull(s, &end,
		     s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	case 't':
	case 'T':
		v <<= 40;
		end++;
		break;
	case 'p':
	case 'P':
		v <<= 50;
		end++;
		break;
	default:
		break;
	}
	*sp = end;
	*ret = v;
	return true;
}

/*
 * Numbers: terms joined by + and -, an optional leading minus (so -1 is
 * all ones, as p_paddr of kcore's vmalloc segment).  Arithmetic wraps.
 */
static bool try_num(const char *s, uint64_t *ret)
{
	uint64_t v = 0, t;
	bool neg = false;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (!parse_term(&s, &v))
		return false;
	if (neg)
		v = -v;
	while (*s == '+' || *s == '-') {
		char op = *s++;

		if (!parse_term(&s, &t))
			return false;
		v = op == '+' ? v + t : v - t;
	}
	if (*s)
		return false;
	*ret = v;
	return true;
}

static uint64_t num(const char *s)
{
	uint64_t v;

	if (!try_num(s, &v))
		die("bad number '%s'", s);
	return v;
}

static uint64_t num_or_name(const char *s, const struct name_val *t, size_t n,
			    const char *what)
{
	uint64_t v;

	if (try_num(s, &v) || lookup(t, n, s, &v))
		return v;
	die("unknown %s '%s'", what, s);
}

static uint64_t parse_flags(const char *s)
{
	uint64_t v = 0;

	if (try_num(s, &v))
		return v;
	for (; *s; s++) {
		switch (*s) {
		case 'r':
			v |= PF_R;
			break;
		case 'w':
			v |= PF_W;
			break;
		case 'x':
			v |= PF_X;
			break;
		case '-':
			break;
		default:
			die("bad flags character '%c'", *s);
		}
	}
	return v;
}

static void parse_fill(const char *k, const char *v, struct piece *p)
{
	if (!strcmp(k, "pattern")) {
		p->fill = FILL_PATTERN;
		p->arg = v ? num(v) : 0;
	} else if (!strcmp(k, "zero")) {
		p->fill = FILL_ZERO;
	} else if (!strcmp(k, "byte")) {
		p->fill = FILL_BYTE;
		p->arg = v ? num(v) & 0xff : 0;
	} else if (!strcmp(k, "random")) {
		p->fill = FILL_RANDOM;
		p->arg = v ? num(v) : 0;
	} else {
		die("unknown fill '%s' (pattern=SEED, zero, byte=N, "
		    "random=SEED)",
		    k);
	}
}

/* ---- tokenizer --------------------------------------------------------- */

struct tok {
	char *key;
	char *val; /* NULL for a bare word */
};

/*
 * Split a line into words; double quotes group spaces into a word and are
 * dropped.  '#' outside quotes starts a comment.  Modifies line in place.
 */
static size_t tokenize(char *line, struct tok *t)
{
	size_t n = 0;
	char *r = line, *w = line;

	for (;;) {
		bool quoted = false;
		char *start;

		while (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r')
			r++;
		if (!*r || *r == '#')
			break;
		if (n == MAX_TOKENS)
			die("too many words on one line");
		start = w;
		t[n].val = NULL;
		while (*r &&
		       (quoted || (*r != ' ' && *r != '\t' && *r != '\n' &&
				   *r != '\r' && *r != '#'))) {
			if (*r == '"') {
				quoted = !quoted;
				r++;
				continue;
			}
			if (*r == '=' && !t[n].val && !quoted) {
				*w++ = '\0';
				r++;
				t[n].val = w;
				continue;
			}
			*w++ = *r++;
		}
		if (quoted)
			die("unterminated quote");
		if (*r)
			r++;
		*w++ = '\0';
		t[n].key = start;
		n++;
	}
	return n;
}

static const char *need_val(const struct tok *t)
{
	if (!t->val)
		die("'%s' needs a value", t->key);
	return t->val;
}

/* ---- target encoding --------------------------------------------------- */

static void put(unsigned char *p, size_t size, uint64_t v)
{
	for (size_t i = 0; i < size; i++) {
		size_t shift = S.data == ELFDATA2MSB ? size - 1 - i : i;

		p[i] = (unsigned char)(v >> (8 * shift));
	}
}

static size_t word_size(void)
{
	return S.class == ELFCLASS64 ? 8 : 4;
}

static void buf_add(struct buf *b, const void *p, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2 + 256;
		b->p = xrealloc(b->p, b->cap);
	}
	if (p)
		memcpy(b->p + b->len, p, len);
	else
		memset(b->p + b->len, 0, len);
	b->len += len;
}

static void buf_pad(struct buf *b, size_t align)
{
	buf_add(b, NULL, ALIGN_UP(b->len, align) - b->len);
}

static void fill_buf(unsigned char *p, size_t len, enum fill fill, uint64_t arg,
		     uint64_t addr, uint64_t *rng)
{
	switch (fill) {
	case FILL_PATTERN:
		kc_pattern_fill(p, addr, len, arg);
		break;
	case FILL_ZERO:
		memset(p, 0, len);
		break;
	case FILL_BYTE:
		memset(p, (int)arg, len);
		break;
	case FILL_RANDOM:
		for (size_t i = 0; i < len; i++) {
			/* splitmix64: reproducible, address-independent */
			uint64_t z = (*rng += 0x9e3779b97f4a7c15ULL);

			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
			p[i] = (unsigned char)(z ^ (z >> 31));
		}
		break;
	}
}

/* ---- notes ------------------------------------------------------------- */

struct note_hdr_ovr {
	bool namesz_set, descsz_set;
	uint64_t namesz, descsz;
};

static struct buf *cur_notes(void)
{
	if (S.nnotesegs <= S.cur_note)
		S.nnotesegs = S.cur_note + 1;
	return &S.notes[S.cur_note];
}

/* Append one note: 4-byte words, name and desc padded to 4 (Linux cores). */
static void add_note(const char *name, size_t namelen, uint32_t type,
		     const void *desc, size_t desclen,
		     const struct note_hdr_ovr *o)
{
	struct buf *b = cur_notes();
	unsigned char hdr[12];

	put(hdr, 4, o && o->namesz_set ? o->namesz : namelen);
	put(hdr + 4, 4, o && o->descsz_set ? o->descsz : desclen);
	put(hdr + 8, 4, type);
	buf_add(b, hdr, 12);
	buf_add(b, name, namelen);
	buf_pad(b, 4);
	buf_add(b, desc, desclen);
	buf_pad(b, 4);
}

static void add_core_note(uint32_t type, const void *desc, size_t len)
{
	add_note("CORE", 5, type, desc, len, NULL);
}

static const char *const regs_x86_64[] = {
	"r15",	   "r14",      "r13", "r12", "rbp",    "rbx", "r11",
	"r10",	   "r9",       "r8",  "rax", "rcx",    "rdx", "rsi",
	"rdi",	   "orig_rax", "rip", "cs",  "eflags", "rsp", "ss",
	"fs_base", "gs_base",  "ds",  "es",  "fs",     "gs",
};

static const char *const regs_i386[] = {
	"ebx", "ecx", "edx",	  "esi", "edi", "ebp",	  "eax", "ds", "es",
	"fs",  "gs",  "orig_eax", "eip", "cs",	"eflags", "esp", "ss",
};

static const char *const regs_aarch64[] = {
	"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",	    "x7",  "x8",
	"x9",  "x10", "x11", "x12", "x13", "x14", "x15",    "x16", "x17",
	"x18", "x19", "x20", "x21", "x22", "x23", "x24",    "x25", "x26",
	"x27", "x28", "x29", "x30", "sp",  "pc",  "pstate",
};

static const char *const *reg_names(size_t *n)
{
	switch (S.machine) {
	case EM_X86_64:
		*n = ARRAY_SIZE(regs_x86_64);
		return regs_x86_64;
	case EM_386:
		*n = ARRAY_SIZE(regs_i386);
		return regs_i386;
	case EM_AARCH64:
		*n = ARRAY_SIZE(regs_aarch64);
		return regs_aarch64;
	default:
		*n = 0;
		return NULL;
	}
}

/*
 * struct elf_prstatus for word size L: elf_siginfo {signo, code, errno},
 * short cursig, L sigpend, L sighold, 4 x pid_t, 4 timevals of 2 L,
 * pr_reg[nregs] of L, int fpvalid, padded to L.  Gives 336 bytes on x86_64,
 * 392 on aarch64, 144 on i386.
 */
static void note_prstatus(struct tok *t, size_t n)
{
	size_t L = word_size(), nnames, nregs;
	const char *const *names = reg_names(&nnames);
	uint64_t regs[256] = { 0 };
	uint64_t v[8] = { 0 }; /* signo code errno cursig pid ppid pgrp sid */
	uint64_t sigpend = 0, sighold = 0, fpvalid = 0;
	bool cursig_set = false;
	unsigned char d[4096];
	size_t o_sigpend, o_pid, o_time, o_reg, size;

	nregs = nnames;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].key, "nregs"))
			nregs = num(need_val(&t[i]));
	if (!nregs)
		die("prstatus: unknown register layout for machine %" PRIu64
		    ", give nregs=N and regN=V",
		    S.machine);
	if (nregs > ARRAY_SIZE(regs))
		die("prstatus: too many registers");

	for (size_t i = 0; i < n; i++) {
		const char *k = t[i].key;
		bool found = false;

		if (!strcmp(k, "nregs"))
			continue;
		const char *val = need_val(&t[i]);
		if (!strcmp(k, "signal") || !strcmp(k, "signo")) {
			v[0] = num_or_name(val, signals, ARRAY_SIZE(signals),
					   "signal");
			continue;
		}
		static const char *const f[] = { "",	   "code", "errno",
						 "cursig", "pid",  "ppid",
						 "pgrp",   "sid" };
		for (size_t j = 1; j < ARRAY_SIZE(f); j++) {
			if (!strcmp(k, f[j])) {
				v[j] = num_or_name(val, signals,
						   ARRAY_SIZE(signals),
						   "value");
				found = true;
				if (j == 3)
					cursig_set = true;
			}
		}
		if (found)
			continue;
		if (!strcmp(k, "sigpend")) {
			sigpend = num(val);
			continue;
		}
		if (!strcmp(k, "sighold")) {
			sighold = num(val);
			continue;
		}
		if (!strcmp(k, "fpvalid")) {
			fpvalid = num(val);
			continue;
		}
		for (size_t j = 0; j < nnames && j < nregs; j++) {
			if (!strcmp(k, names[j])) {
				regs[j] = num(val);
				found = true;
			}
		}
		if (!found && !strncmp(k, "reg", 3) && k[3] >= '0' &&
		    k[3] <= '9') {
			uint64_t idx = num(k + 3);

			if (idx >= nregs)
				die("prstatus: %s out of range", k);
			regs[idx] = num(val);
			found = true;
		}
		if (!found)
			die("prstatus: unknown field '%s'", k);
	}
	if (!cursig_set)
		v[3] = v[0];

	o_sigpend = ALIGN_UP(14, L);
	o_pid = o_sigpend + 2 * L;
	o_time = ALIGN_UP(o_pid + 16, L);
	o_reg = o_time + 8 * L;
	size = ALIGN_UP(o_reg + nregs * L + 4, L);
	if (size > sizeof(d))
		die("prstatus too large");
	memset(d, 0, size);
	put(d, 4, v[0]);
	put(d + 4, 4, v[1]);
	put(d + 8, 4, v[2]);
	put(d + 12, 2, v[3]);
	put(d + o_sigpend, L, sigpend);
	put(d + o_sigpend + L, L, sighold);
	for (size_t j = 0; j < 4; j++)
		put(d + o_pid + 4 * j, 4, v[4 + j]);
	for (size_t j = 0; j < nregs; j++)
		put(d + o_reg + j * L, L, regs[j]);
	put(d + o_reg + nregs * L, 4, fpvalid);
	add_core_note(NT_PRSTATUS, d, size);
}

static int state_number(const char *s)
{
	static const char letters[] = "RSDTZW";
	const char *p;
	uint64_t v;

	if (s[0] && !s[1] && (p = strchr(letters, s[0])))
		return (int)(p - letters);
	if (try_num(s, &v))
		return (int)v;
	die("bad state '%s' (R S D T Z W or a number)", s);
}

/*
 * struct elf_prpsinfo: char state, sname, zomb, nice; L flag; uid, gid
 * (16-bit on i386 and arm, else 32-bit); pid, ppid, pgrp, sid; fname[16];
 * psargs[80].  136 bytes on x86_64 and aarch64, 124 on i386.
 */
static void note_prpsinfo(struct tok *t, size_t n)
{
	size_t L = word_size();
	size_t uidsz = (S.class == ELFCLASS32 &&
			(S.machine == EM_386 || S.machine == EM_ARM))
			       ? 2
			       : 4;
	unsigned char d[256];
	int state = 0;
	uint64_t nice = 0, flag = 0, uid = 0, gid = 0, id[4] = { 0 };
	const char *fname = "", *args = "";
	bool sname_set = false, zomb_set = false;
	char sname = 0, zomb = 0;
	size_t o_uid, o_pid, o_fname, size;

	for (size_t i = 0; i < n; i++) {
		const char *k = t[i].key, *v = need_val(&t[i]);

		if (!strcmp(k, "state"))
			state = state_number(v);
		else if (!strcmp(k, "sname"))
			sname = v[0], sname_set = true;
		else if (!strcmp(k, "zomb"))
			zomb = (char)num(v), zomb_set = true;
		else if (!strcmp(k, "nice"))
			nice = num(v);
		else if (!strcmp(k, "flag"))
			flag = num(v);
		else if (!strcmp(k, "uid"))
			uid = num(v);
		else if (!strcmp(k, "gid"))
			gid = num(v);
		else if (!strcmp(k, "pid"))
			id[0] = num(v);
		else if (!strcmp(k, "ppid"))
			id[1] = num(v);
		else if (!strcmp(k, "pgrp"))
			id[2] = num(v);
		else if (!strcmp(k, "sid"))
			id[3] = num(v);
		else if (!strcmp(k, "fname"))
			fname = v;
		else if (!strcmp(k, "args"))
			args = v;
		else
			die("prpsinfo: unknown field '%s'", k);
	}
	if (!sname_set)
		sname = state >= 0 && state <= 5 ? "RSDTZW"[state] : '.';
	if (!zomb_set)
		zomb = state == 4;

	o_uid = ALIGN_UP(4, L) + L;
	o_pid = o_uid + 2 * uidsz;
	o_fname = o_pid + 16;
	size = ALIGN_UP(o_fname + 16 + 80, L);
	memset(d, 0, sizeof(d));
	d[0] = (unsigned char)state;
	d[1] = (unsigned char)sname;
	d[2] = (unsigned char)zomb;
	d[3] = (unsigned char)nice;
	put(d + ALIGN_UP(4, L), L, flag);
	put(d + o_uid, uidsz, uid);
	put(d + o_uid + uidsz, uidsz, gid);
	for (size_t j = 0; j < 4; j++)
		put(d + o_pid + 4 * j, 4, id[j]);
	/* fname is not NUL-terminated at 16 chars; psargs always is */
	memcpy(d + o_fname, fname, strnlen(fname, 16));
	memcpy(d + o_fname + 16, args, strnlen(args, 79));
	add_core_note(NT_PRPSINFO, d, size);
}

/*
 * siginfo_t (128 bytes): si_signo, si_errno, si_code, then the union at
 * 16 (64-bit) or 12 (32-bit): si_addr for faults, si_pid/si_uid for kill.
 */
static void note_siginfo(struct tok *t, size_t n)
{
	size_t L = word_size(), u = S.class == ELFCLASS64 ? 16 : 12;
	unsigned char d[128];

	memset(d, 0, sizeof(d));
	for (size_t i = 0; i < n; i++) {
		const char *k = t[i].key, *v = need_val(&t[i]);

		if (!strcmp(k, "signo") || !strcmp(k, "signal"))
			put(d, 4,
			    num_or_name(v, signals, ARRAY_SIZE(signals),
					"signal"));
		else if (!strcmp(k, "errno"))
			put(d + 4, 4, num(v));
		else if (!strcmp(k, "code"))
			put(d + 8, 4, num(v));
		else if (!strcmp(k, "addr"))
			put(d + u, L, num(v));
		else if (!strcmp(k, "pid"))
			put(d + u, 4, num(v));
		else if (!strcmp(k, "uid"))
			put(d + u + 4, 4, num(v));
		else
			die("siginfo: unknown field '%s'", k);
	}
	add_core_note(NT_SIGINFO, d, sizeof(d));
}

/* NT_AUXV: {key, value} word pairs ending with AT_NULL. */
static void note_auxv(struct tok *t, size_t n)
{
	size_t L = word_size();
	struct buf b = { 0 };
	unsigned char w[16];
	bool term = true;

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(t[i].key, "noterm") && !t[i].val) {
			term = false;
			continue;
		}
		put(w, L,
		    num_or_name(t[i].key, auxv_names, ARRAY_SIZE(auxv_names),
				"auxv key"));
		put(w + L, L, num(need_val(&t[i])));
		buf_add(&b, w, 2 * L);
	}
	if (term)
		buf_add(&b, NULL, 2 * L);
	add_core_note(NT_AUXV, b.p, b.len);
	free(b.p);
}

/* NT_FILE state: collected between `note file` and `end`. */
struct file_note {
	uint64_t pagesize;
	struct buf triples, names;
	uint64_t count;
};

static void file_note_map(struct file_note *f, struct tok *t, size_t n)
{
	size_t L = word_size();
	unsigned char w[24];

	if (n != 5 || strcmp(t[0].key, "map"))
		die("expected 'map START END PGOFF PATH' or 'end'");
	put(w, L, num(t[1].key));
	put(w + L, L, num(t[2].key));
	put(w + 2 * L, L, num(t[3].key));
	buf_add(&f->triples, w, 3 * L);
	buf_add(&f->names, t[4].key, strlen(t[4].key) + 1);
	f->count++;
}

static void file_note_end(struct file_note *f)
{
	size_t L = word_size();
	struct buf b = { 0 };
	unsigned char w[16];

	put(w, L, f->count);
	put(w + L, L, f->pagesize);
	buf_add(&b, w, 2 * L);
	buf_add(&b, f->triples.p, f->triples.len);
	buf_add(&b, f->names.p, f->names.len);
	add_core_note(NT_FILE, b.p, b.len);
	free(b.p);
	free(f->triples.p);
	free(f->names.p);
	memset(f, 0, sizeof(*f));
}

static void note_taskstruct(struct tok *t, size_t n)
{
	uint64_t size = 0, seed = 0, addr = 0;
	unsigned char *d;

	for (size_t i = 0; i < n; i++) {
		const char *k = t[i].key, *v = need_val(&t[i]);

		if (!strcmp(k, "size"))
			size = num(v);
		else if (!strcmp(k, "pattern"))
			seed = num(v);
		else if (!strcmp(k, "addr"))
			addr = num(v);
		else
			die("taskstruct: unknown field '%s'", k);
	}
	if (size > (64U << 20))
		die("taskstruct: size too large");
	d = xrealloc(NULL, size);
	kc_pattern_fill(d, addr, size, seed);
	add_core_note(NT_TASKSTRUCT, d, size);
	free(d);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void note_raw(struct tok *t, size_t n)
{
	const char *name = NULL;
	uint64_t type = 0;
	struct note_hdr_ovr o = { 0 };
	struct buf d = { 0 };

	for (size_t i = 0; i < n; i++) {
		const char *k = t[i].key, *v = need_val(&t[i]);

		if (!strcmp(k, "name")) {
			name = v;
		} else if (!strcmp(k, "type")) {
			type = num(v);
		} else if (!strcmp(k, "namesz")) {
			o.namesz = num(v);
			o.namesz_set = true;
		} else if (!strcmp(k, "descsz")) {
			o.descsz = num(v);
			o.descsz_set = true;
		} else if (!strcmp(k, "text")) {
			buf_add(&d, v, strlen(v));
		} else if (!strcmp(k, "size")) {
			uint64_t sz = num(v);

			if (sz > (64U << 20))
				die("raw: size too large");
			buf_add(&d, NULL, sz);
			kc_pattern_fill(d.p + d.len - sz, 0, sz, 0);
		} else if (!strcmp(k, "zero")) {
			uint64_t sz = num(v);

			if (sz > (64U << 20))
				die("raw: size too large");
			buf_add(&d, NULL, sz);
		} else if (!strcmp(k, "hex")) {
			for (const char *p = v; *p; p += 2) {
				int hi = hexval(p[0]),
				    lo = p[1] ? hexval(p[1]) : -1;
				unsigned char c;

				if (hi < 0 || lo < 0)
					die("raw: bad hex '%s'", v);
				c = (unsigned char)(hi << 4 | lo);
				buf_add(&d, &c, 1);
			}
		} else {
			die("raw: unknown field '%s'", k);
		}
	}
	if (!name)
		die("raw: name= is required (name=\"\" for none)");
	add_note(name, *name ? strlen(name) + 1 : 0, (uint32_t)type, d.p, d.len,
		 &o);
	free(d.p);
}

/* ---- segments ---------------------------------------------------------- */

static struct seg *new_seg(struct tok *t, size_t n)
{
	struct seg *g;

	S.segs = xrealloc(S.segs, (S.nsegs + 1) * sizeof(*S.segs));
	g = &S.segs[S.nsegs++];
	memset(g, 0, sizeof(*g));
	g->type = PT_LOAD;
	g->flags = PF_R | PF_W | PF_X;
	g->align = S.default_align;
	g->repeat = S.pending_repeat ? S.pending_repeat : 1;
	g->vstep = S.pending_vstep;
	g->pstep = S.pending_pstep;
	S.pending_repeat = S.pending_vstep = S.pending_pstep = 0;
	for (size_t i = 0; i < n; i++) {
		const char *k = t[i].key, *v = need_val(&t[i]);

		if (!strcmp(k, "vaddr"))
			g->vaddr = num(v);
		else if (!strcmp(k, "paddr"))
			g->paddr = num(v);
		else if (!strcmp(k, "flags"))
			g->flags = (uint32_t)parse_flags(v);
		else if (!strcmp(k, "align"))
			g->align = num(v);
		else if (!strcmp(k, "memsz"))
			g->memsz = num(v), g->has_memsz = true;
		else if (!strcmp(k, "offset"))
			g->offset = num(v), g->has_offset = true;
		else if (!strcmp(k, "pattern_at"))
			g->pattern_at = num(v), g->has_pattern_at = true;
		else if (!strcmp(k, "type"))
			g->type = (uint32_t)num_or_name(
				v, ptypes, ARRAY_SIZE(ptypes), "p_type");
		else
			die("load: unknown field '%s'", k);
	}
	return g;
}

static void add_piece(struct piece **arr, size_t *n, struct tok *t, size_t nt,
		      bool hole)
{
	struct piece p = { .hole = hole, .fill = FILL_PATTERN };

	if (nt < 2 || t[1].val)
		die("'%s' needs a SIZE", t[0].key);
	p.size = num(t[1].key);
	for (size_t i = 2; i < nt; i++) {
		if (hole)
			die("hole takes only a size");
		parse_fill(t[i].key, t[i].val, &p);
	}
	*arr = xrealloc(*arr, (*n + 1) * sizeof(**arr));
	(*arr)[(*n)++] = p;
}

/* ---- overrides --------------------------------------------------------- */

enum {
	E_MAGIC,
	E_CLASS,
	E_DATA,
	E_IVERSION,
	E_OSABI,
	E_ABIVERSION,
	E_TYPE,
	E_MACHINE,
	E_VERSION,
	E_ENTRY,
	E_PHOFF,
	E_SHOFF,
	E_FLAGS,
	E_EHSIZE,
	E_PHENTSIZE,
	E_PHNUM,
	E_SHENTSIZE,
	E_SHNUM,
	E_SHSTRNDX,
	E_NUM
};

static const char *const ehdr_fields[E_NUM] = {
	"ident_magic", "ident_class",	   "ident_data",  "ident_version",
	"ident_osabi", "ident_abiversion", "e_type",	  "e_machine",
	"e_version",   "e_entry",	   "e_phoff",	  "e_shoff",
	"e_flags",     "e_ehsize",	   "e_phentsize", "e_phnum",
	"e_shentsize", "e_shnum",	   "e_shstrndx",
};

enum {
	P_TYPE,
	P_FLAGS,
	P_OFFSET,
	P_VADDR,
	P_PADDR,
	P_FILESZ,
	P_MEMSZ,
	P_ALIGN,
	P_NUM
};

static const char *const phdr_fields[P_NUM] = {
	"p_type",  "p_flags",  "p_offset", "p_vaddr",
	"p_paddr", "p_filesz", "p_memsz",  "p_align",
};

enum { SH_TYPE, SH_SIZE, SH_LINK, SH_INFO, SH_NUM };

static const char *const shdr_fields[SH_NUM] = {
	"sh_type",
	"sh_size",
	"sh_link",
	"sh_info",
};

static int field_index(const char *const *names, int n, const char *k)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], k))
			return i;
	return -1;
}

static void parse_ehdr(struct tok *t, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		int f = field_index(ehdr_fields, E_NUM, t[i].key);
		const char *v = need_val(&t[i]);
		struct ovr *o;

		if (f < 0)
			die("ehdr: unknown field '%s'", t[i].key);
		if (S.nehdr_ovr == MAX_EHDR_OVR)
			die("ehdr: too many overrides");
		o = &S.ehdr_ovr[S.nehdr_ovr++];
		o->field = f;
		if (f == E_MAGIC && !strcmp(v, "bad"))
			o->value = 0x7f454c47; /* "\177ELG" */
		else if (f == E_TYPE)
			o->value = num_or_name(v, etypes, ARRAY_SIZE(etypes),
					       "type");
		else if (f == E_MACHINE)
			o->value = num_or_name(v, machines,
					       ARRAY_SIZE(machines), "machine");
		else
			o->value = num(v);
	}
}

static void parse_shdr(struct tok *t, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		int f = field_index(shdr_fields, SH_NUM, t[i].key);

		if (f < 0)
			die("shdr: unknown field '%s'", t[i].key);
		if (S.nshdr_ovr == ARRAY_SIZE(S.shdr_ovr))
			die("shdr: too many overrides");
		S.shdr_ovr[S.nshdr_ovr].field = f;
		S.shdr_ovr[S.nshdr_ovr++].value = num(need_val(&t[i]));
	}
}

static void parse_phdr(struct tok *t, size_t n)
{
	uint64_t idx;

	if (n < 3 || t[1].val)
		die("usage: phdr N FIELD=VALUE...");
	idx = num(t[1].key);
	for (size_t i = 2; i < n; i++) {
		int f = field_index(phdr_fields, P_NUM, t[i].key);
		const char *v = need_val(&t[i]);
		struct ovr o = { .index = idx, .field = f };

		if (f < 0)
			die("phdr: unknown field '%s'", t[i].key);
		if (f == P_TYPE)
			o.value = num_or_name(v, ptypes, ARRAY_SIZE(ptypes),
					      "p_type");
		else if (f == P_FLAGS)
			o.value = parse_flags(v);
		else
			o.value = num(v);
		S.phdr_ovr = xrealloc(S.phdr_ovr,
				      (S.nphdr_ovr + 1) * sizeof(*S.phdr_ovr));
		S.phdr_ovr[S.nphdr_ovr++] = o;
	}
}

static void parse_elf(struct tok *t, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		const char *k = t[i].key, *v = need_val(&t[i]);

		if (!strcmp(k, "class")) {
			uint64_t c = num(v);

			if (c != 32 && c != 64)
				die("class must be 32 or 64");
			S.class = c == 64 ? ELFCLASS64 : ELFCLASS32;
		} else if (!strcmp(k, "data")) {
			if (!strcmp(v, "lsb"))
				S.data = ELFDATA2LSB;
			else if (!strcmp(v, "msb"))
				S.data = ELFDATA2MSB;
			else
				die("data must be lsb or msb");
		} else if (!strcmp(k, "machine")) {
			S.machine = num_or_name(
				v, machines, ARRAY_SIZE(machines), "machine");
		} else if (!strcmp(k, "type")) {
			S.type = num_or_name(v, etypes, ARRAY_SIZE(etypes),
					     "type");
		} else if (!strcmp(k, "align")) {
			S.default_align = num(v);
		} else {
			die("elf: unknown field '%s'", k);
		}
	}
}

/* ---- spec reader ------------------------------------------------------- */

enum block { B_TOP, B_LOAD, B_VMCOREINFO, B_FILE };

static void read_spec(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	enum block blk = B_TOP;
	struct seg *seg = NULL;
	struct buf vmci = { 0 };
	struct file_note fn = { 0 };
	struct tok t[MAX_TOKENS];
	bool saw_content = false;

	if (!f)
		die("cannot open '%s': %s", path, strerror(errno));
	S.path = path;
	S.class = ELFCLASS64;
	S.data = ELFDATA2LSB;
	S.machine = EM_X86_64;
	S.type = ET_CORE;

	while (getline(&line, &cap, f) >= 0) {
		size_t n;

		S.line++;
		if (blk == B_VMCOREINFO) {
			char *p = line, *e;

			while (*p == ' ' || *p == '\t')
				p++;
			e = p + strlen(p);
			while (e > p && (e[-1] == '\n' || e[-1] == '\r' ||
					 e[-1] == ' ' || e[-1] == '\t'))
				*--e = '\0';
			if (!*p || *p == '#')
				continue;
			if (!strcmp(p, "end")) {
				add_note("VMCOREINFO", 11, 0, vmci.p, vmci.len,
					 NULL);
				free(vmci.p);
				memset(&vmci, 0, sizeof(vmci));
				blk = B_TOP;
				continue;
			}
			buf_add(&vmci, p, strlen(p));
			buf_add(&vmci, "\n", 1);
			continue;
		}

		n = tokenize(line, t);
		if (!n)
			continue;
		const char *cmd = t[0].key;

		if (blk == B_FILE) {
			if (!strcmp(cmd, "end") && n == 1) {
				file_note_end(&fn);
				blk = B_TOP;
			} else {
				file_note_map(&fn, t, n);
			}
			continue;
		}
		if (blk == B_LOAD) {
			if (!strcmp(cmd, "end") && n == 1) {
				if (!seg->has_memsz)
					seg->memsz = seg->filesz;
				blk = B_TOP;
			} else if (!strcmp(cmd, "data") ||
				   !strcmp(cmd, "hole")) {
				add_piece(&seg->pieces, &seg->npieces, t, n,
					  cmd[0] == 'h');
				seg->filesz +=
					seg->pieces[seg->npieces - 1].size;
			} else {
				die("expected data, hole or end in a load "
				    "block");
			}
			continue;
		}

		if (!strcmp(cmd, "elf")) {
			if (saw_content)
				die("'elf' must come before notes and loads");
			parse_elf(t, n);
		} else if (!strcmp(cmd, "ehdr")) {
			parse_ehdr(t, n);
		} else if (!strcmp(cmd, "shdr")) {
			parse_shdr(t, n);
		} else if (!strcmp(cmd, "phdr")) {
			parse_phdr(t, n);
		} else if (!strcmp(cmd, "notes")) {
			if (n != 2 || strcmp(t[1].key, "segment"))
				die("usage: notes segment=N");
			S.cur_note = num(need_val(&t[1]));
			if (S.cur_note >= MAX_NOTE_SEGS)
				die("too many note segments");
			cur_notes();
			saw_content = true;
		} else if (!strcmp(cmd, "note")) {
			const char *kind;

			if (n < 2 || t[1].val)
				die("usage: note KIND ...");
			kind = t[1].key;
			saw_content = true;
			if (!strcmp(kind, "vmcoreinfo") && n == 2)
				blk = B_VMCOREINFO;
			else if (!strcmp(kind, "prstatus"))
				note_prstatus(t + 2, n - 2);
			else if (!strcmp(kind, "prpsinfo"))
				note_prpsinfo(t + 2, n - 2);
			else if (!strcmp(kind, "siginfo"))
				note_siginfo(t + 2, n - 2);
			else if (!strcmp(kind, "auxv"))
				note_auxv(t + 2, n - 2);
			else if (!strcmp(kind, "taskstruct"))
				note_taskstruct(t + 2, n - 2);
			else if (!strcmp(kind, "raw"))
				note_raw(t + 2, n - 2);
			else if (!strcmp(kind, "file")) {
				fn.pagesize = PAGE;
				for (size_t i = 2; i < n; i++) {
					if (strcmp(t[i].key, "pagesize"))
						die("file: unknown field '%s'",
						    t[i].key);
					fn.pagesize = num(need_val(&t[i]));
				}
				blk = B_FILE;
			} else
				die("unknown note kind '%s'", kind);
		} else if (!strcmp(cmd, "repeat")) {
			if (n < 2 || t[1].val)
				die("usage: repeat N [vstep=S] [pstep=S]");
			S.pending_repeat = num(t[1].key);
			for (size_t i = 2; i < n; i++) {
				if (!strcmp(t[i].key, "vstep"))
					S.pending_vstep = num(need_val(&t[i]));
				else if (!strcmp(t[i].key, "pstep"))
					S.pending_pstep = num(need_val(&t[i]));
				else
					die("repeat: unknown field '%s'",
					    t[i].key);
			}
		} else if (!strcmp(cmd, "load")) {
			seg = new_seg(t + 1, n - 1);
			saw_content = true;
			blk = B_LOAD;
		} else if (!strcmp(cmd, "append")) {
			add_piece(&S.appends, &S.nappends, t, n, false);
			S.appends[S.nappends - 1].fill =
				n > 2 ? S.appends[S.nappends - 1].fill
				      : FILL_RANDOM;
		} else if (!strcmp(cmd, "truncate")) {
			if (n != 2 || t[1].val)
				die("usage: truncate SIZE");
			S.truncate = num(t[1].key);
			S.has_truncate = true;
		} else {
			die("unknown directive '%s'", cmd);
		}
	}
	if (blk != B_TOP)
		die("missing 'end' at end of file");
	if (S.pending_repeat)
		die("'repeat' not followed by a load");
	S.line = 0;
	free(line);
	fclose(f);
}

/* ---- layout and output ------------------------------------------------- */

static void compute_layout(struct layout *l)
{
	bool is64 = S.class == ELFCLASS64;
	uint64_t cur, k = 0;

	l->ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	l->phentsize = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	l->shentsize = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	l->phoff = l->ehsize;
	l->phnum = S.nnotesegs;
	for (size_t i = 0; i < S.nsegs; i++)
		l->phnum += S.segs[i].repeat;
	/* Linux fill_extnum_info(): PN_XNUM and the count in shdr 0 */
	l->xnum = l->phnum >= PN_XNUM;
	l->ph = xrealloc(NULL, l->phnum * sizeof(*l->ph));

	cur = l->phoff + l->phnum * l->phentsize;
	for (size_t i = 0; i < S.nnotesegs; i++) {
		struct phdr *p = &l->ph[k++];

		cur = ALIGN_UP(cur, 8);
		l->note_off[i] = cur;
		*p = (struct phdr){ .type = PT_NOTE,
				    .offset = cur,
				    .filesz = S.notes[i].len,
				    .align = 4 };
		cur += S.notes[i].len;
	}
	l->shoff = 0;
	if (l->xnum) {
		cur = ALIGN_UP(cur, 8);
		l->shoff = cur;
		cur += l->shentsize;
	}
	l->end = cur;
	for (size_t i = 0; i < S.nsegs; i++) {
		struct seg *g = &S.segs[i];

		for (uint64_t r = 0; r < g->repeat; r++) {
			struct phdr *p = &l->ph[k++];

			if (g->has_offset) {
				p->offset = g->offset +
					    r * ALIGN_UP(g->filesz, PAGE);
			} else {
				cur = ALIGN_UP(cur, PAGE);
				p->offset = cur;
				cur += g->filesz;
			}
			p->type = g->type;
			p->flags = g->flags;
			p->vaddr = g->vaddr + r * g->vstep;
			p->paddr = g->paddr + r * g->pstep;
			p->filesz = g->filesz;
			p->memsz = g->memsz;
			p->align = g->align;
			if (p->offset + p->filesz > l->end)
				l->end = p->offset + p->filesz;
		}
	}
	for (size_t i = 0; i < S.nphdr_ovr; i++) {
		struct ovr *o = &S.phdr_ovr[i];
		uint64_t *fields;

		if (o->index >= l->phnum)
			die("phdr %" PRIu64 ": only %" PRIu64
			    " program headers",
			    o->index, l->phnum);
		fields = &l->ph[o->index].type;
		fields[o->field] = o->value;
	}
}

static int out_fd = -1;

static void pwrite_all(const void *p, size_t len, uint64_t off)
{
	const unsigned char *c = p;

	while (len) {
		ssize_t w = pwrite(out_fd, c, len, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("write at offset 0x%" PRIx64 ": %s", off,
			    strerror(errno));
		}
		c += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
}

static void write_fill(enum fill fill, uint64_t arg, uint64_t size,
		       uint64_t addr, uint64_t off)
{
	static unsigned char chunk[CHUNK];
	uint64_t rng = arg;

	while (size) {
		size_t n = size < CHUNK ? (size_t)size : CHUNK;

		fill_buf(chunk, n, fill, arg, addr, &rng);
		pwrite_all(chunk, n, off);
		size -= n;
		addr += n;
		off += n;
	}
}

static void write_ehdr(const struct layout *l)
{
	bool is64 = S.class == ELFCLASS64;
	uint64_t e[E_NUM];
	unsigned char h[64];

	e[E_MAGIC] = 0x7f454c46;
	e[E_CLASS] = (uint64_t)S.class;
	e[E_DATA] = (uint64_t)S.data;
	e[E_IVERSION] = EV_CURRENT;
	e[E_OSABI] = ELFOSABI_NONE;
	e[E_ABIVERSION] = 0;
	e[E_TYPE] = S.type;
	e[E_MACHINE] = S.machine;
	e[E_VERSION] = EV_CURRENT;
	e[E_ENTRY] = 0;
	e[E_PHOFF] = l->phnum ? l->phoff : 0;
	e[E_SHOFF] = l->shoff;
	e[E_FLAGS] = 0;
	e[E_EHSIZE] = l->ehsize;
	e[E_PHENTSIZE] = l->phentsize;
	e[E_PHNUM] = l->xnum ? PN_XNUM : l->phnum;
	e[E_SHENTSIZE] = l->xnum ? l->shentsize : 0;
	e[E_SHNUM] = l->xnum ? 1 : 0;
	e[E_SHSTRNDX] = SHN_UNDEF;
	for (size_t i = 0; i < S.nehdr_ovr; i++)
		e[S.ehdr_ovr[i].field] = S.ehdr_ovr[i].value;

	memset(h, 0, sizeof(h));
	h[0] = (unsigned char)(e[E_MAGIC] >> 24);
	h[1] = (unsigned char)(e[E_MAGIC] >> 16);
	h[2] = (unsigned char)(e[E_MAGIC] >> 8);
	h[3] = (unsigned char)e[E_MAGIC];
	h[EI_CLASS] = (unsigned char)e[E_CLASS];
	h[EI_DATA] = (unsigned char)e[E_DATA];
	h[EI_VERSION] = (unsigned char)e[E_IVERSION];
	h[EI_OSABI] = (unsigned char)e[E_OSABI];
	h[EI_ABIVERSION] = (unsigned char)e[E_ABIVERSION];
	put(h + 16, 2, e[E_TYPE]);
	put(h + 18, 2, e[E_MACHINE]);
	put(h + 20, 4, e[E_VERSION]);
	if (is64) {
		put(h + 24, 8, e[E_ENTRY]);
		put(h + 32, 8, e[E_PHOFF]);
		put(h + 40, 8, e[E_SHOFF]);
		put(h + 48, 4, e[E_FLAGS]);
		put(h + 52, 2, e[E_EHSIZE]);
		put(h + 54, 2, e[E_PHENTSIZE]);
		put(h + 56, 2, e[E_PHNUM]);
		put(h + 58, 2, e[E_SHENTSIZE]);
		put(h + 60, 2, e[E_SHNUM]);
		put(h + 62, 2, e[E_SHSTRNDX]);
	} else {
		put(h + 24, 4, e[E_ENTRY]);
		put(h + 28, 4, e[E_PHOFF]);
		put(h + 32, 4, e[E_SHOFF]);
		put(h + 36, 4, e[E_FLAGS]);
		put(h + 40, 2, e[E_EHSIZE]);
		put(h + 42, 2, e[E_PHENTSIZE]);
		put(h + 44, 2, e[E_PHNUM]);
		put(h + 46, 2, e[E_SHENTSIZE]);
		put(h + 48, 2, e[E_SHNUM]);
		put(h + 50, 2, e[E_SHSTRNDX]);
	}
	pwrite_all(h, l->ehsize, 0);
}

static void write_phdrs(const struct layout *l)
{
	bool is64 = S.class == ELFCLASS64;
	size_t len = l->phnum * l->phentsize;
	unsigned char *b = xrealloc(NULL, len), *h = b;

	for (uint64_t i = 0; i < l->phnum; i++, h += l->phentsize) {
		const struct phdr *p = &l->ph[i];

		if (is64) {
			put(h, 4, p->type);
			put(h + 4, 4, p->flags);
			put(h + 8, 8, p->offset);
			put(h + 16, 8, p->vaddr);
			put(h + 24, 8, p->paddr);
			put(h + 32, 8, p->filesz);
			put(h + 40, 8, p->memsz);
			put(h + 48, 8, p->align);
		} else {
			put(h, 4, p->type);
			put(h + 4, 4, p->offset);
			put(h + 8, 4, p->vaddr);
			put(h + 12, 4, p->paddr);
			put(h + 16, 4, p->filesz);
			put(h + 20, 4, p->memsz);
			put(h + 24, 4, p->flags);
			put(h + 28, 4, p->align);
		}
	}
	pwrite_all(b, len, l->phoff);
	free(b);
}

static void write_shdr0(const struct layout *l)
{
	bool is64 = S.class == ELFCLASS64;
	uint64_t f[SH_NUM] = { SHT_NULL, 1, SHN_UNDEF, l->phnum };
	unsigned char h[64];

	for (size_t i = 0; i < S.nshdr_ovr; i++)
		f[S.shdr_ovr[i].field] = S.shdr_ovr[i].value;
	memset(h, 0, sizeof(h));
	if (is64) {
		put(h + 4, 4, f[SH_TYPE]);
		put(h + 32, 8, f[SH_SIZE]);
		put(h + 40, 4, f[SH_LINK]);
		put(h + 44, 4, f[SH_INFO]);
	} else {
		put(h + 4, 4, f[SH_TYPE]);
		put(h + 20, 4, f[SH_SIZE]);
		put(h + 24, 4, f[SH_LINK]);
		put(h + 28, 4, f[SH_INFO]);
	}
	pwrite_all(h, l->shentsize, l->shoff);
}

static void write_core(const char *out, const struct layout *l)
{
	uint64_t k = S.nnotesegs, end = l->end;

	out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out_fd < 0)
		die("cannot create '%s': %s", out, strerror(errno));
	write_ehdr(l);
	if (l->phnum)
		write_phdrs(l);
	for (size_t i = 0; i < S.nnotesegs; i++)
		if (S.notes[i].len)
			pwrite_all(S.notes[i].p, S.notes[i].len,
				   l->note_off[i]);
	if (l->xnum)
		write_shdr0(l);
	/*
	 * Write the data at the offsets compute_layout() chose before any
	 * `phdr` override; recompute them the same way.
	 */
	{
		size_t novr = S.nphdr_ovr;
		struct layout raw;

		S.nphdr_ovr = 0;
		compute_layout(&raw);
		S.nphdr_ovr = novr;
		k = S.nnotesegs;
		for (size_t i = 0; i < S.nsegs; i++) {
			const struct seg *g = &S.segs[i];

			for (uint64_t r = 0; r < g->repeat; r++, k++) {
				uint64_t off = raw.ph[k].offset;
				uint64_t addr = raw.ph[k].vaddr;

				if (g->has_pattern_at)
					addr = g->pattern_at + r * g->vstep;

				for (size_t j = 0; j < g->npieces; j++) {
					const struct piece *p = &g->pieces[j];

					if (!p->hole)
						write_fill(p->fill, p->arg,
							   p->size, addr, off);
					off += p->size;
					addr += p->size;
				}
			}
		}
		free(raw.ph);
	}
	for (size_t i = 0; i < S.nappends; i++) {
		const struct piece *p = &S.appends[i];

		write_fill(p->fill, p->arg, p->size, end, end);
		end += p->size;
	}
	if (S.has_truncate)
		end = S.truncate;
	if (ftruncate(out_fd, (off_t)end) < 0)
		die("truncate '%s': %s", out, strerror(errno));
	if (close(out_fd) < 0)
		die("close '%s': %s", out, strerror(errno));
}

static void describe(const struct layout *l)
{
	uint64_t end = l->end;

	for (size_t i = 0; i < S.nappends; i++)
		end += S.appends[i].size;
	if (S.has_truncate)
		end = S.truncate;
	printf("class=%d data=%s machine=%" PRIu64 " type=%" PRIu64 "\n",
	       S.class == ELFCLASS64 ? 64 : 32,
	       S.data == ELFDATA2MSB ? "msb" : "lsb", S.machine, S.type);
	printf("phoff=0x%" PRIx64 " phnum=%" PRIu64 "%s shoff=0x%" PRIx64
	       " size=0x%" PRIx64 "\n",
	       l->phoff, l->phnum, l->xnum ? " (PN_XNUM)" : "", l->shoff, end);
	for (uint64_t i = 0; i < l->phnum; i++) {
		const struct phdr *p = &l->ph[i];

		if (i >= 20 && i + 5 < l->phnum) {
			if (i == 20)
				printf("  ...\n");
			continue;
		}
		printf("  [%" PRIu64 "] %-5s off=0x%" PRIx64
		       " filesz=0x%" PRIx64 " memsz=0x%" PRIx64
		       " vaddr=0x%" PRIx64 " paddr=0x%" PRIx64 "\n",
		       i,
		       p->type == PT_NOTE   ? "NOTE"
		       : p->type == PT_LOAD ? "LOAD"
					    : "?",
		       p->offset, p->filesz, p->memsz, p->vaddr, p->paddr);
	}
}

int main(int argc, char **argv)
{
	struct layout l = { 0 };
	bool desc = argc == 3 && !strcmp(argv[1], "--describe");

	if (argc != 3 || (!desc && argv[1][0] == '-')) {
		fprintf(stderr, "usage: mkcore SPEC OUTPUT\n"
				"       mkcore --describe SPEC\n");
		return 2;
	}
	read_spec(desc ? argv[2] : argv[1]);
	compute_layout(&l);
	if (desc)
		describe(&l);
	else
		write_core(argv[2], &l);
	free(l.ph);
	return 0;
}
