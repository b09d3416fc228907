/* SPDX-License-Identifier: MIT */
/*
 * The registry without a kernel: subscriptions on a hand-made registration,
 * fan-out of one body to several clients (socketpairs), per-client drops
 * with missed/seq accounting, coalescing with min_interval, and release of
 * the registration with its last subscriber.
 */
#include <poll.h>
#include <sys/socket.h>

#include "client.h"
#include "event.h"
#include "manager.h"
#include "registration.h"
#include "tests.h"
#include "util.h"

typedef struct Peer {
        Client *client;
        int fd;          /* our end */
        char *buf;       /* 1 MiB, on the heap */
        size_t size;
} Peer;

#define PEER_BUF (1u << 20)

static Client *client_make(Manager *m, int fd) {
        Client *c = calloc(1, sizeof(*c));

        ASSERT_TRUE(c);
        c->manager = m;
        c->fd = fd;
        c->id = ++m->next_client_id;
        varlink_reader_init(&c->in, m->config->max_message_bytes);
        outqueue_init(&c->out);
        c->ev_read = event_new(m->base, fd, EV_READ | EV_PERSIST, NULL, c);
        c->ev_write = event_new(m->base, fd, EV_WRITE | EV_PERSIST, NULL, c);
        LIST_PREPEND(clients, m->clients, c);
        m->n_clients++;
        return c;
}

static void peer_open(Manager *m, Peer *p, int sndbuf) {
        int sv[2];

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
        if (sndbuf)
                ASSERT_OK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)));
        p->client = client_make(m, sv[0]);
        p->fd = sv[1];
        p->size = 0;
        p->buf = malloc(PEER_BUF);
        ASSERT_TRUE(p->buf);
}

static void peer_close(Peer *p) {
        close(p->fd);
        free(p->buf);
}

/* Read everything available and return the events, NUL-separated, as JSON objects. */
static json_t *peer_events(Peer *p) {
        json_t *arr = json_array();
        ssize_t n;
        size_t start = 0;

        while ((n = read(p->fd, p->buf + p->size, PEER_BUF - p->size)) > 0)
                p->size += (size_t) n;
        for (size_t i = 0; i < p->size; i++) {
                if (p->buf[i] != 0)
                        continue;
                json_t *msg = json_loadb(p->buf + start, i - start, 0, NULL);
                ASSERT_TRUE(msg);
                json_array_append_new(arr, json_incref(json_object_get(json_object_get(msg, "parameters"), "event")));
                json_decref(msg);
                start = i + 1;
        }
        memmove(p->buf, p->buf + start, p->size - start);
        p->size -= start;
        return arr;
}

static Registration *registration_make(Manager *m) {
        Registration *r = calloc(1, sizeof(*r));

        ASSERT_TRUE(r);
        r->manager = m;
        r->type = SOURCE_PSI;
        r->cgroup = strdup("/test");
        r->fd = r->aux_fd = -1;
        r->last_state = -1;
        r->used = r->requested = (PsiTrigger) { PSI_STALL_SOME, 100000, 2000000 };
        LIST_PREPEND(registrations, m->registrations, r);
        m->n_registrations++;
        return r;
}

static Body *make_pressure_body(void) {
        Body *b = event_body_new(event_pressure_new("/test", "psi", NULL, 1, now_usec(CLOCK_MONOTONIC)), 0);

        ASSERT_TRUE(b);
        return b;
}

static Subscription *subscribe(Client *c, Registration *r, Level level, uint64_t interval_usec) {
        SubscribeRequest req = { .selector = SELECTOR_LEVEL, .level = level, .min_interval_usec = interval_usec };
        Subscription *s;

        ASSERT_OK(subscription_new(c, r, &req, &s));
        return s;
}

static void test_fanout_and_release(void) {
        Manager *m;
        Peer a, b;
        Registration *r;
        Body *body;
        json_t *ev;

        ASSERT_OK(manager_new(&m));
        peer_open(m, &a, 0);
        peer_open(m, &b, 0);
        r = registration_make(m);
        subscribe(a.client, r, LEVEL_MEDIUM, 0);
        subscribe(b.client, r, LEVEL_CRITICAL, 0);
        ASSERT_EQ(r->n_subscriptions, 2);
        ASSERT_EQ(m->n_subscriptions, 2);

        body = make_pressure_body();
        registration_deliver(r, body, 3);
        registration_deliver(r, body, 1);
        ASSERT_EQ(body->n_ref, 1); /* written out at once: nobody holds it */
        body_unref(body);
        ASSERT_U64_EQ(m->counters.value[COUNTER_EVENTS_DELIVERED], 4);

        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 2);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(ev, 0), "seq")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(ev, 0), "count")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(ev, 1), "seq")), 2);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(ev, 1), "missed")), 0);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(ev, 0), "level")), "medium");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(ev, 0), "kind")), "pressure");
        json_decref(ev);
        ev = peer_events(&b);
        ASSERT_EQ(json_array_size(ev), 2);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(ev, 1), "level")), "critical");
        json_decref(ev);

        /* The last subscriber leaving removes the registration at once. */
        subscription_free(a.client->sub);
        ASSERT_EQ(m->n_registrations, 1);
        subscription_free(b.client->sub);
        ASSERT_EQ(m->n_registrations, 0);
        ASSERT_TRUE(m->registrations == NULL);
        ASSERT_U64_EQ(m->counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);

        peer_close(&a);
        peer_close(&b);
        manager_free(m);
}

static void test_slow_consumer(void) {
        Manager *m;
        Peer slow, fast;
        Registration *r;
        Subscription *s;
        json_t *ev;
        uint64_t n = 2000, got = 0, last_seq = 0, missed_seen = 0;

        ASSERT_OK(manager_new(&m));
        m->config->output_buffer_bytes = 4096;
        peer_open(m, &slow, 4096);
        peer_open(m, &fast, 0);
        r = registration_make(m);
        s = subscribe(slow.client, r, LEVEL_LOW, 0);
        subscribe(fast.client, r, LEVEL_LOW, 0);

        for (uint64_t i = 0; i < n; i++) {
                Body *body = make_pressure_body();

                registration_deliver(r, body, 1);
                body_unref(body);
                /* The fast client reads as it goes. */
                ev = peer_events(&fast);
                got += json_array_size(ev);
                json_decref(ev);
        }
        ASSERT_U64_EQ(got, n);
        ASSERT_TRUE(s->missed > 0);
        ASSERT_TRUE(m->counters.value[COUNTER_EVENTS_DROPPED] == s->missed);
        ASSERT_TRUE(slow.client->out.bytes <= 4096);

        /* Once the slow client reads, the next event tells what it missed. */
        ev = peer_events(&slow);
        for (size_t i = 0; i < json_array_size(ev); i++)
                last_seq = (uint64_t) json_integer_value(json_object_get(json_array_get(ev, i), "seq"));
        json_decref(ev);
        while (slow.client->write_armed || !outqueue_is_empty(&slow.client->out)) {
                ASSERT_TRUE(outqueue_flush(&slow.client->out, slow.client->fd) >= 0);
                ev = peer_events(&slow);
                for (size_t i = 0; i < json_array_size(ev); i++)
                        last_seq = (uint64_t) json_integer_value(json_object_get(json_array_get(ev, i), "seq"));
                json_decref(ev);
                slow.client->write_armed = false;
        }
        {
                Body *body = make_pressure_body();
                uint64_t dropped = s->missed;

                registration_deliver(r, body, 1);
                body_unref(body);
                ev = peer_events(&slow);
                ASSERT_EQ(json_array_size(ev), 1);
                missed_seen = (uint64_t) json_integer_value(json_object_get(json_array_get(ev, 0), "missed"));
                ASSERT_U64_EQ(missed_seen, dropped);
                ASSERT_U64_EQ(json_integer_value(json_object_get(json_array_get(ev, 0), "seq")),
                              last_seq + dropped + 1);
                json_decref(ev);
        }

        subscription_free(slow.client->sub);
        subscription_free(fast.client->sub);
        peer_close(&slow);
        peer_close(&fast);
        manager_free(m);
}

static void test_coalesce(void) {
        Manager *m;
        Peer a;
        Registration *r;
        json_t *ev;

        ASSERT_OK(manager_new(&m));
        peer_open(m, &a, 0);
        r = registration_make(m);
        subscribe(a.client, r, LEVEL_LOW, 50 * USEC_PER_MSEC);

        for (int i = 0; i < 5; i++) {
                Body *body = make_pressure_body();

                registration_deliver(r, body, i == 0 ? 1 : 2);
                body_unref(body);
        }
        /* The first goes out at once; the other four wait, merged. */
        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(ev, 0), "count")), 1);
        json_decref(ev);
        ASSERT_TRUE(a.client->sub->coalesce != NULL);
        ASSERT_U64_EQ(a.client->sub->pending_count, 8);

        /* The timer delivers one event counting the four notifications... */
        while (a.client->sub->coalesce)
                event_base_loop(m->base, EVLOOP_ONCE);
        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(ev, 0), "count")), 8);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(ev, 0), "seq")), 2);
        json_decref(ev);
        /* ...and then no timer is left. */
        ASSERT_TRUE(a.client->sub->coalesce == NULL);

        subscription_free(a.client->sub);
        peer_close(&a);
        manager_free(m);
}

static Subscription *subscribe_psi(Client *c, Registration *r) {
        SubscribeRequest req = { .selector = SELECTOR_PSI, .psi = r->requested };
        Subscription *s;

        ASSERT_OK(subscription_new(c, r, &req, &s));
        return s;
}

/* A fast registration's charge: counted once, kept by its uid, moved to
 * another explicit non-root subscriber when that uid leaves, dropped when
 * only root and [Levels] subscribers remain. */
static void test_fast_charge(void) {
        Manager *m;
        Peer a, b, root, lvl, e;
        Registration *r;

        ASSERT_OK(manager_new(&m));
        peer_open(m, &a, 0);
        peer_open(m, &b, 0);
        peer_open(m, &root, 0);
        peer_open(m, &lvl, 0);
        peer_open(m, &e, 0);
        a.client->uid = 1000;
        b.client->uid = 2000;
        root.client->uid = 0;
        lvl.client->uid = 3000;
        e.client->uid = 2000;

        r = registration_make(m);
        r->used = r->requested = (PsiTrigger) { PSI_STALL_SOME, 100000, 1000000 };
        r->fast_charged = true;
        r->fast_uid = 1000;
        subscribe_psi(a.client, r);
        subscribe_psi(b.client, r);
        subscribe_psi(root.client, r);
        subscribe(lvl.client, r, LEVEL_LOW, 0);
        ASSERT_EQ(registration_fast_count(m, 1000), 1);
        ASSERT_EQ(registration_fast_count(m, 2000), 0);
        ASSERT_EQ(registration_fast_count(m, 0), 0);

        /* Another subscriber leaving changes nothing. */
        subscription_free(root.client->sub);
        ASSERT_TRUE(r->fast_charged);
        ASSERT_EQ(r->fast_uid, 1000);

        /* The creator leaves: the charge moves to the remaining explicit
         * non-root subscriber, not to the [Levels] one. */
        subscription_free(a.client->sub);
        ASSERT_TRUE(r->fast_charged);
        ASSERT_EQ(r->fast_uid, 2000);
        ASSERT_EQ(registration_fast_count(m, 1000), 0);
        ASSERT_EQ(registration_fast_count(m, 2000), 1);

        /* It stays with its uid while any peer of that uid is left. */
        subscribe_psi(e.client, r);
        subscription_free(b.client->sub);
        ASSERT_TRUE(r->fast_charged);
        ASSERT_EQ(r->fast_uid, 2000);

        /* Only a [Levels] subscriber left: nobody is charged. */
        subscription_free(e.client->sub);
        ASSERT_TRUE(!r->fast_charged);
        ASSERT_EQ(registration_fast_count(m, 2000), 0);
        ASSERT_EQ(m->n_registrations, 1);

        /* A removed registration counts for nobody. */
        r->fast_charged = true;
        r->fast_uid = 1000;
        r->removed = true;
        ASSERT_EQ(registration_fast_count(m, 1000), 0);
        registration_recharge(r);
        ASSERT_TRUE(!r->fast_charged);
        registration_recharge(NULL);

        subscription_free(lvl.client->sub);
        ASSERT_EQ(m->n_registrations, 0);
        peer_close(&a);
        peer_close(&b);
        peer_close(&root);
        peer_close(&lvl);
        peer_close(&e);
        manager_free(m);
}

int main(void) {
        test_fanout_and_release();
        test_slow_consumer();
        test_coalesce();
        test_fast_charge();
        return 0;
}
