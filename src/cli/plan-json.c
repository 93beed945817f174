// SPDX-License-Identifier: MIT
/*
 * The segments of a dump plan as JSON, shared by dump --json (cmd-dump.c)
 * and the acquisition record (record.c), so that neither depends on the
 * other.
 */
#include <inttypes.h>
#include "cli.h"
#include "kcoredump/json.h"
#include "kcoredump/dump.h"

/* The plan's segments; with done, also what the dump found. */
void cli_dump_segments_json(struct kcore_json *j, const struct kcore_plan *plan,
			    bool done, bool hashed)
{
	char hex[2 * KCORE_DIGEST_LEN + 1];

	kcore_json_array_begin(j, "segments");
	for (size_t i = 0; i < plan->nsegs; i++) {
		const struct kcore_plan_segment *p = &plan->segs[i];

		kcore_json_object_begin(j, NULL);
		kcore_json_string(j, "class", kcore_segment_class_name(p->cls));
		kcore_json_string(j, "label", p->label);
		kcore_json_hex(j, "vaddr", p->vaddr);
		if (p->has_paddr)
			kcore_json_hex(j, "paddr", p->paddr);
		else
			kcore_json_null(j, "paddr");
		kcore_json_u64(j, "size", p->size);
		if (done) {
			kcore_json_u64(j, "data_bytes", p->data_bytes);
			kcore_json_hex(j, "offset", p->out_offset);
			if (hashed) {
				kcore_hex(p->digest, KCORE_DIGEST_LEN, hex);
				kcore_json_string(j, "sha256", hex);
			} else {
				kcore_json_null(j, "sha256");
			}
		}
		kcore_json_object_end(j);
	}
	kcore_json_array_end(j);
}
