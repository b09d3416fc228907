/* SPDX-License-Identifier: MIT */
/* Varlink subscriptions: one registration listener per Subscribe stream. */
#include "event-util.h"
#include "event.h"
#include "log.h"
#include "subscription.h"

static Subscription *subscription_of(Listener *l) {
        return (Subscription *) l;
}

/* What the live page says of @s: events generated, and whether one is held back. */
static void subscription_live(Subscription *s) {
        LiveSlot *l = client_live(s->client);

        if (!l)
                return;
        l->seq = s->seq;
        if (s->pending)
                l->flags |= LIVE_SLOT_HELD;
        else
                l->flags &= ~LIVE_SLOT_HELD;
}

/*
 * Queue one event for the subscriber now; false if it had to be dropped.
 * @viewed: @body names cgroups as the peer does already (else a peer in a
 * cgroup namespace gets its own copy).
 */
static bool subscription_send_as(Subscription *s, Body *body, uint64_t count, size_t limit, bool viewed) {
        Client *c = s->client;
        const uint64_t read_usec = body->monotonic_us;
        char prefix[OUT_PREFIX_MAX];
        Body *own = NULL;
        size_t n;
        int k;

        s->seq++;
        subscription_live(s);
        n = event_prefix(prefix, body, s->seq, s->missed, count, s->listener.level);
        if (s->view.root && !viewed) {
                /* Only a peer in a cgroup namespace pays for its own copy of the event. */
                own = event_body_view(body, &s->view);
                if (!own) {
                        s->missed++;
                        counter_inc(s->counters, COUNTER_EVENTS_DROPPED);
                        log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                        "Failed to copy an event for client %" PRIu64 ", dropping it: %m", c->id);
                        return false;
                }
                body = own;
        }
        k = client_send_event(c, prefix, n, body, s->seq, limit);
        body_unref(own);
        if (k == -ENOBUFS) {
                s->missed++;
                counter_inc(s->counters, COUNTER_EVENTS_DROPPED);
                log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                "Client %" PRIu64 " (uid %u) is not reading, dropping events.",
                                c->id, (unsigned) c->uid);
                return false;
        }
        if (k < 0)
                return false;
        s->missed = 0;
        s->last_sent_usec = now_usec(CLOCK_MONOTONIC);
        counter_inc(s->counters, COUNTER_EVENTS_DELIVERED);
        if (read_usec)
                metrics_histogram_observe(&s->counters->latency, s->last_sent_usec - read_usec);
        return true;
}

static bool subscription_send(Subscription *s, Body *body, uint64_t count, size_t limit) {
        return subscription_send_as(s, body, count, limit, false);
}

static void on_coalesce_timer(evutil_socket_t fd, short what, void *userdata) {
        Subscription *s = userdata;
        Body *b = TAKE_PTR(s->pending);
        uint64_t count = s->pending_count;

        s->pending_count = 0;
        event_free_and_null(&s->coalesce);
        subscription_live(s);
        if (b) {
                subscription_send(s, b, count, s->client->server->config->output_buffer_bytes);
                body_unref(b);
        }
}

/* Keep the newest event inside the interval and count what it merges; false if it cannot be kept. */
static bool subscription_hold(Subscription *s, Body *body, uint64_t count, uint64_t now) {
        uint64_t due = s->last_sent_usec + s->min_interval_usec;
        struct timeval tv = usec_to_timeval(due > now ? due - now : 0);

        if (!s->coalesce)
                s->coalesce = evtimer_new(s->client->server->base, on_coalesce_timer, s);
        if (!s->coalesce || (!s->pending && evtimer_add(s->coalesce, &tv) < 0)) {
                s->missed += count;
                counter_inc(s->counters, COUNTER_EVENTS_DROPPED);
                return false;
        }
        body_unref(s->pending);
        s->pending = body_ref(body);
        s->pending_count += count;
        subscription_live(s);
        return true;
}

static bool subscription_deliver(Listener *l, Body *body, uint64_t count) {
        Subscription *s = subscription_of(l);
        const size_t limit = s->client->server->config->output_buffer_bytes;
        uint64_t now;

        if (s->client->dead)
                return false;
        if (s->waiting) {
                /* Nothing may go before "subscribed": keep the newest, count them all. */
                body_unref(s->pending);
                s->pending = body_ref(body);
                s->pending_count += count;
                return true;
        }
        if (s->min_interval_usec == 0)
                return subscription_send(s, body, count, limit);

        now = now_usec(CLOCK_MONOTONIC);
        if (!s->pending && (s->last_sent_usec == 0 || now - s->last_sent_usec >= s->min_interval_usec))
                return subscription_send(s, body, count, limit);
        return subscription_hold(s, body, count, now);
}

static bool subscription_cleared(Listener *l, Body *body) {
        Subscription *s = subscription_of(l);
        const size_t limit = s->client->server->config->output_buffer_bytes;

        if (s->client->dead)
                return false;
        /* The last pressure event of the episode goes first, whatever its interval. */
        if (s->pending)
                on_coalesce_timer(-1, 0, s);
        if (s->client->dead)
                return false;
        return subscription_send(s, body, 1, limit + SUBSCRIPTION_CLEARED_RESERVE_BYTES);
}

bool subscription_warn(Subscription *s, Body *body) {
        const size_t limit = s->client->server->config->output_buffer_bytes;

        if (s->client->dead)
                return false;
        /* It goes now: "subscribed" first if it waits, and the event held for its interval. */
        if (s->waiting)
                s->start(s, s->listener.reg);
        if (s->pending)
                on_coalesce_timer(-1, 0, s);
        if (s->client->dead)
                return false;
        return subscription_send_as(s, body, 1, limit + SUBSCRIPTION_CLEARED_RESERVE_BYTES, true);
}

static void subscription_removed(Listener *l, Registration *r) {
        Subscription *s = subscription_of(l);
        Client *c = s->client;
        size_t size;
        char *msg;

        /* A stream still waiting for its "subscribed" gets it first. */
        if (s->waiting)
                s->start(s, r);
        msg = event_removed_message(cgroup_view_from_real(s->view.root, r->src.cgroup) ?: r->src.cgroup,
                                          s->seq + 1, &size);

        subscription_free(s);
        client_stream_end(c, msg, size);
}

static void subscription_stream_free(void *stream) {
        subscription_free(stream);
}

static const ListenerOps subscription_listener_ops = {
        .deliver = subscription_deliver,
        .cleared = subscription_cleared,
        /* Like "cleared": at once, after a pending event, with the reserve. */
        .trigger_changed = subscription_cleared,
        .removed = subscription_removed,
};

/* A subscription of @c with @listener's fields, attached to @r. */
static Subscription *subscription_alloc(Client *c, Counters *counters, Registration *r, const Listener *listener) {
        Subscription *s = calloc(1, sizeof(*s));

        if (!s || event_view_init(&s->view, cgroup_view_root(&c->view, r->src.type == SOURCE_VMPRESSURE)) < 0) {
                free(s);
                return NULL;
        }
        s->listener = *listener;
        s->listener.ops = &subscription_listener_ops;
        s->listener.uid = c->uid;
        s->client = c;
        s->counters = counters;
        listener_attach(&s->listener, r);
        return s;
}

int subscription_new(Client *c, Counters *counters, Registration *r, const SubscribeRequest *req,
                     Subscription **ret) {
        Subscription *s = subscription_alloc(c, counters, r, &(const Listener) {
                .explicit_psi = req->selector == SELECTOR_PSI,
                .by_level = req->selector == SELECTOR_LEVEL,
                .level = req->selector == SELECTOR_LEVEL ? req->level :
                         req->selector == SELECTOR_VMPRESSURE ? req->vm_level : _LEVEL_INVALID,
        });

        if (!s)
                return -ENOMEM;
        s->min_interval_usec = req->min_interval_usec;
        *ret = s;
        return 0;
}

void subscription_wait(Subscription *s, Subscription **list, void (*start)(Subscription *s, Registration *r)) {
        s->waiting = true;
        s->start = start;
        s->waiting_list = list;
        LIST_PREPEND(waiting, *list, s);
}

static void subscription_unwait(Subscription *s) {
        if (s->waiting_list) {
                LIST_REMOVE(waiting, *s->waiting_list, s);
                s->waiting_list = NULL;
        }
        s->waiting = false;
}

void subscription_started(Subscription *s) {
        Body *b;
        uint64_t count = s->pending_count;

        subscription_unwait(s);
        /* What came meanwhile goes now, whatever the interval. */
        b = TAKE_PTR(s->pending);
        s->pending_count = 0;
        if (b && !s->client->dead)
                subscription_send(s, b, count, s->client->server->config->output_buffer_bytes);
        body_unref(b);
}


void subscription_start(Subscription *s) {
        client_stream_start(s->client, s, subscription_stream_free);
}

Subscription *subscription_free(Subscription *s) {
        if (!s)
                return NULL;
        subscription_unwait(s);
        listener_detach(&s->listener);
        event_free_and_null(&s->coalesce);
        body_unref(s->pending);
        event_view_done(&s->view);
        free(s);
        return NULL;
}

int subscription_export(const Subscription *s, SnapshotSubscription *ret) {
        const Listener *l = &s->listener;
        SnapshotSubscription e = {
                .registration = l->reg ? l->reg->id : 0,
                .level = l->level,
                .explicit_psi = l->explicit_psi,
                .by_level = l->by_level,
                .waiting = s->waiting,
                .seq = s->seq,
                .missed = s->missed,
                .min_interval_usec = s->min_interval_usec,
                .last_sent_usec = s->last_sent_usec,
                .pending_count = s->pending_count,
        };
        LiveSlot *live = client_live(s->client);
        int k;

        e.written_seq = live ? live->written_seq : s->seq;
        if (s->pending) {
                k = snapshot_bytes_set(&e.pending, s->pending->data, s->pending->size);
                if (k < 0)
                        return k;
                e.pending_flags = s->pending->flags;
                e.pending_monotonic_us = s->pending->monotonic_us;
        }
        *ret = e;
        return 0;
}

/* Hold the event a previous process held for @s, and arm its interval. */
static int subscription_adopt_pending(Subscription *s, const SnapshotSubscription *snap) {
        Body *b;

        if (snap->pending.size == 0)
                return 0;
        b = body_new(snap->pending.data, snap->pending.size);
        if (!b)
                return -ENOMEM;
        b->flags = snap->pending_flags;
        b->monotonic_us = snap->pending_monotonic_us;
        if (s->waiting) {
                s->pending = b;
                s->pending_count = snap->pending_count;
                return 0;
        }
        if (!subscription_hold(s, b, snap->pending_count, now_usec(CLOCK_MONOTONIC))) {
                body_unref(b);
                return -ENOMEM;
        }
        body_unref(b);
        return 0;
}

int subscription_adopt(Client *c, Counters *counters, Registration *r, const SnapshotSubscription *snap,
                       Subscription **ret) {
        Subscription *s = subscription_alloc(c, counters, r, &(const Listener) {
                .explicit_psi = snap->explicit_psi,
                .by_level = snap->by_level,
                .level = snap->level,
        });
        LiveSlot *live;

        if (!s)
                return -ENOMEM;
        s->seq = snap->seq;
        s->missed = snap->missed;
        s->min_interval_usec = snap->min_interval_usec;
        s->last_sent_usec = snap->last_sent_usec;
        s->waiting = snap->waiting;
        live = client_live(c);
        if (live) {
                live->seq = s->seq;
                live->written_seq = snap->written_seq;
        }
        if (subscription_adopt_pending(s, snap) < 0) {
                subscription_free(s);
                return -ENOMEM;
        }
        subscription_live(s);
        client_stream_start(c, s, subscription_stream_free);
        *ret = s;
        return 0;
}

Subscription *subscription_of_listener(Listener *l) {
        return l->ops == &subscription_listener_ops ? subscription_of(l) : NULL;
}

Subscription *subscription_of_client(const Client *c) {
        return c->stream && c->stream_free == subscription_stream_free ? c->stream : NULL;
}
