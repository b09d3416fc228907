/* SPDX-License-Identifier: MIT */
/* Source names and the table of source operations. */
#include "source.h"
#include "util.h"

static const char *const source_names[_SOURCE_MAX] = {
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

const char *source_type_to_string(SourceType t) {
        return t >= 0 && t < _SOURCE_MAX ? source_names[t] : NULL;
}

const SourceOps *source_ops_get(SourceType t) {
        return t >= 0 && t < _SOURCE_MAX ? source_ops[t] : NULL;
}
