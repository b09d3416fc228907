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

#include <stdbool.h>
#include <stdint.h>

#include "episode.h"
#include "kernfile.h"
#include "level-machine.h"
#include "protection.h"
#include "source-type.h"
#include "trigger.h"

typedef enum EventKind {
        EVENT_PRESSURE,             /* a PSI or vmpressure notification, or an injected one */
        EVENT_MEMORY_EVENTS,        /* memory.events changed */
        EVENT_PROTECTION,           /* a tracked cgroup's protection state changed */
        EVENT_KILLED,               /* the kernel or systemd-oomd killed in a cgroup */
        EVENT_CLEARED,              /* an episode ended */
        EVENT_TRIGGER_CHANGED,      /* a reload moved a "level" subscription to another registration */
        EVENT_LEVEL,                /* a level stream's level, now or changed */
        EVENT_PREKILL,              /* systemd-oomd is about to kill a cgroup (its pre-kill hook) */
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

/* What a "trigger" object describes: the kernel registration used. */
typedef struct EventTrigger {
        SourceType type;
        PsiTrigger psi;             /* SOURCE_PSI */
        Level vm_level;             /* SOURCE_VMPRESSURE */
        VmpressureMode vm_mode;
        Level level;                /* the portable level asked for, or _LEVEL_INVALID */
} EventTrigger;

typedef struct ClearedEpisode {
        SourceType source;
        Resource resource;
        const EpisodeRecord *episode;
} ClearedEpisode;

typedef struct TriggerChange {
        SourceType source;
        Resource resource;
        EventTrigger trigger;       /* the registration now used */
        const char *adjusted_reason; /* why the daemon changed the trigger, or NULL: not adjusted */
} TriggerChange;

/* A level stream's level and the cgroup's headroom then. */
typedef struct LevelChange {
        StreamLevel level;
        const uint64_t *headroom;   /* NULL: not known */
        const uint64_t *reclaim_target; /* NULL: not known */
} LevelChange;

/* A warning before systemd-oomd kills the event's cgroup (prekill-book.h). */
typedef struct PrekillSample {
        const char *by;             /* "systemd-oomd" */
        uint64_t id;                /* the warning, for AcknowledgePrekill() */
        uint64_t deadline_us;       /* CLOCK_MONOTONIC */
} PrekillSample;

/* Room for why a kill source of a kills subscription is not heard (a sentence with a path or two). */
#define KILL_REASON_MAX 512

/*
 * The current picture a "subscribed" event carries in "state": what the
 * source knows right away, and the registration's active episode.
 */
typedef struct SubscribedState {
        bool has_psi;               /* psi: the averages and totals just read */
        PsiStats psi;
        bool has_counters;          /* memory_events: the counters last read */
        MemoryEvents counters;
        const ProtectionNode *node; /* protection: the cgroup's node, valid until the next refresh */
        bool has_kills;             /* kills: which kill sources are heard, why the others are not */
        bool kernel_kills, oomd_kills;
        char kernel_reason[KILL_REASON_MAX], oomd_reason[KILL_REASON_MAX];
        const EpisodeRecord *episode; /* the active episode, or NULL */
        bool episode_psi;           /* its peak is a PSI stall ratio (else a level) */
        uint64_t now_us, realtime_us; /* CLOCK_MONOTONIC and CLOCK_REALTIME now, for the episode */
} SubscribedState;

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
                ClearedEpisode cleared;
                TriggerChange trigger_changed;
                LevelChange level_change;
                PrekillSample prekill;
        };
} EventData;
