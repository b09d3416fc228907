/* SPDX-License-Identifier: MIT */
/*
 * Registrations and subscriptions. A Registration is one kernel
 * registration (cgroup, source, trigger), made by the first subscriber
 * and closed when the last one leaves; every identical Subscription
 * shares it. An event a source publishes is serialized once and fanned
 * out to all subscribers, with per-subscriber drop accounting ("missed",
 * "seq") and coalescing (min_interval_ms).
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "episode.h"
#include "kernfile.h"
#include "list.h"
#include "outqueue.h"
#include "policy.h"
#include "source.h"
#include "subscribe.h"
#include "trigger.h"
#include "varlink-error.h"

typedef struct Manager Manager;
typedef struct Client Client;
typedef struct Subscription Subscription;
typedef struct ProxyClient ProxyClient;

/* The identity of a kernel registration. */
typedef struct RegistrationKey {
        SourceType type;
        const char *cgroup;
        PsiTrigger psi;             /* SOURCE_PSI: the trigger requested */
        Level vm_level;             /* SOURCE_VMPRESSURE */
        VmpressureMode vm_mode;
} RegistrationKey;

struct Registration {
        Manager *manager;
        SourceType type;
        const SourceOps *ops;
        char *cgroup;
        PsiTrigger requested;       /* SOURCE_PSI */
        PsiTrigger used;            /* SOURCE_PSI: what the kernel accepted */
        Level vm_level;             /* SOURCE_VMPRESSURE */
        VmpressureMode vm_mode;
        bool adjusted;              /* the kernel refused r->requested; r->used is rounded */
        bool fast_charged;          /* a fast trigger counted against fast_uid's quota (policy.h) */
        uid_t fast_uid;

        int fd;                     /* trigger fd / eventfd / inotify fd */
        int aux_fd;                 /* psi: epoll fd; memory_events: memory.events fd */
        ino_t dir_ino;              /* to tell a recreated cgroup from ours */
        struct event *ev;
        struct event *holdoff;      /* SOURCE_VMPRESSURE: re-arms ev after a pause */

        MemoryEvents last_events;   /* SOURCE_MEMORY_EVENTS */
        int last_state;             /* SOURCE_PROTECTION: ProtectionState, -1 unknown */
        bool removed;

        /* SOURCE_PSI and SOURCE_VMPRESSURE: the current episode, its timer
         * (exists only while an episode is active) and the last ones. */
        Episode episode;
        struct event *episode_timer;
        EpisodeHistory history;

        Subscription *subscriptions;
        unsigned n_subscriptions;
        ProxyClient *proxied;       /* memory-pressure proxy clients (proxy.h) */
        unsigned n_proxied;
        LIST_FIELDS(Registration, registrations);
};

struct Subscription {
        Client *client;
        Registration *reg;
        bool by_level;              /* subscribed with "level": follows [Levels] on reload */
        bool explicit_psi;          /* subscribed with "psi": may carry a fast-trigger charge */
        bool has_level;             /* its events carry "level" (level and vmpressure) */
        Level level;
        uint64_t seq;               /* events generated so far */
        uint64_t missed;            /* dropped since the last one delivered */
        uint64_t min_interval_usec;
        uint64_t last_sent_usec;
        Body *pending;              /* coalesced event waiting for the interval */
        uint64_t pending_count;
        struct event *coalesce;     /* exists only while an event is pending */
        LIST_FIELDS(Subscription, subscriptions);
};

/*
 * registration_acquire - the registration for @key: an existing one, or a
 * new one opened through its source.
 * @m: the manager whose registrations are searched and counted
 * @key: what to register
 * @ret: the registration (shared; released by the last subscription)
 * @e: filled on failure (LimitExceeded for MaxRegistrations, or the
 *     source's error)
 *
 * Returns 0 or a negative errno.
 */
int registration_acquire(Manager *m, const RegistrationKey *key, Registration **ret, VarlinkError *e);

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
 * A new fast registration within the quota is charged to @uid.
 * Returns 0 or a negative errno with @e filled as registration_acquire().
 */
int registration_acquire_for(Manager *m, RegistrationKey *key, uid_t uid, bool explicit_psi, Registration **ret,
                             bool *ret_adjusted, char reason[static POLICY_REASON_MAX], VarlinkError *e);

/* registration_fast_count - the fast registrations charged to @uid. */
unsigned registration_fast_count(Manager *m, uid_t uid);

/*
 * registration_recharge - after a subscriber of @r left: keep @r's
 * fast-trigger charge with its uid while a peer of that uid still uses @r
 * by an explicit trigger, else move it to another such non-root peer, else
 * drop it.
 */
void registration_recharge(Registration *r);

/* registration_release - close and free @r if no subscription or proxied client uses it any more. */
void registration_release(Registration *r);

/* registration_find - the live registration for @key, or NULL. */
Registration *registration_find(Manager *m, const RegistrationKey *key);

/* registration_trigger_json - the "trigger" object of @r; @s adds the subscription's level. */
json_t *registration_trigger_json(const Registration *r, const Subscription *s);

/*
 * registration_deliver - fan @body out to every varlink subscriber of @r;
 * @count notifications it stands for. The sources notify proxied clients
 * themselves, before building the event (proxy_notify()).
 */
void registration_deliver(Registration *r, Body *body, uint64_t count);

/* registration_publish - serialize @event once (stealing it) and fan it out to every subscriber of @r. */
void registration_publish(Registration *r, json_t *event, uint64_t monotonic_us, uint64_t count);

/* registration_removed - end every stream on @r with "removed"; @r is freed with the last one. */
void registration_removed(Registration *r);

/*
 * subscription_new - attach client @c's stream to @r.
 * @req: the parsed request (level, coalescing)
 * @ret: the subscription, also set as @c's active stream
 *
 * Returns 0 or -ENOMEM.
 */
int subscription_new(Client *c, Registration *r, const SubscribeRequest *req, Subscription **ret);

/* subscription_free - detach @s (releasing its registration) and free it; NULL-safe, returns NULL. */
Subscription *subscription_free(Subscription *s);

/* subscription_move - move @s to @to (a reload changed its trigger); releases the old registration. */
void subscription_move(Subscription *s, Registration *to);

/* subscription_offer - deliver @body to @s now or coalesced. Returns true if it was queued. */
bool subscription_offer(Subscription *s, Body *body, uint64_t count);

/*
 * A "cleared" event may use this much of a subscriber's queue beyond
 * [Limits] OutputBufferBytes=, so that a slow reader still learns that
 * the pressure is over; only when the reserve is used up too is it dropped
 * and counted in "missed".
 */
#define SUBSCRIPTION_CLEARED_RESERVE_BYTES 4096

/*
 * subscription_offer_cleared - deliver the "cleared" @body to @s: first a
 * coalesced pressure event still waiting, then @body at once, with the
 * reserve above. Returns true if it was queued.
 */
bool subscription_offer_cleared(Subscription *s, Body *body);
