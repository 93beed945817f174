/* SPDX-License-Identifier: MIT */
/*
 * Dumps: choose what to copy from a source (a plan of output segments),
 * find data and holes, read in large blocks, detect zero pages, hash, and
 * write an ELF core (sparse file, or a zstd/xz stream) atomically.
 */
#ifndef KCOREDUMP_DUMP_H
#define KCOREDUMP_DUMP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "source.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output formats (kcoredump(8) FORMATS). */
enum kcore_format {
	KCORE_FORMAT_ELF,   /* ELF core, sparse or in a zstd/xz stream */
	KCORE_FORMAT_KDUMP, /* kdump-compressed v6; flattened on a pipe */
	KCORE_FORMAT_LIME,  /* LiME v1 ranges of physical memory */
	KCORE_FORMAT_AVML,  /* AVML's snappy-compressed LiME (version 2) */
	KCORE_FORMAT_NUM
};

/* Per-page codecs of the kdump format. */
enum kcore_codec {
	KCORE_CODEC_ZSTD,
	KCORE_CODEC_ZLIB,
	KCORE_CODEC_NONE,
	KCORE_CODEC_LZO, /* lzo1x-1, makedumpfile -l (RHEL's kdump default) */
	KCORE_CODEC_SNAPPY, /* makedumpfile -p */
	KCORE_CODEC_NUM
};

#define KCORE_KDUMP_ZSTD_DEFAULT_LEVEL 1
#define KCORE_KDUMP_ZLIB_DEFAULT_LEVEL 1
/* With libdeflate: its level 2 (smaller than zlib's 1, 3x as fast). */
#define KCORE_KDUMP_LIBDEFLATE_DEFAULT_LEVEL 2

/* "elf", "kdump", "lime" and back; -1 if unknown. */
const char *kcore_format_name(enum kcore_format f);
int kcore_format_from_name(const char *name);
/* The formats' names in table order, joined: "elf, kdump, lime or avml"
 * with ", " and " or " (for messages and help), into buf. */
const char *kcore_format_names(char *buf, size_t size, const char *sep,
			       const char *last_sep);
/* The format's name for people ("ELF", "kdump", "LiME", "AVML"). */
const char *kcore_format_title(enum kcore_format f);
/* It holds physical memory only (no process, no virtual-only areas). */
bool kcore_format_physical(enum kcore_format f);
/* It compresses page by page (--codec) rather than as a stream. */
bool kcore_format_page_codec(enum kcore_format f);

/* What was given on the command line of the output options, beside the
 * values in kcore_dump_opts: for kcore_dump_opts_settle(). */
struct kcore_opts_given {
	bool compress; /* --compress (else: from the output's suffix) */
	bool codec;    /* --codec */
};
struct kcore_dump_opts;
/*
 * The format's rules for the output options, checked before any source is
 * opened, and the values they imply settled in opts (the stream
 * compression from the output's suffix, a level that is the page codec's).
 * KCORE_ERR_INVALID: a usage error, whose message names the options.
 */
struct kcore_error *
kcore_dump_opts_settle(struct kcore_dump_opts *opts,
		       const struct kcore_opts_given *given);

/* Where a dump keeps its segment digests. */
enum kcore_digest_location {
	KCORE_DIGESTS_UNKNOWN, /* not said: not our dump, or a newer one */
	KCORE_DIGESTS_NONE,    /* --hash none: no digests */
	KCORE_DIGESTS_NOTE,    /* our metadata note (kdump) */
	KCORE_DIGESTS_TRAILER, /* the trailer after the data (ELF) */
	KCORE_DIGESTS_SUMMARY, /* not in the file (LiME, AVML): the summary */
	KCORE_DIGESTS_NUM
};

/* "none", "note", "trailer", "summary" (what our metadata's digests=
 * says) and back; NULL for KCORE_DIGESTS_UNKNOWN, KCORE_DIGESTS_UNKNOWN
 * for a name not known. */
const char *kcore_digest_location_name(enum kcore_digest_location l);
enum kcore_digest_location kcore_digest_location_from_name(const char *name);

/* "zstd", "zlib", "none", "lzo", "snappy" and back; -1 if unknown. */
const char *kcore_codec_name(enum kcore_codec c);
int kcore_codec_from_name(const char *name);

/* Logical content is hashed in blocks of this size (see kcoredump(8)). */
#define KCORE_HASH_BLOCK (1u << 20)
#define KCORE_DIGEST_LEN 32

/* The block digest under a segment digest (kcoredump(8), Digests).
 * XXH3-128 (the default) costs a fraction of the copy; SHA-256 makes the
 * segment and dump digests collision-resistant against someone who shapes
 * the content, at the cost of a second SHA-256 pass over the data beside
 * the file's. */
enum kcore_block_hash {
	KCORE_BLOCK_HASH_XXH3,
	KCORE_BLOCK_HASH_SHA256,
	KCORE_BLOCK_HASH_NUM
};

struct kcore_range {
	uint64_t start;
	uint64_t end; /* exclusive */
};

struct kcore_selection {
	unsigned classes; /* bit (1u << KCORE_CLASS_x); 0 = the default */
	struct kcore_range *ranges; /* --range; none = everything */
	size_t nranges;
	bool ranges_physical;		   /* --phys */
	bool vmalloc;			   /* --vmalloc-range */
	struct kcore_range vmalloc_window; /* {0, 0} = the whole area */
	const char *caller; /* --caller: vmallocinfo caller substring */
	const char *const *mappings; /* --mapping: fnmatch() patterns */
	size_t nmappings;
	/* Root for proc/vmallocinfo (tests); NULL = "/". */
	const char *sysroot;
};

/* One PT_LOAD of the output, copied from one source segment. */
struct kcore_plan_segment {
	uint64_t vaddr;
	uint64_t paddr;
	bool has_paddr;
	uint64_t size; /* p_filesz of the output */
	/* p_memsz: == size, except for process cores whose source segment
	 * has p_filesz < p_memsz (the rest is in the mapped files). */
	uint64_t memsz;
	uint64_t src_offset; /* source file offset of the first byte */
	uint64_t src_avail;  /* bytes the source file holds (rest: zeros) */
	/*
	 * Bytes [alt_pos, alt_pos + alt_len) come from source offset
	 * alt_offset instead, of which the source holds alt_avail: pages
	 * an earlier segment of the source holds too (alt_len 0: none).
	 */
	uint64_t alt_pos, alt_len, alt_offset, alt_avail;
	uint32_t flags;
	enum kcore_segment_class cls;
	const char *label;
	size_t src_segment; /* index in the source */
	/*
	 * Set by the writer's plan(): this segment's bytes are the file bytes
	 * of the earlier plan segment share_seg from its offset share_off on
	 * (the kernel image's pages inside RAM).  The dump copies them from
	 * there, read once, so both describe one moment; the writer stores
	 * nothing more for it.
	 */
	bool shared;
	size_t share_seg;
	uint64_t share_off;
	/* Filled by the dump. */
	uint64_t out_offset;
	unsigned char digest[KCORE_DIGEST_LEN];
	uint64_t data_bytes; /* bytes written as data (not holes/zeros) */
};

/*
 * Page classes a kernel dump can leave out, by what the kernel's struct
 * page says of them: makedumpfile's dump level bits (-d), with the same
 * meaning.  ZERO is what every dump does anyway: zero pages are holes in
 * ELF and LiME, and share one stored page in a kdump (makedumpfile -d 1
 * does the same: bitmap 2 keeps them, their descriptors point to one
 * zero page).
 */
#define KCORE_EXCLUDE_ZERO	    1u
#define KCORE_EXCLUDE_CACHE	    2u	/* page cache, not PG_private */
#define KCORE_EXCLUDE_CACHE_PRIVATE 4u	/* page cache, PG_private too */
#define KCORE_EXCLUDE_USER	    8u	/* anonymous and hugetlbfs pages */
#define KCORE_EXCLUDE_FREE	    16u /* free pages of the buddy allocator */
#define KCORE_EXCLUDE_ALL	    31u

/* What kcore_plan_exclude() found, in pages. */
struct kcore_exclude_stats {
	unsigned level;		/* KCORE_EXCLUDE_x bits asked for */
	uint64_t pages_scanned; /* pfns of RAM segments looked at */
	uint64_t free, cache, cache_private, user;
	uint64_t hwpoison, offline; /* left out whenever pages are read */
	uint64_t unaccepted;	    /* with FREE: memory not yet accepted */
	uint64_t unreadable; /* pfns whose struct page could not be read */
	uint64_t excluded;   /* all of the above but unreadable */
	size_t ranges;	     /* excluded pfn runs */
	uint64_t page_size;  /* of the pfns above (the kernel's page size) */
	double seconds;
};

struct kcore_plan {
	struct kcore_plan_segment *segs;
	size_t nsegs;
	/* Physical ranges left out of RAM segments (kcore_plan_exclude):
	 * sorted, merged, page-aligned; they are dumped as holes. */
	struct kcore_range *excluded;
	size_t nexcluded;
	struct kcore_exclude_stats exclude; /* level 0: no exclusion */
	/* How vmalloc areas were found, for the summary. */
	const char *vmalloc_source; /* "vmallocinfo", "segments" or NULL */
	size_t vmalloc_areas;
	uint64_t vmalloc_segment_size; /* size of the whole vmalloc area */
	char *warning; /* e.g. kptr_restrict hides vmallocinfo; or NULL */
	char **labels; /* owned strings the segments point to */
	size_t nlabels;
};

struct kcore_error *kcore_plan_create(struct kcore_source *src,
				      const struct kcore_selection *sel,
				      struct kcore_plan **ret);
/*
 * Keep only the segments a physical-memory format can hold: RAM with a
 * physical address, page-aligned, sorted by physical address and not
 * overlapping.  *ret_dropped counts the segments removed (kernel text,
 * vmalloc, modules, ...).  Fails when nothing physical is left.
 */
struct kcore_error *kcore_plan_restrict_physical(struct kcore_plan *plan,
						 uint64_t page_size,
						 size_t *ret_dropped);
/* Order the segments by virtual address, as the ELF ABI asks of PT_LOADs
 * (and as Volatility 3, which does not sort, needs them to scan RAM in
 * physical order from its lowest address). */
void kcore_plan_sort_virtual(struct kcore_plan *plan);
/*
 * Make the plan the one format writes: for kdump, LiME and AVML the RAM
 * segments only (kcore_plan_restrict_physical), for ELF all of them in
 * ascending virtual address.  kcore_dump() does it too; a caller that
 * shows the plan first (--dry-run) calls it to show what will be written.
 */
struct kcore_error *kcore_plan_for_format(struct kcore_plan *plan,
					  enum kcore_format format,
					  uint64_t page_size,
					  size_t *ret_dropped);
void kcore_plan_destroy(struct kcore_plan *plan);
/*
 * Leave out the pages of the classes in level (KCORE_EXCLUDE_x) from the
 * plan's RAM segments, as makedumpfile does: read every struct page of
 * those segments through the source's VMCOREINFO (mem_section, the page
 * flags and types), and record the excluded physical ranges in the plan.
 * Hardware-poisoned and offline pages are left out whenever struct pages
 * are read; unaccepted memory (never handed out yet) goes with FREE.  A live
 * source changes while it is dumped: the classes are those of the moment of the
 * scan.  KCORE_ERR_UNSUPPORTED when the source has no VMCOREINFO or lacks a
 * needed entry (named).
 */
struct kcore_error *kcore_plan_exclude(struct kcore_source *src,
				       struct kcore_plan *plan, unsigned level);
/*
 * The same, calling progress (when not NULL) about every 200 ms of the
 * scan with the counts so far (st->pages_scanned of pages_total pfns);
 * the struct pages of 1 TiB of RAM are 16 GiB to read.
 */
typedef void (*kcore_exclude_progress_fn)(void *arg,
					  const struct kcore_exclude_stats *st,
					  uint64_t pages_total);
struct kcore_error *
kcore_plan_exclude_progress(struct kcore_source *src, struct kcore_plan *plan,
			    unsigned level, kcore_exclude_progress_fn progress,
			    void *progress_arg);
/* "free,cache,..." names of the bits in level, into buf. */
const char *kcore_exclude_names(unsigned level, char *buf, size_t len);
/* Parse "31" (a makedumpfile dump level) or "free,user,..."; -1 if bad. */
int kcore_exclude_parse(const char *s);

/* A range the dump could not read: zeros in the dump, and recorded. */
struct kcore_read_error {
	uint64_t offset; /* source file offset */
	uint64_t len;
	int errnum;	     /* EBADMSG: the source's data is corrupt */
	char *message;	     /* what is wrong, for EBADMSG (else NULL) */
	size_t segment;	     /* the plan's (the output's) segment */
	uint64_t seg_offset; /* where the range starts in it */
};

struct kcore_dump_stats {
	uint64_t bytes_total;	/* bytes of output segments */
	uint64_t bytes_to_read; /* data extents: what will be read */
	uint64_t bytes_read;
	uint64_t bytes_hole;	 /* skipped: holes in the source */
	uint64_t bytes_excluded; /* skipped: pages kcore_plan_exclude()
				    left out (final stats only) */
	uint64_t bytes_zero;	 /* read, found to be zero pages */
	/* Of bytes_read, moved to the output by splice(2), never looked at
	 * (--hash none into a pipe): their zero pages are not counted in
	 * bytes_zero, they are data in the segments' data_bytes. */
	uint64_t bytes_spliced;
	uint64_t bytes_done;	   /* logical bytes processed (read + holes) */
	uint64_t bytes_written;	   /* output bytes (after compression) */
	uint64_t bytes_unreadable; /* zero-filled after read errors */
	uint64_t start_ns, end_ns; /* CLOCK_REALTIME window of the read */
	double elapsed;		   /* seconds, monotonic: the whole dump */
	/* Its steps, in seconds (monotonic): the read (start_ns to end_ns:
	 * reading, and writing the blocks read), the end of the output
	 * (digests, notes, headers or trailer, the end of the stream), the
	 * wait for the file's SHA-256 to catch up with the last bytes (or
	 * to read back a file written out of order), and publishing (sync,
	 * rename).  Set once each step is over. */
	double read_seconds, finish_seconds, file_hash_seconds, publish_seconds;
	/* Seconds the file's SHA-256 thread spent hashing, alongside the
	 * read (not one of the steps above). */
	double file_hash_busy_seconds;
	bool seek_data; /* holes found with SEEK_DATA/SEEK_HOLE */
	/* What the dump is doing, for progress: "reading", then the steps
	 * after the last read ("compressing the last blocks", "checking the
	 * smear" with --smear-check, "writing the notes and headers",
	 * "hashing the file", "publishing"), "done". */
	const char *phase;
};

/*
 * A format's own part of a dump's summary (its writer fills it in): words
 * after the format's name, a line of text, and a JSON object of a few
 * members named after the format.
 */
#define KCORE_DETAIL_FIELDS 6
struct kcore_dump_detail {
	char format_text[96];	/* ", zstd pages, ...": after the name; or "" */
	const char *line_label; /* "kdump pages", or NULL: no line */
	char line[160];
	const char *object; /* the JSON object's name, or NULL: none */
	struct kcore_detail_field {
		const char *key;
		enum {
			KCORE_DETAIL_STRING,
			KCORE_DETAIL_BOOL,
			KCORE_DETAIL_U64
		} type;
		const char *str; /* a static string */
		uint64_t u64;	 /* also the bool */
	} fields[KCORE_DETAIL_FIELDS];
	size_t nfields;
};

struct kcore_dump_opts {
	const char *output; /* path, or "-" for stdout */
	int output_fd;	    /* with output "-": the fd to write */
	bool force;	    /* replace an existing output */
	bool sync;	    /* fsync before publishing */
	/* Write into an existing FIFO or device named by output. */
	bool special_output;
	enum kcore_format format;
	enum kcore_compress compress; /* whole stream: ELF and LiME */
	int level;
	enum kcore_codec codec; /* kdump pages */
	int codec_level;	/* 0 = the codec's default */
	unsigned threads;	/* 0 = online CPUs */
	uint64_t block_size;	/* read size; multiple of KCORE_HASH_BLOCK */
	/* .zst/.xz frame size (KCORE_STREAM_MIN_FRAME..KCORE_STREAM_MAX_FRAME;
	 * 0: KCORE_STREAM_DEFAULT_FRAME): larger frames compress a little
	 * better, smaller ones make random reads of the dump cheaper. */
	uint64_t frame_size;
	/* --hash none: no digests (they are recorded as "none"). */
	bool no_hash;
	/* The block digest under the segment digests (0: XXH3-128). */
	enum kcore_block_hash block_hash;
	/* The file's SHA-256 is computed on the fly when its bytes go out in
	 * order (streams, pipes), or read back from the file when it is
	 * sparse; then only when its holes are at most as large as its data
	 * (at least 64 MiB of them), unless file_sha256_always. */
	bool file_sha256_always;
	/* Write a dump of the live kernel's memory (KCORE_SOURCE_LIVE_KCORE)
	 * to a file system this machine keeps in RAM (tmpfs, ramfs, zram:
	 * kcore_output_ram_medium()): refused otherwise, because the dump
	 * would overwrite the free memory it images, and likely run out of
	 * room before it ends. */
	bool allow_ram_output;
	const struct kcore_io_ops *out_io; /* NULL = system calls */
	/* Set asynchronously (signal handler) to stop promptly. */
	volatile sig_atomic_t *cancel;
	/* Called from the dumping thread, at most about 5 times a second. */
	void (*progress)(void *arg, const struct kcore_dump_stats *st);
	void *progress_arg;
	/* Text recorded in the metadata note: command line, host. */
	const char *command_line;
	/* An acquisition's case, examiner and notes (--case, --examiner,
	 * --notes), recorded in the note when not NULL (control bytes as
	 * '?'). */
	const char *case_id, *examiner, *notes;
	/* --smear-check[=FRACTION]: after the read, read the blocks again
	 * (all of them at 1, about that fraction of them below) and count
	 * the pages that changed since (kcore_dump_result.smear); 0: not. */
	double smear_check;
	/* --read-order: what is read first (enum kcore_read_order). */
	int read_order;
};

/*
 * The order a dump reads its source in; the output's layout is the same
 * either way (segments in address order).  ADDRESS: the plan's segments
 * front to back.  VOLATILE_FIRST: the small parts a reader needs to make
 * sense of the rest, which a live kernel changes, first and close
 * together (the read phases: the kernel image, text and data, then the
 * kernel's page tables where the architecture can walk them), kept in
 * memory (at most KCORE_READ_FIRST_MAX bytes) until the address-order
 * pass reaches them; the notes and VMCOREINFO are read when the source
 * is opened, before all of it.  DEFAULT: VOLATILE_FIRST for the live
 * kernel (KCORE_SOURCE_LIVE_KCORE), ADDRESS for every other source.
 */
enum kcore_read_order {
	KCORE_READ_ORDER_DEFAULT,
	KCORE_READ_ORDER_ADDRESS,
	KCORE_READ_ORDER_VOLATILE_FIRST,
};
#define KCORE_READ_FIRST_MAX (256ull << 20)
/* "address", "volatile-first" and back (-1: unknown). */
const char *kcore_read_order_name(enum kcore_read_order o);
int kcore_read_order_from_name(const char *name);

/* One read phase of the volatile-first order: segment bytes [offset,
 * offset + length) of the plan, read before the rest (times as the time
 * map's, from the read's start; bytes: the data read, holes not). */
struct kcore_read_phase {
	const char *what; /* "image", "page-tables" */
	size_t segment;
	uint64_t offset, length;
	uint64_t start_ns, end_ns, bytes;
};

/*
 * How much memory changed while it was read (the "smear"): the pages read
 * a second time after the read, and those whose bytes changed, in all, by
 * segment class (a page of RAM that a shared segment describes, the
 * kernel image, counts as the shared segment's class) and by the time
 * between the two reads.  A source that is not the live kernel should not
 * change: live says whether it is.
 */
#define KCORE_SMEAR_GAPS 5 /* < 1 s, < 10 s, < 60 s, < 600 s, more */
struct kcore_smear_count {
	uint64_t pages, changed;
};
struct kcore_smear {
	bool checked; /* the check ran */
	bool live;    /* the source is the live kernel */
	double fraction;
	uint64_t bytes_read;	   /* read the second time */
	uint64_t pages_unreadable; /* read the first time, not the second */
	double seconds;		   /* the check's own phase */
	struct kcore_smear_count all, by_class[KCORE_CLASS_OTHER + 1],
		by_gap[KCORE_SMEAR_GAPS];
	/* The runs of changed pages, in the order they were read (memory:
	 * at most one per changed page; NULL when out of memory, then
	 * nchanges still counts them). */
	struct kcore_smear_change {
		size_t segment;
		uint64_t vaddr, offset, length;
		double gap_seconds; /* between the two reads */
	} * changes;
	size_t nchanges, changes_listed;
};
/* The upper bounds of the first KCORE_SMEAR_GAPS - 1 gaps, in seconds. */
extern const double kcore_smear_gap_limits[KCORE_SMEAR_GAPS - 1];
/*
 * verify --live: how much of the live kernel changed since the dump at
 * dump_path (a kcoredump dump of this boot's /proc/kcore) read it.  The
 * cells of its note's time map are read again from live_path (NULL:
 * /proc/kcore) and compared page by page with the dump's bytes, counted
 * as --smear-check counts them (*ret; the gap runs from when the dump
 * read the cell to now; a segment whose bytes are another's, the image
 * in RAM, is compared once, in its class).  A dump with --exclude: its
 * zero pages (possibly excluded) are not compared.  Refused
 * (KCORE_ERR_UNSUPPORTED, one line naming the dump): a dump without our
 * note, time map or boot ID, or of another boot.  boot: this boot's ID.
 * Free ret->changes after.
 */
struct kcore_error *kcore_smear_live(const char *dump_path,
				     const char *live_path,
				     volatile sig_atomic_t *cancel,
				     struct kcore_smear *ret, char boot[64]);

/*
 * The time map: when the bytes of the plan's segments were read.  Each
 * segment is cut in cells of read_time_grain bytes (a power of two, at
 * least 4 MiB, doubled until the plan has at most KCORE_READ_TIME_CELLS
 * cells more than segments); a cell that was read holds the first and
 * the last moment any of its bytes was read, in nanoseconds of
 * CLOCK_BOOTTIME after the read's start (stats.start_ns).  A shared segment's
 * cells hold the times of the bytes they were copied from.  Our note carries it
 * ("read_time=" lines, in microseconds), and so does the record.
 */
#define KCORE_READ_TIME_CELLS 4096
/* The most cells our note carries (the record carries them all): the
 * note makes room for the cells that hold data, at most this many; past
 * it, "read_time_omitted=" counts the cells left out. */
#define KCORE_READ_TIME_NOTE_CELLS 16384
struct kcore_read_time {
	size_t segment;		   /* the plan's (the output's) segment */
	uint64_t offset, length;   /* the cell, in the segment */
	uint64_t start_ns, end_ns; /* from the read's start */
	bool read;
};

/*
 * A dump is complete when every byte it was to hold could be read:
 * otherwise stats.bytes_unreadable says how much could not, errors[] lists
 * the ranges (adjacent ones merged; all of them but when memory ran out),
 * and every format records it in the file where it has room (our note,
 * an ELF's e_flags and a kdump header's status as makedumpfile marks them;
 * kcoredump(8) COMPLETENESS).
 */
struct kcore_dump_result {
	struct kcore_dump_stats stats;
	/* The segment-digest root: SHA-256 of the segment digests, the same
	 * for the same content in every format (not the file's hash). */
	unsigned char digest[KCORE_DIGEST_LEN];
	/* The block digest under the segment digests (opts.block_hash). */
	enum kcore_block_hash block_hash;
	/* SHA-256 of the output file's bytes as written (sha256sum's),
	 * when has_file_sha256: not with --hash none, nor for a device
	 * written out of order. */
	unsigned char file_sha256[KCORE_DIGEST_LEN];
	bool has_file_sha256;
	/* Not computed: the bytes of holes it would have hashed (a sparse
	 * file, without file_sha256_always). */
	uint64_t file_sha256_skipped;
	struct kcore_read_error *errors;
	size_t nerrors;
	char *output_path; /* the published path, or NULL for stdout */
	enum kcore_digest_location digest_location;
	size_t dropped_segments; /* not physical RAM (kdump, LiME) */
	/* What the format adds to the summary, filled in by its writer
	 * (kdump: its codec, flattened, the pages with data, zero and
	 * excluded). */
	struct kcore_dump_detail detail;
	/* The source is a dump that says it is incomplete
	 * (kcore_source_info.incomplete): so is this one. */
	bool source_incomplete;
	uint64_t source_unreadable_bytes, source_unreadable_ranges;
	/* The time map: the cells that were read, in segment order, once
	 * the dump is done (all the plan's cells while it runs); the note
	 * has room for read_time_cells of them (the cells that hold data, at
	 * most KCORE_READ_TIME_NOTE_CELLS). */
	struct kcore_read_time *read_times;
	size_t nread_times, read_time_cells;
	uint64_t read_time_grain; /* --smear-check: what changed while it was
				     read. */
	struct kcore_smear smear;
	/* The order the source was read in (never DEFAULT once the dump
	 * started) and its read phases, in the order they were read. */
	enum kcore_read_order read_order;
	struct kcore_read_phase *read_phases;
	size_t nread_phases;
};

struct kcore_error *kcore_dump(struct kcore_source *src,
			       struct kcore_plan *plan,
			       const struct kcore_dump_opts *opts,
			       struct kcore_dump_result *ret);
/* Frees what *res holds: call it after every kcore_dump(), failed or not
 * (a failed dump may have recorded read errors). */
void kcore_dump_result_deinit(struct kcore_dump_result *res);
/*
 * What kcore_dump() refuses of the output before it reads anything, for
 * callers that do costly work first (--exclude's scan): a dump of the live
 * kernel's memory to a file system in this machine's RAM, unless
 * opts->allow_ram_output.
 */
struct kcore_error *kcore_dump_output_check(const struct kcore_source *src,
					    const struct kcore_dump_opts *opts);
/* Some of the dump's memory could not be read, now or when its source was
 * made (see above). */
static inline bool kcore_dump_incomplete(const struct kcore_dump_result *res)
{
	return res->stats.bytes_unreadable != 0 || res->source_incomplete;
}

/* Hashing (hash.c): the documented digest of logical content. */
struct kcore_seg_hasher;
/* The one table of the methods' names (hash.c): the name reports print
 * ("xxh3-128", "sha256"), the name options take ("xxh3", "sha256"), the
 * note's hash= value; and back (-1: unknown; from_name takes either of the
 * first two). */
const char *kcore_block_hash_name(enum kcore_block_hash m);
const char *kcore_block_hash_option_name(enum kcore_block_hash m);
const char *kcore_block_hash_note_name(enum kcore_block_hash m);
int kcore_block_hash_from_name(const char *name);
int kcore_block_hash_from_note_name(const char *name);
/* The digest of one block (KCORE_BLOCK_HASH_XXH3: 16 bytes, the rest of
 * out zeroed). */
void kcore_block_digest(enum kcore_block_hash m, const void *data, size_t len,
			unsigned char out[KCORE_DIGEST_LEN]);
/* SHA-256 block digests (the crash handler's stored cores). */
struct kcore_error *kcore_seg_hasher_create(uint64_t size,
					    struct kcore_seg_hasher **ret);
struct kcore_error *kcore_seg_hasher_create_with(enum kcore_block_hash m,
						 uint64_t size,
						 struct kcore_seg_hasher **ret);
/* Blocks must be added in ascending order; all-zero blocks may be left
 * out (they do not contribute).  digest is kcore_block_digest()'s. */
struct kcore_error *kcore_seg_hasher_add(struct kcore_seg_hasher *h,
					 uint64_t block_index,
					 const unsigned char *digest);
void kcore_seg_hasher_finish(struct kcore_seg_hasher *h,
			     unsigned char out[KCORE_DIGEST_LEN]);
void kcore_seg_hasher_destroy(struct kcore_seg_hasher *h);
/* SHA-256 of data: a long input (64 KiB or more) through the
 * implementation kcore_sha256_choose() picks. */
void kcore_sha256(const void *data, size_t len,
		  unsigned char out[KCORE_DIGEST_LEN]);

/*
 * The SHA-256 implementations: OpenSSL's libcrypto and nettle give the
 * same digests at speeds that depend on the CPU (SHA-NI, AVX2) and on an
 * emulator's (QEMU's TCG runs nettle's plain x86-64 code 3.7x as fast as
 * OpenSSL's AVX2 code).  Long digests (a file's, 1 MiB blocks) take the
 * one chosen once per process, the first time one is wanted: the faster
 * of the two in a short timing (a fraction of a millisecond; OpenSSL
 * unless nettle is 5 % faster), or the one KCOREDUMP_SHA256 names.
 */
enum kcore_sha256_impl {
	KCORE_SHA256_OPENSSL,
	KCORE_SHA256_NETTLE,
	KCORE_SHA256_IMPL_NUM
};
struct kcore_sha256_choice {
	enum kcore_sha256_impl impl;
	const char *name; /* kcore_sha256_impl_name(impl) */
	const char *why;  /* "timed", "KCOREDUMP_SHA256", "the only one" */
	/* The timing's rates in MiB/s; 0 where not timed. */
	double mib_per_s[KCORE_SHA256_IMPL_NUM];
};
const char *kcore_sha256_impl_name(enum kcore_sha256_impl impl);
/* Whether this build has impl (nettle is optional at build time). */
bool kcore_sha256_impl_available(enum kcore_sha256_impl impl);
/* The choice, made now if it has not been; thread-safe.  An error (and
 * still *ret: the timed choice) when KCOREDUMP_SHA256 names no
 * implementation of this build. */
struct kcore_error *kcore_sha256_choose(const struct kcore_sha256_choice **ret);
/* The choice this process made, or NULL if it has made none. */
const struct kcore_sha256_choice *kcore_sha256_chosen(void);
/* Dump digest from segment digests in program header order. */
void kcore_dump_digest(const unsigned char (*segs)[KCORE_DIGEST_LEN], size_t n,
		       unsigned char out[KCORE_DIGEST_LEN]);
bool kcore_is_zero(const void *buf, size_t len);

/* The same digest for content that arrives in order (verify). */
struct kcore_content_hasher;
struct kcore_error *
kcore_content_hasher_create(enum kcore_block_hash m, uint64_t size,
			    struct kcore_content_hasher **ret);
struct kcore_error *kcore_content_hasher_add(struct kcore_content_hasher *c,
					     const void *data, uint64_t len);
struct kcore_error *
kcore_content_hasher_add_zeros(struct kcore_content_hasher *c, uint64_t len);
/* Pads the rest with zeros. */
struct kcore_error *
kcore_content_hasher_finish(struct kcore_content_hasher *c,
			    unsigned char out[KCORE_DIGEST_LEN]);
void kcore_content_hasher_destroy(struct kcore_content_hasher *c);
void kcore_hex(const unsigned char *bytes, size_t len, char *out);

/*
 * The SHA-256 of a file's bytes, what sha256sum prints (unlike the digests
 * above, which cover logical content whatever the format): a hasher fed in
 * order, and the hash of size bytes of an open file, read on the calling
 * thread while another hashes what was read before, whose holes are
 * hashed as zeros without being read (the cost of hashing them remains:
 * SHA-256 has no shortcut for zeros).  cancel: as in kcore_dump_opts.
 */
struct kcore_file_hasher;
/* With the chosen SHA-256 implementation (kcore_sha256_choose(): its
 * error if KCOREDUMP_SHA256 is bad), or with impl (tests). */
struct kcore_error *kcore_file_hasher_create(struct kcore_file_hasher **ret);
struct kcore_error *
kcore_file_hasher_create_with(enum kcore_sha256_impl impl,
			      struct kcore_file_hasher **ret);
void kcore_file_hasher_add(struct kcore_file_hasher *h, const void *data,
			   size_t len);
void kcore_file_hasher_add_zeros(struct kcore_file_hasher *h, uint64_t len);
void kcore_file_hasher_finish(struct kcore_file_hasher *h,
			      unsigned char out[KCORE_DIGEST_LEN]);
void kcore_file_hasher_destroy(struct kcore_file_hasher *h);
struct kcore_error *kcore_file_sha256(int fd, const char *path, uint64_t size,
				      volatile sig_atomic_t *cancel,
				      unsigned char out[KCORE_DIGEST_LEN]);

#ifdef __cplusplus
}
#endif

#endif
