/* SPDX-License-Identifier: MIT */
/*
 * The typed events of a subscription stream as the kernel side produces
 * them: what a source read (a PSI sample with its totals, memory.events
 * counters, a protection change, a kill), enriched by the registry and
 * serialized once by protocol/event.c. Plain data, no JSON: every pointer
 * borrows from the reporter and is valid for the duration of the call
 * that carries the event.
 */
#pragma once

#include <stdint.h>

#include "kernfile.h"
#include "protection.h"
#include "source-type.h"
#include "trigger.h"

typedef enum EventKind {
        EVENT_PRESSURE,             /* a PSI or vmpressure notification, or an injected one */
        EVENT_MEMORY_EVENTS,        /* memory.events changed */
        EVENT_PROTECTION,           /* a tracked cgroup's protection state changed */
        EVENT_KILLED,               /* the kernel or systemd-oomd killed in a cgroup */
        _EVENT_KIND_MAX,
} EventKind;

typedef struct PressureSample {
        SourceType source;          /* SOURCE_PSI, SOURCE_VMPRESSURE, or _SOURCE_INVALID: injected */
        Resource resource;
        const PsiStats *psi;        /* the averages and totals read with it; NULL: none */
        Level level;                /* the level the event carries, or _LEVEL_INVALID: none */
        /* with _SOURCE_INVALID (injected): "source": "inject" and "synthetic": true */
        const ProtectionNode *protection; /* the cgroup's node if it is tracked, or NULL */
} PressureSample;

typedef struct MemoryEventsSample {
        const MemoryEvents *counters;
        const MemoryEvents *delta;  /* the change since the previous sample */
} MemoryEventsSample;

typedef struct ProtectionSample {
        ProtectionState state;
        ProtectionState previous;
        const ProtectionNode *node; /* NULL: none to report */
} ProtectionSample;

typedef struct KillSample {
        const char *by;             /* "kernel" or "systemd-oomd" */
        const char *reason;         /* "oom_kill" for the kernel, systemd-oomd's word for it */
} KillSample;

typedef struct EventData {
        EventKind kind;
        const char *cgroup;
        uint64_t realtime_us;
        uint64_t monotonic_us;
        union {
                PressureSample pressure;
                MemoryEventsSample memory_events;
                ProtectionSample protection;
                KillSample killed;
        };
} EventData;
