/* SPDX-License-Identifier: MIT */
/* Source names: those of the interface (vocabulary-idl.h). */
#include "source-type.h"
#include "util.h"

/* source_type_to_string - "psi", "vmpressure", "memory_events", "protection", "kills", or NULL. */
const char *source_type_to_string(SourceType t) {
        return t >= 0 && t < _SOURCE_MAX ? idl_source_to_string((IdlSource) t) : NULL;
}
