/* SPDX-License-Identifier: MIT */
/*
 * Benchmarks: how fast a source reads, per segment class, block size and
 * reader thread count, and where the time of a dump goes: the kernel's
 * copy (raw preads), our per-block processing (zero-page detection and
 * SHA-256, as the dump does it) or the whole dump pipeline (to /dev/null).
 *
 * Every measurement is bounded in bytes and in time and samples blocks at
 * evenly spaced offsets across all ranges of a class, so a short run still
 * sees the whole class, not only its start.  Nothing is printed: the
 * caller renders the result.
 */
#ifndef KCOREDUMP_BENCH_H
#define KCOREDUMP_BENCH_H

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

enum kcore_bench_class {
	KCORE_BENCH_RAM,	  /* kcore: direct-mapped RAM */
	KCORE_BENCH_TEXT,	  /* kcore: kernel image */
	KCORE_BENCH_MODULES,	  /* kcore: mapped module areas */
	KCORE_BENCH_VMALLOC,	  /* kcore: mapped vmalloc areas */
	KCORE_BENCH_VMALLOC_HOLE, /* kcore: unmapped vmalloc space */
	KCORE_BENCH_VMEMMAP,	  /* kcore: struct page array */
	KCORE_BENCH_DATA,	  /* file: data extents of PT_LOADs */
	KCORE_BENCH_HOLE,	  /* file: hole extents of PT_LOADs */
	KCORE_BENCH_CLASS_NUM
};

enum kcore_bench_mode {
	KCORE_BENCH_RAW,  /* pread only */
	KCORE_BENCH_ZERO, /* pread + zero pages + SHA-256 of 1 MiB blocks */
	KCORE_BENCH_DUMP, /* kcore_dump() of the sampled blocks to /dev/null */
	KCORE_BENCH_MODE_NUM
};

/* "ram", "text", "modules", "vmalloc", "vmalloc-hole", "vmemmap", "data",
 * "hole"; "raw", "zero", "dump"; and back (-1 if unknown). */
const char *kcore_bench_class_name(enum kcore_bench_class cls);
int kcore_bench_class_from_name(const char *name);
const char *kcore_bench_mode_name(enum kcore_bench_mode mode);
int kcore_bench_mode_from_name(const char *name);

#define KCORE_BENCH_MAX_CONFIGS 16

struct kcore_bench_opts {
	unsigned classes; /* bit (1u << KCORE_BENCH_x); 0 = all that apply */
	unsigned modes;	  /* bit (1u << KCORE_BENCH_x); 0 = all */
	/* Block sizes (bytes, multiples of 512) and reader thread counts to
	 * try; none = 1 MiB and 1 thread. */
	uint64_t block_sizes[KCORE_BENCH_MAX_CONFIGS];
	size_t nblock_sizes;
	unsigned threads[KCORE_BENCH_MAX_CONFIGS];
	size_t nthreads;
	uint64_t limit; /* bytes per measurement; 0 = 64 MiB */
	double seconds; /* per measurement; 0 = 2 */
	/* The dump mode's output compression and level (0 = default). */
	enum kcore_compress compress;
	int level;
	/* Root for proc/vmallocinfo (tests); NULL = "/". */
	const char *sysroot;
	/* Set asynchronously (signal handler) to stop promptly. */
	volatile sig_atomic_t *cancel;
	/* Called after each measurement (progress), from the calling
	 * thread; may be NULL. */
	void (*progress)(void *arg, size_t done, size_t total);
	void *progress_arg;
};

/* What a class holds in this source. */
struct kcore_bench_class_info {
	bool present;	/* the source has this class */
	uint64_t bytes; /* bytes of its ranges */
	size_t nranges; /* ranges (segments, areas or extents) */
};

/* One measurement: a class, a mode, a block size, a thread count. */
struct kcore_bench_run {
	enum kcore_bench_class cls;
	enum kcore_bench_mode mode;
	/* Read size.  The dump mode reads each sampled block in one read
	 * of this size (its pipeline block is rounded up to 1 MiB). */
	uint64_t block_size;
	/* Reader threads; for the dump mode its worker threads (the dump
	 * reads on one thread). */
	unsigned threads;
	uint64_t bytes; /* bytes read */
	/* Read calls; dump mode: sampled blocks processed, holes included. */
	uint64_t reads;
	/* Dump mode: bytes of sampled blocks the hole map skipped. */
	uint64_t bytes_hole;
	uint64_t zero_bytes;	/* zero-page bytes (zero and dump modes) */
	uint64_t read_errors;	/* reads that failed (counted, skipped) */
	uint64_t bytes_written; /* dump mode: bytes written to /dev/null */
	double seconds;		/* wall time of the measurement */
	double process_seconds; /* zero mode: thread time spent after the
				   reads (zero detection and hashing) */
	bool has_latency;	/* per-read latencies (not for dump) */
	double latency_median;	/* seconds per read */
	double latency_p99;
	bool stopped_by_time; /* the time bound ended it, not the limit */
};

/* What the hole map of a source lets a dump skip. */
struct kcore_bench_holes {
	/* SEEK_DATA/SEEK_HOLE are meaningful: regular files, or a kcore
	 * whose kernel implements them (lseek(fd, 0, SEEK_HOLE) < size). */
	bool seek_data;
	uint64_t file_size;  /* st_size (kcore: the whole address space) */
	uint64_t load_bytes; /* PT_LOAD p_filesz, summed */
	/* SEEK_DATA/SEEK_HOLE over the PT_LOADs (when seek_data). */
	uint64_t data_bytes;
	uint64_t hole_bytes;
	/* kcore: RAM, and the vmalloc and module segments vs their mapped
	 * areas (from /proc/vmallocinfo or the page tables). */
	uint64_t ram_bytes;
	uint64_t vmalloc_segment_bytes;
	uint64_t vmalloc_mapped_bytes;
	uint64_t modules_segment_bytes;
	uint64_t modules_mapped_bytes;
	const char *vmalloc_source; /* "vmallocinfo", "page tables", NULL */
	/* Bytes a dump of everything need not read: file holes, or for
	 * kcore the unmapped vmalloc and module space. */
	uint64_t skippable_bytes;
};

struct kcore_bench_result {
	bool live; /* kernel classes (kcore) rather than data/hole */
	struct kcore_bench_class_info classes[KCORE_BENCH_CLASS_NUM];
	struct kcore_bench_holes holes;
	struct kcore_bench_run *runs;
	size_t nruns;
	char *warning;	/* e.g. vmallocinfo hidden by kptr_restrict; or NULL */
	double seconds; /* the whole benchmark */
};

/*
 * Measure src as opts says.  A class the source does not have is left
 * out (present = false, no runs).  Interruption through opts->cancel is a
 * KCORE_ERR_INTERRUPTED error.
 */
struct kcore_error *kcore_bench(struct kcore_source *src,
				const struct kcore_bench_opts *opts,
				struct kcore_bench_result *ret);
void kcore_bench_result_deinit(struct kcore_bench_result *res);

#ifdef __cplusplus
}
#endif

#endif
