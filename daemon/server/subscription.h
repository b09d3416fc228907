/* SPDX-License-Identifier: MIT */
/*
 * A varlink subscription: the Listener through which a client's Subscribe
 * stream hears its registration. It formats each event's envelope (seq,
 * missed, count, level) in front of the shared body, drops what a slow
 * reader cannot take and counts it ("missed"), coalesces events inside
 * the subscriber's min_interval_ms, and ends the stream with "removed"
 * when the cgroup goes away.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "counters.h"
#include "event.h"
#include "list.h"
#include "registration.h"
#include "subscribe.h"

typedef struct Subscription Subscription;

struct Subscription {
        Listener listener;          /* first: the registration's view of it */
        Client *client;
        Counters *counters;
        uint64_t seq;               /* events generated so far */
        uint64_t missed;            /* dropped since the last one delivered */
        uint64_t min_interval_usec;
        uint64_t last_sent_usec;
        Body *pending;              /* coalesced event waiting for the interval */
        uint64_t pending_count;
        struct event *coalesce;     /* exists only while an event is pending */
        EventView view;             /* the peer's namespace root in the registration's hierarchy */
        /* Its "subscribed" is not sent yet (subscription_wait()): events
         * are held in pending, and start() sends "subscribed" when called. */
        bool waiting;
        void (*start)(Subscription *s, Registration *r);
        Subscription **waiting_list; /* the list it waits in */
        LIST_FIELDS(Subscription, waiting);
};

/*
 * A "cleared" event may use this much of a subscriber's queue beyond
 * [Limits] OutputBufferBytes=, so that a slow reader still learns that
 * the pressure is over; only when the reserve is used up too is it dropped
 * and counted in "missed".
 */
#define SUBSCRIPTION_CLEARED_RESERVE_BYTES 4096  /* and for a "prekill" warning */

/*
 * subscription_new - a subscription of client @c to @r for @req, attached
 * to @r but not yet @c's stream (subscription_start()).
 * Returns 0 or -ENOMEM.
 */
int subscription_new(Client *c, Counters *counters, Registration *r, const SubscribeRequest *req,
                     Subscription **ret);

/* subscription_start - make @s its client's active stream, after the "subscribed" reply was queued. */
void subscription_start(Subscription *s);

/*
 * subscription_wait - @s, already its client's stream, holds its events
 * (merged into one, counted) until its "subscribed" reply is sent, and is
 * in the list @list until then (or until it is freed). Whoever sends
 * "subscribed" calls subscription_started() afterwards; if the cgroup
 * goes first, @start(@s, its registration) is called before "removed" is
 * sent, and must do both. Used by a kills subscription while systemd-oomd's picture is on
 * its way.
 */
void subscription_wait(Subscription *s, Subscription **list, void (*start)(Subscription *s, Registration *r));

/* subscription_started - the "subscribed" reply of a waiting @s was queued: leave the list, send what it held. */
void subscription_started(Subscription *s);

/*
 * subscription_export - @s as a snapshot, the held event included.
 * Returns 0 or -ENOMEM.
 */
int subscription_export(const Subscription *s, SnapshotSubscription *ret);

/*
 * subscription_adopt - the stream a previous process described in @snap,
 * of client @c on @r: attached, numbered on from where it was, holding
 * what it held, and @c's active stream. A waiting one (@snap->waiting) is
 * left for its owner to start (subscription_wait()). Returns 0 or -ENOMEM.
 */
int subscription_adopt(Client *c, Counters *counters, Registration *r, const SnapshotSubscription *snap,
                       Subscription **ret);

/*
 * subscription_warn - send @s the warning @body (a "prekill" event, naming
 * cgroups as @s's peer does) now: after its "subscribed" if that still
 * waits and after an event held for its interval, with the reserve of
 * "cleared" beyond OutputBufferBytes=. Returns true if it was queued.
 */
bool subscription_warn(Subscription *s, Body *body);

/* subscription_of_listener - the subscription behind @l, or NULL if @l is another kind of listener. */
Subscription *subscription_of_listener(Listener *l);

/* subscription_of_client - @c's active stream if it is a subscription, else NULL. */
Subscription *subscription_of_client(const Client *c);

/* subscription_free - detach @s (releasing its registration) and free it; NULL-safe, returns NULL. */
Subscription *subscription_free(Subscription *s);
