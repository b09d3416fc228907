/* SPDX-License-Identifier: MIT */
/* Source names and the table of source operations. */
#include "source.h"
#include "util.h"

static const char *const source_type_table[_SOURCE_MAX] = {
        [SOURCE_PSI] = "psi",
        [SOURCE_VMPRESSURE] = "vmpressure",
        [SOURCE_MEMORY_EVENTS] = "memory_events",
        [SOURCE_PROTECTION] = "protection",
};

static const SourceOps *const source_ops[_SOURCE_MAX] = {
        [SOURCE_PSI] = &source_psi_ops,
        [SOURCE_VMPRESSURE] = &source_vmpressure_ops,
        [SOURCE_MEMORY_EVENTS] = &source_memory_events_ops,
        [SOURCE_PROTECTION] = &source_protection_ops,
};

/* source_type_to_string - "psi", "vmpressure", "memory_events", "protection", or NULL. */
DEFINE_STRING_TABLE_TO_STRING(source_type, SourceType)

const SourceOps *source_ops_get(SourceType t) {
        return t >= 0 && t < _SOURCE_MAX ? source_ops[t] : NULL;
}
