// SPDX-License-Identifier: MIT
/*
 * kcoredump dump MATCH: the plain bytes of the newest stored core that
 * matches (as coredumpctl dump), to a file or to stdout.  A .zst/.xz
 * core is decoded; a plain one copied; holes stay holes in a file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/corehandler.h"
#include "kcoredump/verify.h"
#include "store-dump.h"
#include "store-match.h"

bool store_dump_wanted(const char *arg)
{
	struct match m;
	struct stat st;

	/* An existing path, or anything that looks like one, is a
	 * SOURCE. */
	if (strchr(arg, '/') || lstat(arg, &st) == 0)
		return false;
	return store_parse_match(arg, &m);
}

int store_dump(struct cli_ctx *ctx, const char *cmd, const char *dir, int argc,
	       char **argv, int first, const char *output, bool force,
	       bool quiet)
{
	struct kcore_stored_core *cores, *c = NULL;
	struct kcore_error *err;
	size_t n;
	uint64_t size = 0;
	char *path;
	int done;

	done = store_newest_match(ctx, cmd, dir, argc, argv, first, &cores, &n,
				  &c);
	if (done >= 0)
		return done;
	if (!c) {
		fprintf(stderr,
			"kcoredump %s: no stored core in %s matches%s%s\n", cmd,
			cli_esc(dir), argc - first == 1 ? " " : "",
			argc - first == 1 ? cli_esc(argv[first]) : "");
		kcore_stored_cores_free(cores, n);
		return EXIT_FAILURE_;
	}
	path = store_core_path(dir, c);
	if (!path) {
		kcore_stored_cores_free(cores, n);
		return cli_fail(ctx, &kcore_error_nomem);
	}
	err = kcore_copy_core(path, output, force, cli_catch_signals(), &size);
	if (err) {
		free(path);
		kcore_stored_cores_free(cores, n);
		return cli_fail(ctx, err);
	}
	/* With -o - the core owns stdout. */
	FILE *f = strcmp(output, "-") == 0 ? stderr : stdout;

	if (ctx->json) {
		struct kcore_json j;

		kcore_json_init(&j, f);
		kcore_json_object_begin(&j, NULL);
		kcore_json_string(&j, "source", path);
		if (strcmp(output, "-") == 0)
			kcore_json_null(&j, "path");
		else
			kcore_json_string(&j, "path", output);
		kcore_json_u64(&j, "bytes", size);
		kcore_json_object_begin(&j, "stored");
		store_json_core(&j, c);
		kcore_json_object_end(&j);
		kcore_json_object_end(&j);
		kcore_json_finish(&j);
	} else if (!quiet) {
		fprintf(f, "kcoredump %s: %s (%" PRIu64 " bytes) to %s\n", cmd,
			cli_esc(path), size,
			strcmp(output, "-") == 0 ? "stdout" : cli_esc(output));
	}
	free(path);
	kcore_stored_cores_free(cores, n);
	return EXIT_SUCCESS;
}
