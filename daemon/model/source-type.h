/* SPDX-License-Identifier: MIT */
/* The kinds of kernel source a registration can use; their names are the interface's. */
#pragma once

#include "vocabulary.h"

typedef enum SourceType {
        SOURCE_PSI = IDL_SOURCE_PSI,
        SOURCE_VMPRESSURE = IDL_SOURCE_VMPRESSURE,
        SOURCE_MEMORY_EVENTS = IDL_SOURCE_MEMORY_EVENTS,
        SOURCE_PROTECTION = IDL_SOURCE_PROTECTION,
        SOURCE_KILLS = IDL_SOURCE_KILLS,
        _SOURCE_MAX,
        _SOURCE_INVALID = -1,
} SourceType;

/* source_type_to_string - "psi", "vmpressure", "memory_events", "protection", "kills"; NULL if out of range. */
const char *source_type_to_string(SourceType t);
