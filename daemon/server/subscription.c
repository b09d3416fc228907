/* SPDX-License-Identifier: MIT */
/* Varlink subscriptions: one registration listener per Subscribe stream. */
#include <inttypes.h>

#include "event.h"
#include "log.h"
#include "subscription.h"

static Subscription *subscription_of(Listener *l) {
        return (Subscription *) l;
}

static size_t format_prefix(const Subscription *s, const Body *body, uint64_t count, char *buf) {
        const Listener *l = &s->listener;
        bool has_level = l->level >= 0;
        int n;

        if (body->flags & BODY_NO_COUNT)
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",%s%s%s",
                             s->seq, s->missed, has_level ? "\"level\":\"" : "",
                             has_level ? level_to_string(l->level) : "", has_level ? "\"," : "");
        else if (has_level && !(body->flags & BODY_HAS_LEVEL))
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",\"count\":%" PRIu64 ",\"level\":\"%s\",",
                             s->seq, s->missed, count, level_to_string(l->level));
        else
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",\"count\":%" PRIu64 ",",
                             s->seq, s->missed, count);
        return (size_t) n;
}

/* Queue one event for the subscriber now; false if it had to be dropped. */
static bool subscription_send(Subscription *s, Body *body, uint64_t count, size_t limit) {
        Client *c = s->client;
        const uint64_t read_usec = body->monotonic_us;
        char prefix[OUT_PREFIX_MAX];
        Body *own = NULL;
        size_t n;
        int k;

        s->seq++;
        n = format_prefix(s, body, count, prefix);
        if (s->view.root) {
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
        k = client_send_event(c, prefix, n, body, limit);
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

static void on_coalesce_timer(evutil_socket_t fd, short what, void *userdata) {
        Subscription *s = userdata;
        Body *b = TAKE_PTR(s->pending);
        uint64_t count = s->pending_count;

        s->pending_count = 0;
        event_free(s->coalesce);
        s->coalesce = NULL;
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
        if (msg && !c->dead)
                (void) client_send_owned(c, msg, size);
        else {
                free(msg);
                if (!c->dead)
                        client_kill(c); /* the stream cannot end as it should */
        }
        client_stream_ended(c);
}

static const ListenerOps subscription_listener_ops = {
        .deliver = subscription_deliver,
        .cleared = subscription_cleared,
        /* Like "cleared": at once, after a pending event, with the reserve. */
        .trigger_changed = subscription_cleared,
        .removed = subscription_removed,
};

int subscription_new(Client *c, Counters *counters, Registration *r, const SubscribeRequest *req,
                     Subscription **ret) {
        Subscription *s = calloc(1, sizeof(*s));

        if (!s || event_view_init(&s->view, cgroup_view_root(&c->view, r->src.type == SOURCE_VMPRESSURE)) < 0) {
                free(s);
                return -ENOMEM;
        }
        s->listener = (Listener) {
                .ops = &subscription_listener_ops,
                .uid = c->uid,
                .explicit_psi = req->selector == SELECTOR_PSI,
                .by_level = req->selector == SELECTOR_LEVEL,
                .level = req->selector == SELECTOR_LEVEL ? req->level :
                         req->selector == SELECTOR_VMPRESSURE ? req->vm_level : _LEVEL_INVALID,
        };
        s->client = c;
        s->counters = counters;
        s->min_interval_usec = req->min_interval_usec;
        listener_attach(&s->listener, r);
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
        if (!s->waiting_list)
                return;
        LIST_REMOVE(waiting, *s->waiting_list, s);
        s->waiting_list = NULL;
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

static void subscription_stream_free(void *stream) {
        subscription_free(stream);
}

void subscription_start(Subscription *s) {
        client_stream_start(s->client, s, subscription_stream_free);
}

Subscription *subscription_free(Subscription *s) {
        if (!s)
                return NULL;
        subscription_unwait(s);
        listener_detach(&s->listener);
        if (s->coalesce)
                event_free(s->coalesce);
        body_unref(s->pending);
        event_view_done(&s->view);
        free(s);
        return NULL;
}
