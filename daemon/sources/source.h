/* SPDX-License-Identifier: MIT */
/*
 * The sources layer: one kernel registration per Source (a PSI trigger,
 * a vmpressure eventfd, a memory.events watch, a cgroup tracked by the
 * protection source, or the kills of a cgroup's subtree), made by open() and dropped by source_close(). A
 * source knows nothing of who listens: it reports what the kernel said
 * through the callbacks its owner installed (the registry, above it).
 *
 *   source.c                the table of operations, opening and closing
 *   source-common.c         cgroup directory and files of a registration
 *   source-psi.c            PSI triggers (memory.pressure, /proc/pressure/memory,
 *                           and the same for cpu and io)
 *   source-vmpressure.c     cgroup v1 vmpressure through cgroup.event_control
 *   source-memory-events.c  memory.events through inotify
 *   source-protection.c     the protection source: the one reader of the
 *                           protection tree and its refresh timer
 *   source-kills.c          kills: the oom_kill counter of memory.events (of
 *                           the cgroup, or of every top-level cgroup for "/")
 *                           and systemd-oomd's Killed signal (oomd-watch.c)
 *   source-kills-v1.c       the kills of a cgroup in the cgroup v1 memory
 *                           hierarchy (memory.oom_control)
 *   oomd-watch.c            the one match on systemd-oomd's Killed signal,
 *                           shared by every kills source (a system-bus.h user)
 *   source-choice.c         which source serves a Subscribe request (pure)
 *   system-bus.c            the one system bus connection (sd-bus), for its users
 *   event-util.h            libevent helpers for every layer on the loop
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "counters.h"
#include "event-data.h"
#include "kernfile.h"
#include "list.h"
#include "snapshot.h"
#include "source-type.h"
#include "system-bus.h"
#include "trigger.h"
#include "source-failure.h"

typedef struct Source Source;
typedef struct ProtectionSource ProtectionSource;
typedef struct OomdWatch OomdWatch;
typedef struct KillsRoot KillsRoot;
typedef struct KillsV1 KillsV1;

/* What every source shares; owned by the manager. */
typedef struct SourceEnv {
        struct event_base *base;
        const Hierarchy *v2;
        const Hierarchy *v1;
        Counters *counters;
        ProtectionSource *protection; /* NULL without a cgroup2 hierarchy */
        OomdWatch *oomd;              /* systemd-oomd's kills; NULL: none are heard */
        bool psi_unprivileged;        /* learned: the kernel wants 2 s windows from us */
        SystemBus *bus;               /* the system bus, connected only while used */
} SourceEnv;

/* How a source reports to its owner; every callback but kick may free the source. */
typedef struct SourceCallbacks {
        /* A kernel notification arrived; called first, before anything is read. The only
         * callback that must not free the source. */
        void (*kick)(Source *s);
        /* A pressure notification: @psi the averages and stall totals read with it, NULL if
         * the source has none (vmpressure) or they could not be read; valid during the call. */
        void (*pressure)(Source *s, const PsiStats *psi, uint64_t realtime_us, uint64_t monotonic_us,
                         uint64_t count);
        /* Any other event, typed (valid during the call), standing for @count
         * occurrences (kills; 1 for the others). */
        void (*event)(Source *s, const EventData *event, uint64_t count);
        /* The cgroup is gone. */
        void (*removed)(Source *s);
} SourceCallbacks;

/* What to register. */
typedef struct SourceParams {
        SourceType type;
        const char *cgroup;
        Resource resource;          /* SOURCE_PSI: the pressure file; RESOURCE_MEMORY for the others */
        PsiTrigger psi;             /* SOURCE_PSI: the trigger requested */
        Level vm_level;             /* SOURCE_VMPRESSURE */
        VmpressureMode vm_mode;
} SourceParams;

typedef struct SourceOps SourceOps;

struct Source {
        SourceEnv *env;
        const SourceCallbacks *cb;
        const SourceOps *ops;
        SourceType type;
        char *cgroup;
        Resource resource;          /* SOURCE_PSI: cpu, io or memory; RESOURCE_MEMORY for the others */
        PsiTrigger requested;       /* SOURCE_PSI */
        PsiTrigger used;            /* SOURCE_PSI: what the kernel accepted */
        Level vm_level;             /* SOURCE_VMPRESSURE */
        VmpressureMode vm_mode;
        bool adjusted;              /* the kernel refused requested; used is rounded */

        int fd;                     /* trigger fd / eventfd / inotify fd */
        int aux_fd;                 /* psi: epoll fd; memory_events: memory.events fd */
        ino_t dir_ino;              /* to tell a recreated cgroup from ours */
        const char *ended_why;      /* before removed(): why the streams end though the cgroup stays
                                     * (static); NULL: the cgroup is gone */
        struct event *ev;
        struct event *holdoff;      /* SOURCE_VMPRESSURE: re-arms ev after a pause; SOURCE_PSI: looks
                                     * at the cgroup again after its trigger failed */
        unsigned settle_tries;      /* SOURCE_PSI: how often it looked */
        struct event *report;       /* reports the notifications in woke (source_notify()) */
        uint64_t woke;              /* notifications kicked and not yet reported */
        uint64_t woke_realtime_us, woke_monotonic_us; /* the first of them */

        MemoryEvents last_events;   /* SOURCE_MEMORY_EVENTS; SOURCE_KILLS: its oom_kill */
        int last_state;             /* SOURCE_PROTECTION: ProtectionState, -1 unknown */
        bool kernel_kills;          /* SOURCE_KILLS on a cgroup: its memory.events is watched */
        KillsRoot *kills_root;      /* SOURCE_KILLS on "/": the top-level cgroups watched */
        KillsV1 *kills_v1;          /* SOURCE_KILLS on a cgroup: its memory.oom_control in v1 */
        /* SOURCE_PROTECTION: in the protection source's list; SOURCE_KILLS: in the oomd watch's */
        LIST_FIELDS(Source, tracked);
};

typedef struct SourceOps {
        /* Make the kernel registration, in the cgroup directory @dirfd
         * if it is not -1 (not taken). On failure return a negative errno
         * and say why in @e (which file failed to open, why the source is
         * unavailable); a bare errno (out of memory) may leave it as it is. */
        int (*open)(Source *s, int dirfd, SourceFailure *e);
        /* Release what open() made beyond fd, aux_fd and ev (which the
         * registration closes itself); optional. */
        void (*close)(Source *s);
        /* The current picture for the "subscribed" reply, filled into @ret
         * (zeroed by the caller); optional. Returns 0 or -ENOMEM. */
        int (*state)(Source *s, SubscribedState *ret);
        /* Take over the kernel registration @fd a previous process made
         * (its trigger written, its eventfd registered); optional: without
         * it, or without an fd, the registration is opened anew. */
        int (*adopt)(Source *s, int fd, SourceFailure *e);
        /* After a fresh open for a successor: what changed while no
         * process watched (counters, state) is reported; optional. */
        void (*restore)(Source *s, const SnapshotRegistration *saved);
        /* What restore() needs beyond the key; optional. Returns 0 or -ENOMEM. */
        int (*export)(const Source *s, SnapshotRegistration *ret);
} SourceOps;

extern const SourceOps source_psi_ops;
extern const SourceOps source_vmpressure_ops;
extern const SourceOps source_memory_events_ops;
extern const SourceOps source_protection_ops;
extern const SourceOps source_kills_ops;

/* source_ops_get - the operations implementing @t, or NULL if out of range. */
const SourceOps *source_ops_get(SourceType t);

/*
 * source_open - make the kernel registration @p in @s (zeroed by the
 * caller), reporting to @cb.
 * @dirfd: the directory of @p's cgroup in the source's hierarchy (cgroup
 *         v1 memory for SOURCE_VMPRESSURE, cgroup2 for the others) as the
 *         caller checked it, or -1 to open it by @p's path. Not taken. The
 *         source opens its files relative to it, so a directory renamed
 *         and replaced after the check does not change what is registered.
 *         The system-wide PSI file and the protection source, which reads
 *         the protection tree by path, do not use it.
 * @e: the cause on failure, named for the wire only by the server
 *
 * Returns 0, or a negative errno with nothing left open.
 */
int source_open(Source *s, SourceEnv *env, const SourceCallbacks *cb, const SourceParams *p, int dirfd,
                SourceFailure *e);

/*
 * source_adopt - take over, in @s (zeroed by the caller), the registration
 * @p that a previous process described in @saved: with the kernel's own
 * registration @fd (taken over) where the source has one, else opened
 * anew, reporting to @cb what happened while nobody watched (a PSI
 * trigger that fired, a vmpressure count, changed counters). Returns 0,
 * or a negative errno with @e filled and nothing left open.
 */
int source_adopt(Source *s, SourceEnv *env, const SourceCallbacks *cb, const SourceParams *p,
                 const SnapshotRegistration *saved, int fd, SourceFailure *e);

/*
 * source_restore - for a source source_adopt() opened anew: report what
 * changed since @saved while no process watched. Called once its
 * listeners are attached.
 */
void source_restore(Source *s, const SnapshotRegistration *saved);

/* source_export - the source's part of a registration's snapshot. Returns 0 or -ENOMEM. */
int source_export(const Source *s, SnapshotRegistration *ret);

/* source_store_fd - the fd a successor takes over (a PSI trigger, a vmpressure eventfd), or -1. */
int source_store_fd(const Source *s);

/* source_close - drop the kernel registration of @s; idempotent. */
void source_close(Source *s);

/* source_state - the current picture for the "subscribed" reply in @ret (zeroed first); 0 or -ENOMEM. */
int source_state(Source *s, SubscribedState *ret);

/* source_read_psi - the PSI averages and totals of a PSI source's pressure file. */
int source_read_psi(const Source *s, PsiStats *ret);

/*
 * source_describe - the registration in words for the log: 'the PSI trigger
 * "some 150ms 2s"', 'the cpu PSI trigger "some 1s 2s"', 'the vmpressure
 * registration "medium,default"', "the memory.events watch", "the kills watch".
 */
char *source_describe(const Source *s, char *buf, size_t size);
