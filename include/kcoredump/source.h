/* SPDX-License-Identifier: MIT */
/*
 * Sources: /proc/kcore and ELF core files (process cores, kernel vmcores,
 * our own outputs).  Opening a source parses and validates the ELF header,
 * the program headers and every note; segment payloads are never read
 * until asked for.
 */
#ifndef KCOREDUMP_SOURCE_H
#define KCOREDUMP_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kcore_source_kind {
	KCORE_SOURCE_LIVE_KCORE,   /* /proc/kcore of the running kernel */
	KCORE_SOURCE_VMCORE,	   /* kernel memory image in an ELF core */
	KCORE_SOURCE_PROCESS_CORE, /* user process core */
	KCORE_SOURCE_ELF_CORE,	   /* an ELF core we cannot place */
	KCORE_SOURCE_KIND_NUM
};

enum kcore_segment_class {
	KCORE_CLASS_RAM,     /* direct-mapped RAM */
	KCORE_CLASS_TEXT,    /* kernel image */
	KCORE_CLASS_MODULES, /* module area */
	KCORE_CLASS_VMALLOC, /* vmalloc area */
	KCORE_CLASS_VMEMMAP, /* struct page array */
	KCORE_CLASS_NOTE,    /* PT_NOTE */
	KCORE_CLASS_FILE,    /* process: file-backed mapping */
	KCORE_CLASS_ANON,    /* process: anonymous mapping */
	KCORE_CLASS_STACK,   /* process: a thread's stack */
	KCORE_CLASS_HEAP,    /* process: the brk heap */
	KCORE_CLASS_VDSO,    /* process: vDSO */
	KCORE_CLASS_OTHER,
	KCORE_CLASS_NUM
};

/* "ram", "text", ... and back; -1 if unknown. */
const char *kcore_segment_class_name(enum kcore_segment_class cls);
int kcore_segment_class_from_name(const char *name);
const char *kcore_source_kind_name(enum kcore_source_kind kind);

struct kcore_segment {
	unsigned index; /* program header index */
	uint32_t type;	/* p_type */
	uint32_t flags; /* p_flags */
	uint64_t vaddr;
	uint64_t paddr;
	bool has_paddr; /* p_paddr is a real physical address */
	uint64_t offset;
	uint64_t filesz;
	uint64_t memsz;
	uint64_t align;
	enum kcore_segment_class cls;
	const char *label; /* mapping name or kernel area name; may be NULL */
};

struct kcore_note {
	const char *name; /* NUL-terminated */
	uint32_t type;
	const unsigned char *desc;
	size_t descsz;
	uint64_t offset;  /* file offset of the note header */
	unsigned segment; /* index of the PT_NOTE program header */
};

struct kcore_source_info {
	const char *path;
	/* path made absolute against the working directory at open (not
	 * through symbolic links: the name that was opened), for records. */
	const char *abs_path;
	enum kcore_source_kind kind;
	unsigned elf_class; /* 32 or 64 */
	bool big_endian;
	uint16_t machine; /* e_machine */
	/*
	 * Where machine comes from when the format's headers name none (a
	 * LiME or AVML image): "VMCOREINFO" or "kernel banner" found in its
	 * memory at physical machine_paddr, or "--arch" (given by the
	 * caller, kcore_open_opts.machine); NULL: the headers.
	 */
	const char *machine_origin;
	uint64_t machine_paddr;
	uint16_t e_type;
	uint64_t page_size;   /* from VMCOREINFO, NT_AUXV or the default */
	bool is_regular;      /* a regular file: holes can be asked for */
	uint64_t file_size;   /* st_size */
	uint64_t file_blocks; /* allocated bytes (st_blocks * 512) */
	const char *kernel_release; /* VMCOREINFO OSRELEASE, or NULL */
	/* "note", "sysfs", "memory" (a LiME or AVML image's, found at
	 * physical vmcoreinfo_paddr) or NULL */
	const char *vmcoreinfo_origin;
	uint64_t vmcoreinfo_paddr;
	const char *process_name; /* NT_PRPSINFO pr_fname, or NULL */
	int32_t pid;		  /* first NT_PRSTATUS pid, or 0 */
	unsigned nthreads;	  /* NT_PRSTATUS notes in a process core */
	int32_t signal;		  /* signal that killed it, or 0 */
	/* Kernel layout, from VMCOREINFO or derived from the segments. */
	bool has_page_offset;
	uint64_t page_offset; /* direct-map base */
	bool has_vmalloc_start;
	uint64_t vmalloc_start;
	bool has_vmemmap_start;
	uint64_t vmemmap_start;
	bool has_kernel_offset;
	uint64_t kernel_offset; /* KASLR offset */
	bool has_phys_base;
	uint64_t phys_base;
	/*
	 * PT_LOAD p_vaddr means nothing: a physical-only format (kdump,
	 * LiME) whose direct map the source does not reveal.  Virtual reads
	 * are then translated through the kernel's page tables when that is
	 * exact (kcore_source_vaddr_to_paddr), else refused.
	 */
	bool physical_only;
	/*
	 * What the input format's own header says, for people: e.g.
	 * "header version 6, lzo pages, dump level 31" for a kdump, or
	 * "12 ranges, 16384 snappy chunks" for AVML; NULL when none.
	 */
	const char *format_detail;
	/* How the format compresses its pages or chunks itself: a kdump's
	 * codecs ("zstd", "zlib/lzo", "raw"), AVML's "snappy"; NULL for
	 * others (a .zst/.xz stream around a file is not this). */
	const char *page_compression;
	/*
	 * A dump that says it is incomplete: memory it was to hold could
	 * not be read when it was made (kcoredump(8) COMPLETENESS).  From
	 * our metadata note, which says how much (unreadable_bytes and
	 * _ranges, this dump's and its source's), or from the marks
	 * makedumpfile sets and crash reads: an ELF vmcore's e_flags
	 * DUMP_ELF_INCOMPLETE, a kdump header's incomplete status (then the
	 * amounts are 0: unknown).  incomplete_origin: "note", "ELF
	 * e_flags" or "kdump header".
	 */
	bool incomplete;
	uint64_t unreadable_bytes;
	uint64_t unreadable_ranges;
	const char *incomplete_origin;
	/*
	 * A regular file that ends before its PT_LOAD segments do (a core cut
	 * short by a full disk or a killed writer): the file bytes missing
	 * and the segments that lack some.  The source opens; reads of the
	 * missing part fail (a dump then records them as unreadable), and
	 * the source counts as incomplete (origin "truncated file").
	 */
	uint64_t truncated_bytes;
	size_t truncated_segments;
	uint32_t e_flags;
};

struct kcore_source;
struct kcore_vmcoreinfo;

struct kcore_open_opts {
	/* I/O ops (NULL: the real system calls). */
	const struct kcore_io_ops *io;
	/*
	 * Root under which "sys/kernel/vmcoreinfo" is looked up for kernels
	 * without a VMCOREINFO note in kcore (NULL: "/").
	 */
	const char *sysroot;
	/* Treat the source as the live kernel's kcore regardless of path. */
	bool force_live;
	/*
	 * The machine (e_machine; EM_NONE: not given) of a LiME or AVML
	 * image whose memory does not tell it (no VMCOREINFO, no kernel
	 * banner naming it).  It must agree with VMCOREINFO found there and
	 * with the machine any other format's headers name.
	 */
	uint16_t machine;
};

/* e_machine for a machine name: "x86_64" (or "amd64"), "aarch64" (or
 * "arm64"); EM_NONE for others. */
uint16_t kcore_machine_from_name(const char *name);
/* The name of a machine libkcore has an architecture table for
 * ("x86_64", "aarch64"), or NULL. */
const char *kcore_machine_name(uint16_t machine);

struct kcore_error *kcore_source_open(const char *path,
				      const struct kcore_open_opts *opts,
				      struct kcore_source **ret);
void kcore_source_destroy(struct kcore_source *src);

const struct kcore_source_info *
kcore_source_info(const struct kcore_source *src);
size_t kcore_source_nsegments(const struct kcore_source *src);
const struct kcore_segment *kcore_source_segment(const struct kcore_source *src,
						 size_t i);
size_t kcore_source_nnotes(const struct kcore_source *src);
const struct kcore_note *kcore_source_note(const struct kcore_source *src,
					   size_t i);
/*
 * The address of kernel symbol name: its VMCOREINFO SYMBOL(name) line,
 * else, for the live kernel, /proc/kallsyms.  KCORE_ERR_NOT_FOUND when
 * neither has it, KCORE_ERR_ACCESS when kallsyms hides it (zeros, by
 * kernel.kptr_restrict).
 */
struct kcore_error *kcore_source_symbol(const struct kcore_source *src,
					const char *name, uint64_t *ret);
/* The parsed VMCOREINFO, or NULL if the source has none. */
const struct kcore_vmcoreinfo *
kcore_source_vmcoreinfo(const struct kcore_source *src);
int kcore_source_fd(const struct kcore_source *src);
const struct kcore_io_ops *kcore_source_io(const struct kcore_source *src);

/*
 * Read bytes [offset, offset + len) of the source's ELF image: the file
 * itself for ELF cores and /proc/kcore; for other formats the ELF core
 * they are presented as.  _partial also says how many bytes arrived
 * before an error.
 */
struct kcore_error *kcore_source_pread(struct kcore_source *src, void *buf,
				       size_t len, uint64_t offset);
struct kcore_error *kcore_source_pread_partial(struct kcore_source *src,
					       void *buf, size_t len,
					       uint64_t offset, size_t *done);

/*
 * The first data byte at or after offset and below end, and the end of
 * its run: *data = *data_end = end when only holes remain.  Sources that
 * cannot tell holes from data (a stock kernel's /proc/kcore, devices)
 * report everything as data; kcore_source_knows_holes() says which.
 */
struct kcore_error *kcore_source_next_data(struct kcore_source *src,
					   uint64_t offset, uint64_t end,
					   uint64_t *data, uint64_t *data_end);
bool kcore_source_knows_holes(const struct kcore_source *src);
/* "file" for ELF files and /proc/kcore; otherwise the input format. */
const char *kcore_source_format(const struct kcore_source *src);
/* The same for people ("ELF", "kdump-compressed", "ELF in zstd
 * (seekable)"), from the reader's table. */
const char *kcore_source_format_title(const struct kcore_source *src);
/* Why a file of its format holds no kcoredump digests when it has no
 * place for a note ("a LiME file has no place for digests"), or NULL
 * when the format has one. */
const char *kcore_source_format_no_digests(const struct kcore_source *src);
/* The file itself is an ELF core or /proc/kcore (gdb opens it as it is),
 * not an image of another format. */
bool kcore_source_is_elf(const struct kcore_source *src);

/*
 * Read memory at a virtual (or, with _paddr, physical) address.  The whole
 * range must lie in PT_LOAD segments; the part of a segment past p_filesz
 * reads as zeros.  An address no segment maps is a KCORE_ERR_INVALID error
 * naming it.
 */
struct kcore_error *kcore_source_read_vaddr(struct kcore_source *src,
					    uint64_t vaddr, void *buf,
					    size_t len);
struct kcore_error *kcore_source_read_paddr(struct kcore_source *src,
					    uint64_t paddr, void *buf,
					    size_t len);

/*
 * The physical address of a kernel virtual address: from a segment that
 * has both addresses (not in physical-only sources), else on x86_64
 * through the kernel image mapping (NUMBER(phys_base)) and the kernel's
 * own page tables (SYMBOL(init_top_pgt)).  A direct-map base from
 * VMCOREINFO already gave the segments their virtual addresses.  *ret_len
 * (optional) says how many bytes from vaddr share the translation (to the end
 * of its page).  KCORE_ERR_UNSUPPORTED when the source does not allow an exact
 * answer, KCORE_ERR_INVALID when the address is not mapped.
 */
struct kcore_error *kcore_source_vaddr_to_paddr(struct kcore_source *src,
						uint64_t vaddr,
						uint64_t *ret_paddr,
						uint64_t *ret_len);

/*
 * Count data and hole bytes of a segment's file range with
 * kcore_source_next_data().
 */
struct kcore_error *kcore_source_count_holes(struct kcore_source *src,
					     size_t segment, uint64_t *ret_data,
					     uint64_t *ret_hole);

/* Modules mapped in a process core, found through libdwfl. */
struct kcore_module {
	char *name;
	uint64_t start;
	uint64_t end;
	unsigned char *build_id; /* NULL if none */
	size_t build_id_len;
	uint64_t build_id_vaddr;
	char *file;	  /* main file found on this system, or NULL */
	bool elf_in_core; /* no file, but the ELF headers are in the core */
	char *debug_file; /* separate debug file, or NULL */
};

/*
 * By default libdwfl runs in a forked sandbox that can open nothing, so
 * only what the core's memory holds is reported, and the files for the
 * build IDs are looked up by build ID under /usr/lib/debug/.build-id.
 * KCORE_MODULES_OPEN_FILES opens the files the core names (its link map,
 * NT_FILE), as eu-unstrip does: only for a core that is the caller's own
 * (file and process), else KCORE_ERR_ACCESS.
 */
enum { KCORE_MODULES_OPEN_FILES = 1u << 0 };
struct kcore_error *kcore_source_modules(struct kcore_source *src,
					 unsigned flags,
					 struct kcore_module **ret,
					 size_t *ret_count);
void kcore_modules_free(struct kcore_module *mods, size_t count);
/*
 * Whether a process core is of a process that ran as uid: its
 * NT_PRPSINFO says so (there must be one), and so do the auxiliary
 * vector's AT_UID and AT_EUID where there is one.  KCORE_ERR_ACCESS,
 * naming the other uid, when not.
 */
struct kcore_error *kcore_source_check_process_uid(struct kcore_source *src,
						   uid_t uid);

#ifdef __cplusplus
}
#endif

#endif
