/* SPDX-License-Identifier: MIT */
/*
 * The registry layer. A Registration is one kernel registration (a
 * Source: cgroup, source, trigger), made by the first listener and closed
 * when the last one leaves; every identical Listener shares it. The typed
 * event a source reports (enriched with the cgroup's protection node) is
 * serialized once, by the EventSerializeFn the owner handed down from
 * protocol/, and the Body fanned out to every listener
 * through its ListenerOps: a varlink subscription queues it (with its own
 * drop accounting and coalescing), a memory-pressure proxy client writes
 * one byte. The registry never touches a socket: listeners do.
 *
 *   registration.c          the registry, sharing, the fast-trigger charge,
 *                           fan-out to listeners, reload of [Levels]
 *   registration-episode.c  the pressure episodes of a registration, their
 *                           timer and history, and "cleared"
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "counters.h"
#include "episode.h"
#include "list.h"
#include "body.h"
#include "event-data.h"
#include "policy.h"
#include "source.h"
#include "trigger.h"
#include "source-failure.h"

typedef struct Registry Registry;
typedef struct Registration Registration;
typedef struct Listener Listener;

/* The identity of a kernel registration. */
typedef SourceParams RegistrationKey;

/* What a listener does with what its registration reports. */
typedef struct ListenerOps {
        /*
         * An event standing for @count notifications. A listener with
         * `kick` set takes the bare kernel notification before any event
         * is built (@body NULL), and an injected event with its @body.
         * Returns true if it was delivered.
         */
        bool (*deliver)(Listener *l, Body *body, uint64_t count);
        /* The "cleared" event that ends an episode; optional. Returns true if delivered. */
        bool (*cleared)(Listener *l, Body *body);
        /*
         * The "trigger_changed" event of a listener a reload moved to @l->reg
         * (by_level listeners only); optional. Returns true if delivered.
         */
        bool (*trigger_changed)(Listener *l, Body *body);
        /*
         * The cgroup of @r is gone: @l was detached from @r (l->reg is NULL)
         * and may free itself; @r lives until every listener was told.
         */
        void (*removed)(Listener *l, Registration *r);
} ListenerOps;

struct Listener {
        const ListenerOps *ops;
        Registration *reg;          /* NULL while detached */
        uid_t uid;                  /* the peer, for the fast-trigger charge */
        bool explicit_psi;          /* named its PSI trigger: may carry a fast-trigger charge */
        bool kick;                  /* takes the bare notification, no event */
        bool by_level;              /* subscribed with "level": follows [Levels] on reload */
        Level level;                /* the level its events carry, or _LEVEL_INVALID */
        LIST_FIELDS(Listener, listeners);
};

struct Registration {
        Registry *registry;
        uint64_t id;                /* > 0, never reused; names its fd in the fd store */
        Source src;
        bool removed;
        bool fast_charged;          /* a fast trigger counted against fast_uid's quota (policy.h) */
        uid_t fast_uid;

        /* SOURCE_PSI and SOURCE_VMPRESSURE: the current episode, its timer
         * (exists only while an episode is active) and the last ones. */
        Episode episode;
        struct event *episode_timer;
        EpisodeHistory history;

        Listener *listeners;
        unsigned n_subscribers;     /* listeners that take events */
        unsigned n_kicked;          /* listeners that take the bare notification */
        LIST_FIELDS(Registration, registrations);
};

/* Who is told as registrations come and go (the takeover bookkeeping); every callback is optional. */
typedef struct RegistryHooks {
        void (*added)(Registration *r, void *userdata);    /* a new kernel registration */
        void (*removed)(Registration *r, void *userdata);  /* closed */
        void (*changed)(void *userdata);                   /* an episode began or ended */
} RegistryHooks;

/*
 * Serializes the typed event @e once into the Body every listener shares;
 * @read_us as Body.monotonic_us. NULL when out of memory.
 */
typedef Body *(*EventSerializeFn)(const EventData *e, uint64_t read_us);

struct Registry {
        SourceEnv *env;
        EventSerializeFn serialize;
        const Config *config;
        Counters *counters;
        Registration *registrations;
        unsigned n_registrations;
        uint64_t next_id;
        const RegistryHooks *hooks;
        void *hooks_userdata;
        bool handed_over;           /* the next process has every registration: closing one removes nothing */
};

/*
 * registry_init - an empty registry over @env, under @config, counting in
 * @counters, serializing its events with @serialize (the protocol's
 * event_data_body(), handed down by the owner).
 */
void registry_init(Registry *reg, SourceEnv *env, const Config *config, Counters *counters,
                   EventSerializeFn serialize);

/* registry_done - every registration must be gone already (listeners release them); checks nothing. */
void registry_done(Registry *reg);

/*
 * registry_reconfigure - apply @config, which replaces @old: listeners that
 * follow [Levels] move to the new triggers, episodes take the new
 * parameters. @old stays valid for the call.
 */
void registry_reconfigure(Registry *reg, const Config *old, const Config *config);

/*
 * registry_inject_split - a synthetic @level event for @resource on a
 * cgroup, which may have a different path in each hierarchy (a peer in a
 * cgroup namespace): PSI registrations of that resource on @psi_cgroup
 * (cgroup2) get @psi_body, and for memory vmpressure ones on @vm_cgroup (v1
 * memory) @vm_body. Each goes to the listeners that a kernel event of
 * @level would reach: those with a level ("level" and vmpressure
 * subscriptions) of @level and below, and every listener without one (an
 * explicit PSI trigger, a proxied client). A registration with such a
 * listener counts the event in its episode. Returns how many listeners got it.
 */
uint64_t registry_inject_split(Registry *reg, const char *psi_cgroup, Body *psi_body, const char *vm_cgroup,
                               Body *vm_body, Resource resource, Level level, uint64_t monotonic_us);

/* registry_fast_count - the fast registrations charged to @uid. */
unsigned registry_fast_count(const Registry *reg, uid_t uid);

/*
 * registration_acquire - the registration for @key: an existing one, or a
 * new one opened through its source; one walk over the registrations.
 * @dirfd: the directory of @key's cgroup as the caller checked it, or -1.
 *         A new registration is opened in it (source_open()), and an
 *         existing one is shared only if it registers that same directory,
 *         so a cgroup renamed and replaced after the check is never what
 *         the caller gets. Not taken.
 * @ret: the registration (shared; released with its last listener)
 * @e: the cause on failure: the limit MaxRegistrations (-EUSERS) or the
 *     source's failure; the caller names it for the wire with the cgroup
 *     of @key
 *
 * Returns 0 or a negative errno.
 */
int registration_acquire(Registry *reg, const RegistrationKey *key, int dirfd, Registration **ret,
                         SourceFailure *e);

/*
 * registration_acquire_for - registration_acquire() for a peer of @uid,
 * under the rules for PSI triggers: rounded to what the kernel accepts
 * when the daemon lacks CAP_SYS_RESOURCE, and under the fast-trigger
 * policy (policy.h) otherwise.
 * @key: what the peer asked for; its trigger may be replaced
 * @explicit_psi: the peer named the PSI trigger (not a [Levels] one)
 * @ret_adjusted: true if the registration's trigger is not the one asked for
 * @reason: receives the reason of an adjustment (POLICY_REASON_MAX bytes)
 *
 * The registration as asked and the rounded one are looked for in the
 * same walk. A new fast registration within the quota is charged to @uid.
 * @dirfd as for registration_acquire().
 * Returns 0 or a negative errno with @e filled as registration_acquire().
 */
int registration_acquire_for(Registry *reg, RegistrationKey *key, int dirfd, uid_t uid, bool explicit_psi,
                             Registration **ret, bool *ret_adjusted, char reason[static POLICY_REASON_MAX],
                             SourceFailure *e);

/*
 * registration_adopt - the registration a previous process described in
 * @saved, taking over its kernel registration @fd (-1: opened anew).
 * Unlike a new one, it is not yet told to the hooks (it is in the fd store
 * already), nor released while nobody listens: registration_release() it
 * once its listeners are back. Returns 0 or a negative errno with @e filled.
 */
int registration_adopt(Registry *reg, const SnapshotRegistration *saved, int fd, Registration **ret,
                       SourceFailure *e);

/* registration_adopted - @r's listeners are back: report what happened while nobody watched. */
void registration_adopted(Registration *r, const SnapshotRegistration *saved);

/* registration_export - @r as a snapshot. Returns 0 or -ENOMEM. */
int registration_export(const Registration *r, SnapshotRegistration *ret);

/* registration_release - close and free @r if no listener uses it any more. */
void registration_release(Registration *r);

/* registration_trigger - the trigger of @r; @l adds the listener's level. */
EventTrigger registration_trigger(const Registration *r, const Listener *l);

/*
 * registration_state - the current picture for "subscribed": the source's
 * and the active episode, in @ret (valid until @r changes). Returns 0 or
 * -ENOMEM.
 */
int registration_state(Registration *r, SubscribedState *ret);

/*
 * listener_attach - add @l to @r's listeners (@r was acquired for it).
 * A detached listener is released with listener_detach().
 */
void listener_attach(Listener *l, Registration *r);

/* listener_detach - take @l off its registration, which is released if unused; idempotent. */
void listener_detach(Listener *l);

/* listener_move - move @l to @to (a reload changed its trigger); releases the old registration. */
void listener_move(Listener *l, Registration *to);
