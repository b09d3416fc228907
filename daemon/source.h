/* SPDX-License-Identifier: MIT */
/*
 * What a kernel source is: the kinds of source, and the operations each
 * one implements for a Registration (source-psi.c, source-vmpressure.c,
 * source-memory-events.c, source-protection.c). A source makes and drops
 * the kernel registration, describes its current state for "subscribed",
 * and publishes events through registration_publish().
 */
#pragma once

#include <jansson.h>

#include "varlink-error.h"

typedef struct Registration Registration;

typedef enum SourceType {
        SOURCE_PSI,
        SOURCE_VMPRESSURE,
        SOURCE_MEMORY_EVENTS,
        SOURCE_PROTECTION,
        _SOURCE_MAX,
        _SOURCE_INVALID = -1,
} SourceType;

/* source_type_to_string - "psi", "vmpressure", "memory_events", "protection"; NULL if out of range. */
const char *source_type_to_string(SourceType t);

typedef struct SourceOps {
        /* Make the kernel registration; fill @e on failure. */
        int (*open)(Registration *r, VarlinkError *e);
        /* Release what open() made beyond fd, aux_fd and ev (which the
         * registration closes itself); optional. */
        void (*close)(Registration *r);
        /* The current picture for the "subscribed" reply, or NULL; optional. */
        json_t *(*state)(Registration *r);
} SourceOps;

extern const SourceOps source_psi_ops;
extern const SourceOps source_vmpressure_ops;
extern const SourceOps source_memory_events_ops;
extern const SourceOps source_protection_ops;

/* source_ops_get - the operations implementing @t, or NULL if out of range. */
const SourceOps *source_ops_get(SourceType t);
