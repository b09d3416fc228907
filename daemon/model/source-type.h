/* SPDX-License-Identifier: MIT */
/* The kinds of kernel source a registration can use, and their names on the wire. */
#pragma once

typedef enum SourceType {
        SOURCE_PSI,
        SOURCE_VMPRESSURE,
        SOURCE_MEMORY_EVENTS,
        SOURCE_PROTECTION,
        SOURCE_KILLS,
        _SOURCE_MAX,
        _SOURCE_INVALID = -1,
} SourceType;

/* source_type_to_string - "psi", "vmpressure", "memory_events", "protection", "kills"; NULL if out of range. */
const char *source_type_to_string(SourceType t);
