// SPDX-License-Identifier: MIT
/*
 * kcoredump cat: memory at a virtual or physical address of any source,
 * as a hexdump, raw bytes or JSON.  Virtual addresses in physical-only
 * dumps are translated only when that is exact (libkcore refuses
 * otherwise); --symbol names come from /proc/kallsyms for the live
 * kernel and from VMCOREINFO SYMBOL() lines for any kernel source.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"

#define CHUNK	      (1u << 20)
#define JSON_MAX      (1u << 20)
#define DEFAULT_LEN   256
#define KALLSYMS_PATH "/proc/kallsyms"

static const struct cli_option cat_options[] = {
	{ "addr", 'a', CLI_ARG_REQUIRED, "ADDR",
	  "start at this address (virtual unless --phys)", NULL, 'a' },
	{ "len", 'l', CLI_ARG_REQUIRED, "SIZE", "read SIZE bytes (default 256)",
	  NULL, 'l' },
	{ "phys", 'p', CLI_ARG_NONE, NULL, "ADDR is a physical address", NULL,
	  'p' },
	{ "symbol", 's', CLI_ARG_REQUIRED, "NAME",
	  "start at kernel symbol NAME (/proc/kallsyms or VMCOREINFO)", NULL,
	  's' },
	{ "hex", 'x', CLI_ARG_NONE, NULL,
	  "print a hexdump -C style dump (default on a terminal)", NULL, 'x' },
	{ "raw", 'R', CLI_ARG_NONE, NULL,
	  "write the bytes themselves (never to a terminal)", NULL, 'R' },
	{ "json", 'j', CLI_ARG_NONE, NULL,
	  "print address, length and the bytes in hex as one JSON document",
	  NULL, 'j' },
	CLI_OPT_QUIET("--hex: no closing line with the end address"),
	CLI_OPT_VERBOSE("say on stderr what is read: address, length, "
			"where --symbol's address came from, and when a "
			"kcoredump dump read it"),
	{ 0 },
};

/* /proc/kallsyms: "ADDR TYPE NAME [MODULE]". */
static struct kcore_error *kallsyms_lookup(const char *name, uint64_t *ret,
					   bool *found)
{
	FILE *f = fopen(KALLSYMS_PATH, "re");
	char line[512];
	bool all_zero = true, any = false;

	*found = false;
	if (!f)
		return kcore_error_create(KCORE_ERR_OS, errno, KALLSYMS_PATH,
					  "cannot open");
	while (fgets(line, sizeof(line), f)) {
		char type, sym[256];
		unsigned long long addr;

		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) != 3)
			continue;
		any = true;
		if (addr)
			all_zero = false;
		if (strcmp(sym, name) == 0) {
			*ret = addr;
			*found = true;
			break;
		}
	}
	fclose(f);
	if (*found && *ret == 0 && all_zero)
		return kcore_error_create(
			KCORE_ERR_ACCESS, 0, KALLSYMS_PATH,
			"addresses are hidden (kernel.kptr_restrict, or no "
			"CAP_SYSLOG): cannot resolve '%s'",
			name);
	if (!any)
		return kcore_error_create(KCORE_ERR_FORMAT, 0, KALLSYMS_PATH,
					  "lists no symbols");
	return NULL;
}

static struct kcore_error *resolve_symbol(struct kcore_source *src,
					  const char *name, uint64_t *ret,
					  const char **ret_from)
{
	const struct kcore_source_info *in = kcore_source_info(src);
	const struct kcore_vmcoreinfo *vi = kcore_source_vmcoreinfo(src);
	char key[300];

	if (in->kind == KCORE_SOURCE_LIVE_KCORE) {
		bool found;
		struct kcore_error *err = kallsyms_lookup(name, ret, &found);

		if (err || found) {
			*ret_from = KALLSYMS_PATH;
			return err;
		}
	}
	snprintf(key, sizeof(key), "SYMBOL(%s)", name);
	if (vi && kcore_vmcoreinfo_get_u64(vi, key, ret)) {
		*ret_from = "VMCOREINFO";
		return NULL;
	}
	return kcore_error_create(
		KCORE_ERR_INVALID, 0, in->path, "symbol '%s' is not known: %s",
		name,
		!vi ? "the source has no VMCOREINFO"
		: in->kind == KCORE_SOURCE_LIVE_KCORE
			? "neither /proc/kallsyms nor VMCOREINFO lists it"
			: "VMCOREINFO has no SYMBOL() line for it (only the "
			  "live kernel's /proc/kallsyms lists every symbol)");
}

struct hexdump {
	uint64_t addr; /* address of the next line */
	unsigned char prev[16];
	bool have_prev, starred;
};

static void hex_line(FILE *f, uint64_t addr, const unsigned char *p, size_t n)
{
	fprintf(f, "%016" PRIx64 " ", addr);
	for (size_t i = 0; i < 16; i++) {
		if (i == 8)
			fputc(' ', f);
		if (i < n)
			fprintf(f, " %02x", p[i]);
		else
			fputs("   ", f);
	}
	fputs("  |", f);
	for (size_t i = 0; i < n; i++)
		fputc(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.', f);
	fputs("|\n", f);
}

/* Lines of 16 bytes; repeated lines collapse into "*" as in hexdump -C. */
static void hex_put(FILE *f, struct hexdump *h, const unsigned char *p,
		    size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		size_t k = n - i < 16 ? n - i : 16;

		if (k == 16 && h->have_prev &&
		    memcmp(h->prev, p + i, 16) == 0) {
			if (!h->starred)
				fputs("*\n", f);
			h->starred = true;
		} else {
			hex_line(f, h->addr, p + i, k);
			h->starred = false;
		}
		memcpy(h->prev, p + i, k);
		h->have_prev = k == 16;
		h->addr += k;
	}
}

enum mode { MODE_DEFAULT, MODE_HEX, MODE_RAW };

static struct kcore_error *read_at(struct kcore_source *src, bool phys,
				   uint64_t addr, void *buf, size_t len)
{
	return phys ? kcore_source_read_paddr(src, addr, buf, len)
		    : kcore_source_read_vaddr(src, addr, buf, len);
}

static int cmd_cat(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_parser *p = cli_parser_create(&cli_cmd_cat, argc, argv);
	const char *source = "/proc/kcore", *symbol = NULL, *arg, *from = NULL;
	uint64_t addr = 0, len = DEFAULT_LEN;
	bool have_addr = false, phys = false, quiet = false, verbose = false;
	struct cli_read_time rt;
	enum mode mode = MODE_DEFAULT;
	struct kcore_source *src = NULL;
	struct kcore_error *err = NULL;
	unsigned char *buf = NULL;
	int c, status = EXIT_OK;

	if (!p)
		return cli_fail(ctx, &kcore_error_nomem);
	while ((c = cli_parser_next(p, &arg)) >= 0) {
		switch (c) {
		case 'a':
			if (!cli_parse_u64(arg, &addr)) {
				cli_parser_destroy(p);
				return cli_usage_error(ctx, "cat",
						       "bad address '%s'", arg);
			}
			have_addr = true;
			break;
		case 'l':
			if (!cli_parse_size(arg, &len) || !len) {
				cli_parser_destroy(p);
				return cli_usage_error(ctx, "cat",
						       "bad length '%s'", arg);
			}
			break;
		case 'p':
			phys = true;
			break;
		case 's':
			symbol = arg;
			break;
		case 'x':
			mode = MODE_HEX;
			break;
		case 'R':
			mode = MODE_RAW;
			break;
		case 'j':
			ctx->json = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'v':
			verbose = true;
			break;
		}
	}
	int first, done = cli_parser_end(p, c, &first);

	if (done >= 0)
		return done;
	if (argc - first > 1)
		return cli_usage_error(ctx, "cat", "takes one SOURCE, got %d",
				       argc - first);
	if (have_addr == !!symbol)
		return cli_usage_error(ctx, "cat",
				       "needs exactly one of --addr and "
				       "--symbol");
	if (symbol && phys)
		return cli_usage_error(ctx, "cat",
				       "--symbol gives a virtual address; "
				       "drop --phys");
	if (ctx->json && mode != MODE_DEFAULT)
		return cli_usage_error(ctx, "cat",
				       "--json excludes --raw and --hex");
	if (ctx->json && len > JSON_MAX)
		return cli_usage_error(ctx, "cat",
				       "--json prints at most 1 MiB; use "
				       "--raw for more");
	if (mode == MODE_DEFAULT && !ctx->json)
		mode = isatty(STDOUT_FILENO) ? MODE_HEX : MODE_RAW;
	if (mode == MODE_RAW && isatty(STDOUT_FILENO))
		return cli_usage_error(ctx, "cat",
				       "refusing to write raw memory to a "
				       "terminal; use --hex or redirect it");
	if (argc - first == 1)
		source = argv[first];
	err = kcore_source_open(source, NULL, &src);
	if (err)
		return cli_fail(ctx, err);
	if (symbol) {
		err = resolve_symbol(src, symbol, &addr, &from);
		if (err)
			goto out;
	}
	if (addr + (len - 1) < addr) {
		err = kcore_error_create(KCORE_ERR_INVALID, 0, NULL,
					 "address 0x%" PRIx64
					 " + length 0x%" PRIx64 " wraps around",
					 addr, len);
		goto out;
	}
	if (verbose)
		fprintf(stderr,
			"kcoredump cat: %s: %" PRIu64
			" bytes at %s 0x%016" PRIx64 "%s%s%s%s%s\n",
			cli_esc(source), len, phys ? "physical" : "virtual",
			addr, symbol ? " (" : "", symbol ? cli_esc(symbol) : "",
			symbol ? " from " : "",
			symbol ? (from ? from : "?") : "", symbol ? ")" : "");
	if (verbose || ctx->json) {
		err = cli_read_time(src, addr,
				    phys ? CLI_READ_TIME_PHYSICAL
					 : CLI_READ_TIME_VIRTUAL,
				    &rt);
		if (err)
			goto out;
	}
	if (verbose) {
		fprintf(stderr, "kcoredump cat: ");
		cli_read_time_text(stderr, addr, &rt);
	}
	buf = malloc(len < CHUNK ? (size_t)len : CHUNK);
	if (!buf) {
		err = &kcore_error_nomem;
		goto out;
	}
	if (ctx->json) {
		char *hex = malloc(2 * (size_t)len + 1);

		if (!hex) {
			err = &kcore_error_nomem;
			goto out;
		}
		err = read_at(src, phys, addr, buf, (size_t)len);
		if (!err) {
			struct kcore_json j;

			kcore_hex(buf, (size_t)len, hex);
			kcore_json_init(&j, stdout);
			kcore_json_object_begin(&j, NULL);
			kcore_json_string(&j, "source", source);
			kcore_json_hex(&j, "address", addr);
			kcore_json_bool(&j, "physical", phys);
			kcore_json_string(&j, "symbol", symbol);
			kcore_json_string(&j, "symbol_from", from);
			kcore_json_u64(&j, "length", len);
			kcore_json_string(&j, "hex", hex);
			cli_read_time_json(&j, addr, &rt);
			kcore_json_object_end(&j);
			kcore_json_finish(&j);
		}
		free(hex);
		goto out;
	}
	/* Read everything first would be simpler, but --len may be large:
	 * stream it, and stop at the first unreadable byte. */
	struct hexdump h = { .addr = addr };

	for (uint64_t pos = 0; pos < len && !err; pos += CHUNK) {
		size_t n = len - pos < CHUNK ? (size_t)(len - pos) : CHUNK;

		err = read_at(src, phys, addr + pos, buf, n);
		if (err)
			break;
		if (mode == MODE_HEX)
			hex_put(stdout, &h, buf, n);
		else if (fwrite(buf, 1, n, stdout) != n)
			err = kcore_error_create(KCORE_ERR_OS, errno,
						 "<stdout>", "write failed");
	}
	if (!err && mode == MODE_HEX && !quiet)
		printf("%016" PRIx64 "\n", addr + len);
out:
	if (!err && fflush(stdout) != 0)
		err = kcore_error_create(KCORE_ERR_OS, errno, "<stdout>",
					 "write failed");
	if (err)
		status = cli_fail(ctx, err);
	free(buf);
	kcore_source_destroy(src);
	return status;
}

const struct cli_command cli_cmd_cat = {
	.name = "cat",
	.run = cmd_cat,
	.options = cat_options,
	.args = "[SOURCE]",
	.args_complete = "@file",
	.summary =
		"print memory at a virtual or physical address of any source",
};
