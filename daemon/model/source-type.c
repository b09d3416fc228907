/* SPDX-License-Identifier: MIT */
/* Source names. */
#include "source-type.h"
#include "util.h"

static const char *const source_type_table[_SOURCE_MAX] = {
        [SOURCE_PSI] = "psi",
        [SOURCE_VMPRESSURE] = "vmpressure",
        [SOURCE_MEMORY_EVENTS] = "memory_events",
        [SOURCE_PROTECTION] = "protection",
        [SOURCE_KILLS] = "kills",
};

/* source_type_to_string - "psi", "vmpressure", "memory_events", "protection", "kills", or NULL. */
DEFINE_STRING_TABLE_TO_STRING(source_type, SourceType)
