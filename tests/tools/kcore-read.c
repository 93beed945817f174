// SPDX-License-Identifier: MIT
/*
 * kcore-read: read memory from a source through libkcore, for tests.
 *   kcore-read SOURCE (--vaddr A | --paddr A | --offset O) --len N [--hex]
 * Raw bytes go to stdout (or a hex dump with --hex).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcoredump/kcore.h"

static int usage(void)
{
	fprintf(stderr, "usage: kcore-read SOURCE (--vaddr A | --paddr A | "
			"--offset O) --len N [--hex]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *mode = NULL;
	uint64_t addr = 0, len = 0;
	bool hex = false;
	struct kcore_source *src;
	struct kcore_error *err;
	unsigned char *buf;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hex")) {
			hex = true;
		} else if (i + 1 < argc && (!strcmp(argv[i], "--vaddr") ||
					    !strcmp(argv[i], "--paddr") ||
					    !strcmp(argv[i], "--offset"))) {
			mode = argv[i];
			addr = strtoull(argv[++i], NULL, 0);
		} else if (i + 1 < argc && !strcmp(argv[i], "--len")) {
			len = strtoull(argv[++i], NULL, 0);
		} else if (!path && argv[i][0] != '-') {
			path = argv[i];
		} else {
			return usage();
		}
	}
	if (!path || !mode || !len || len > (1ull << 30))
		return usage();
	buf = malloc(len);
	if (!buf)
		return 1;
	err = kcore_source_open(path, NULL, &src);
	if (!err) {
		if (!strcmp(mode, "--vaddr"))
			err = kcore_source_read_vaddr(src, addr, buf, len);
		else if (!strcmp(mode, "--paddr"))
			err = kcore_source_read_paddr(src, addr, buf, len);
		else
			err = kcore_source_pread(src, buf, len, addr);
		kcore_source_destroy(src);
	}
	if (err) {
		char *msg = kcore_error_describe(err);

		fprintf(stderr, "kcore-read: %s\n", msg ? msg : "error");
		free(msg);
		kcore_error_destroy(err);
		free(buf);
		return 1;
	}
	if (hex) {
		for (uint64_t i = 0; i < len; i += 16) {
			printf("%016" PRIx64 ":", addr + i);
			for (uint64_t k = i; k < i + 16 && k < len; k++)
				printf(" %02x", buf[k]);
			printf("\n");
		}
	} else if (fwrite(buf, 1, len, stdout) != len) {
		free(buf);
		return 1;
	}
	free(buf);
	return fflush(stdout) ? 1 : 0;
}
