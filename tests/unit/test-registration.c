/* SPDX-License-Identifier: MIT */
/*
 * The registry and the varlink subscriptions without a kernel.
 *
 * Registry level: hand-made registrations with fake listeners that record
 * what they are handed; fan-out of one body, kick listeners (no body),
 * removal telling every listener, release with the last listener, moving a
 * listener, the fast-trigger charge. Events come in through the callbacks
 * the registry installs in its sources (taken from a real memory.events
 * registration on a fake cgroup tree) and through registry_inject_split().
 *
 * Server level: real clients of a ClientServer over socketpairs with
 * subscriptions on those registrations; per-client envelopes (seq, missed,
 * count, level), drops for a slow reader with a small socket buffer,
 * coalescing with min_interval, "cleared" through the reserve beyond a
 * full queue, the "removed" end of a stream, and release of the
 * registration with its last subscriber.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "client.h"
#include "event.h"
#include "registration-episode.h"
#include "registration.h"
#include "subscription.h"
#include "test-registry-fixture.h"
#include "test-body.h"
#include "tests.h"
#include "util.h"

#define MEMORY_EVENTS_ZERO "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"

typedef struct Fixture {
        char root[64];
        REGISTRY_FIXTURE_FIELDS;
        ClientServer *server;
} Fixture;

/* What the registry installs in the sources it opens: static in registration.c. */
static const SourceCallbacks *registry_cb;

static void no_dispatch(Client *c, VarlinkCall *call, void *userdata) {
        TEST_FAIL("client %" PRIu64 " made a call", c->id);
}

static void fixture_init(Fixture *f) {
        RegistrationKey key = { .type = SOURCE_MEMORY_EVENTS, .cgroup = "/mem" };
        struct sockaddr_un sa = {};
        SourceFailure e = {};
        Registration *r;
        char path[128];
        int lfd;

        *f = (Fixture) {};
        registry_fixture_init(f);
        snprintf(f->root, sizeof(f->root), "/tmp/test-registration-XXXXXX");
        ASSERT_TRUE(mkdtemp(f->root));
        snprintf(path, sizeof(path), "%s/mem", f->root);
        ASSERT_OK(mkdir(path, 0755));
        test_write_file_at(f->root, "/mem/memory.events", MEMORY_EVENTS_ZERO);
        ASSERT_OK(hierarchy_open(&f->v2, f->root));

        /* A memory.events source opens on a plain directory tree. */
        ASSERT_OK(registration_acquire(&f->reg, &key, -1, &r, &e));
        ASSERT_EQ(f->reg.n_registrations, 1);
        ASSERT_TRUE(r->src.cb && r->src.cb->kick && r->src.cb->pressure && r->src.cb->event && r->src.cb->removed);
        ASSERT_TRUE(!registry_cb || registry_cb == r->src.cb);
        registry_cb = r->src.cb;
        registration_release(r); /* no listener: closed at once */
        ASSERT_EQ(f->reg.n_registrations, 0);
        ASSERT_U64_EQ(f->counters.value[COUNTER_REGISTRATIONS_CREATED], 1);
        ASSERT_U64_EQ(f->counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);
        memset(f->counters.value, 0, sizeof(f->counters.value));

        /* A listening socket in the tree: nobody connects, the server only watches it. */
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(lfd >= 0);
        sa.sun_family = AF_UNIX;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/varlink", f->root);
        ASSERT_OK(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)));
        ASSERT_OK(listen(lfd, 1));
        ASSERT_OK(client_server_new(f->base, f->config, lfd, no_dispatch, NULL, &f->server));
}

static void fixture_done(Fixture *f) {
        char path[128];

        f->server = client_server_free(f->server);
        registry_fixture_done(f);
        snprintf(path, sizeof(path), "%s/mem/memory.events", f->root);
        (void) unlink(path);
        snprintf(path, sizeof(path), "%s/mem", f->root);
        (void) rmdir(path);
        snprintf(path, sizeof(path), "%s/varlink", f->root);
        ASSERT_OK(unlink(path));
        ASSERT_OK(rmdir(f->root));
}

/* A live registration of @type on @cgroup (with the trigger @psi for PSI) is in @reg. */
static bool registry_has(const Registry *reg, SourceType type, const char *cgroup, const PsiTrigger *psi) {
        Registration *r;

        LIST_FOREACH(registrations, r, reg->registrations)
                if (r->src.type == type && streq(r->src.cgroup, cgroup) && !r->removed &&
                    (type != SOURCE_PSI || psi_trigger_equal(&r->src.requested, psi)))
                        return true;
        return false;
}

/* A PSI (or other) registration built in memory: no kernel file, fd -1. */
static Registration *registration_make(Fixture *f, SourceType type, const char *cgroup) {
        Registration *r = calloc(1, sizeof(*r));

        ASSERT_TRUE(r);
        r->registry = &f->reg;
        r->src = (Source) {
                .env = &f->env,
                .cb = registry_cb,
                .type = type,
                .cgroup = strdup(cgroup),
                .requested = { PSI_STALL_SOME, 100000, 2000000 },
                .used = { PSI_STALL_SOME, 100000, 2000000 },
                .fd = -1,
                .aux_fd = -1,
                .last_state = -1,
        };
        ASSERT_TRUE(r->src.cgroup);
        registration_episode_init(r);
        LIST_PREPEND(registrations, f->reg.registrations, r);
        f->reg.n_registrations++;
        return r;
}

static Body *make_pressure_body(const char *cgroup) {
        Body *b = test_body_new(event_pressure_new(cgroup, "psi", RESOURCE_MEMORY, NULL, 1, now_usec(CLOCK_MONOTONIC)), 0, 0);

        ASSERT_TRUE(b);
        return b;
}

/* ---- registry level: fake listeners ---- */

typedef struct Fake {
        Listener l;                 /* first */
        bool refuse;                /* deliver() says it could not take it */
        unsigned n_delivered;
        unsigned n_null;            /* deliveries without a body */
        uint64_t count;             /* sum of the counts handed over */
        const Body *last_body;
        bool last_killed;           /* the last body was the kernel's kill in /test */
        unsigned n_cleared;
        unsigned cleared_flags;
        unsigned n_removed;
        Registration *removed_from;
        bool unlinked_when_removed;
} Fake;

static bool fake_deliver(Listener *l, Body *body, uint64_t count) {
        Fake *f = (Fake *) l;

        ASSERT_TRUE(l->reg != NULL);
        if (f->refuse)
                return false;
        f->n_delivered++;
        if (!body)
                f->n_null++;
        f->count += count;
        f->last_body = body;
        f->last_killed = body && strstr(body->data, "\"kind\":\"killed\",\"cgroup\":\"/test\",\"by\":\"kernel\"");
        return true;
}

static bool fake_cleared(Listener *l, Body *body) {
        Fake *f = (Fake *) l;

        f->n_cleared++;
        f->cleared_flags = body->flags;
        return true;
}

static void fake_removed(Listener *l, Registration *r) {
        Fake *f = (Fake *) l;
        Listener *i;
        bool listed = false;

        f->n_removed++;
        f->removed_from = r;
        LIST_FOREACH(listeners, i, r->listeners)
                if (i == l)
                        listed = true;
        f->unlinked_when_removed = l->reg == NULL && !listed && r->removed;
        /* Detaching what is detached already does nothing. */
        listener_detach(l);
}

static const ListenerOps fake_ops = {
        .deliver = fake_deliver,
        .cleared = fake_cleared,
        .removed = fake_removed,
};

static void fake_attach(Fake *f, Registration *r, bool kick, Level level) {
        *f = (Fake) { .l = { .ops = &fake_ops, .kick = kick, .level = level, .by_level = level >= 0 } };
        listener_attach(&f->l, r);
        ASSERT_TRUE(f->l.reg == r);
}

static void test_registry_fanout_and_release(void) {
        Fixture fx;
        Fake a, b, k, refusing, other, mev;
        Registration *r, *r2, *rm;
        Body *body;
        uint64_t mono = now_usec(CLOCK_MONOTONIC);

        fixture_init(&fx);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        r2 = registration_make(&fx, SOURCE_PSI, "/other");
        rm = registration_make(&fx, SOURCE_MEMORY_EVENTS, "/test");
        fake_attach(&a, r, false, LEVEL_MEDIUM);
        fake_attach(&b, r, false, LEVEL_CRITICAL);
        fake_attach(&k, r, true, _LEVEL_INVALID);
        fake_attach(&refusing, r, false, _LEVEL_INVALID);
        refusing.refuse = true;
        fake_attach(&other, r2, false, _LEVEL_INVALID);
        fake_attach(&mev, rm, false, _LEVEL_INVALID);
        ASSERT_EQ(r->n_subscribers, 3);
        ASSERT_EQ(r->n_kicked, 1);
        ASSERT_EQ(fx.reg.n_registrations, 3);

        /* One body, the same for every listener that takes events, and for
         * the kick listener (an injection has its event before any listener
         * is told); other cgroups and sources that are not PSI or vmpressure
         * get nothing. Critical reaches every level. */
        body = make_pressure_body("/test");
        ASSERT_U64_EQ(registry_inject_split(&fx.reg, "/test", body, "/test", body, RESOURCE_MEMORY, LEVEL_CRITICAL, mono), 3);
        ASSERT_EQ(body->n_ref, 1); /* nobody kept it */
        ASSERT_EQ(a.n_delivered, 1);
        ASSERT_TRUE(a.last_body == body);
        ASSERT_EQ(b.n_delivered, 1);
        ASSERT_TRUE(b.last_body == body);
        ASSERT_U64_EQ(a.count, 1);
        ASSERT_EQ(k.n_delivered, 1);
        ASSERT_EQ(k.n_null, 0);
        ASSERT_TRUE(k.last_body == body);
        ASSERT_EQ(refusing.n_delivered, 0);
        ASSERT_EQ(other.n_delivered, 0);
        ASSERT_EQ(mev.n_delivered, 0);
        body_unref(body);
        body = make_pressure_body("/nowhere");
        ASSERT_U64_EQ(registry_inject_split(&fx.reg, "/nowhere", body, "/nowhere", body, RESOURCE_MEMORY, LEVEL_LOW, mono), 0);
        body_unref(body);

        /* The source's pressure callback builds one body for all, with its count. */
        registry_cb->pressure(&r->src, NULL, now_usec(CLOCK_REALTIME), mono, 3);
        ASSERT_EQ(a.n_delivered, 2);
        ASSERT_EQ(b.n_delivered, 2);
        ASSERT_U64_EQ(a.count, 4);
        ASSERT_U64_EQ(b.count, 4);
        ASSERT_TRUE(a.last_body == b.last_body);
        ASSERT_EQ(k.n_delivered, 1); /* kicks come through kick() alone */
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_READ], 1);

        /* kick() reaches only the kick listener, without a body. */
        registry_cb->kick(&r->src);
        ASSERT_EQ(k.n_delivered, 2);
        ASSERT_EQ(k.n_null, 1);
        ASSERT_EQ(a.n_delivered, 2);

        /* event() serializes a source's typed event once and fans it out with its count. */
        registry_cb->event(&r->src, &(const EventData) {
                .kind = EVENT_KILLED, .cgroup = "/test", .realtime_us = 1, .monotonic_us = mono,
                .killed = { .by = "kernel", .reason = "oom_kill" },
        }, 1);
        ASSERT_EQ(a.n_delivered, 3);
        ASSERT_EQ(b.n_delivered, 3);
        ASSERT_U64_EQ(a.count, 5);
        ASSERT_TRUE(a.last_body == b.last_body);
        ASSERT_TRUE(a.last_killed);
        ASSERT_EQ(k.n_delivered, 2);
        ASSERT_EQ(other.n_delivered, 0);

        /* Listeners leave one by one; the last one releases the registration. */
        listener_detach(&a.l);
        ASSERT_TRUE(a.l.reg == NULL);
        listener_detach(&a.l); /* idempotent */
        ASSERT_EQ(r->n_subscribers, 2);
        listener_detach(&b.l);
        listener_detach(&refusing.l);
        ASSERT_EQ(fx.reg.n_registrations, 3);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 0);
        listener_detach(&k.l);
        ASSERT_EQ(fx.reg.n_registrations, 2);
        ASSERT_TRUE(!registry_has(&fx.reg, SOURCE_PSI, "/test", &(PsiTrigger) { PSI_STALL_SOME, 100000, 2000000 }));
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);

        listener_detach(&other.l);
        listener_detach(&mev.l);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        ASSERT_TRUE(fx.reg.registrations == NULL);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 3);
        fixture_done(&fx);
}

static void test_registry_removed(void) {
        Fixture fx;
        Fake a, b, k, other;
        Registration *r, *r2;

        fixture_init(&fx);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        r2 = registration_make(&fx, SOURCE_PSI, "/other");
        fake_attach(&a, r, false, LEVEL_LOW);
        fake_attach(&b, r, false, _LEVEL_INVALID);
        fake_attach(&k, r, true, _LEVEL_INVALID);
        fake_attach(&other, r2, false, _LEVEL_INVALID);
        r->fast_charged = true;
        r->fast_uid = 1000;

        /* The cgroup is gone: every listener is told, detached, and the
         * registration freed after the last one. */
        registry_cb->removed(&r->src);
        ASSERT_EQ(a.n_removed, 1);
        ASSERT_EQ(b.n_removed, 1);
        ASSERT_EQ(k.n_removed, 1);
        ASSERT_TRUE(a.unlinked_when_removed);
        ASSERT_TRUE(b.unlinked_when_removed);
        ASSERT_TRUE(k.unlinked_when_removed);
        ASSERT_TRUE(a.removed_from == r && b.removed_from == r && k.removed_from == r);
        ASSERT_TRUE(a.l.reg == NULL && b.l.reg == NULL && k.l.reg == NULL);
        ASSERT_EQ(other.n_removed, 0);
        ASSERT_TRUE(other.l.reg == r2);
        ASSERT_EQ(fx.reg.n_registrations, 1);
        ASSERT_TRUE(fx.reg.registrations == r2);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);
        ASSERT_EQ(registry_fast_count(&fx.reg, 1000), 0);

        listener_detach(&other.l);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        fixture_done(&fx);
}

/* The real memory.events source on the fake tree reports through the registry to its listeners. */
static void test_registry_source(void) {
        RegistrationKey key = { .type = SOURCE_MEMORY_EVENTS, .cgroup = "/mem" };
        SourceFailure e = {};
        Fixture fx;
        Registration *r, *again;
        Fake a, b;
        char path[128];

        fixture_init(&fx);
        ASSERT_OK(registration_acquire(&fx.reg, &key, -1, &r, &e));
        ASSERT_TRUE(r->src.cb == registry_cb);
        fake_attach(&a, r, false, _LEVEL_INVALID);
        /* An identical request shares it. */
        ASSERT_OK(registration_acquire(&fx.reg, &key, -1, &again, &e));
        ASSERT_TRUE(again == r);
        fake_attach(&b, r, false, _LEVEL_INVALID);
        ASSERT_EQ(fx.reg.n_registrations, 1);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_CREATED], 1);

        test_write_file_at(fx.root, "/mem/memory.events", "low 0\nhigh 2\nmax 0\noom 0\noom_kill 0\n");
        while (a.n_delivered == 0)
                ASSERT_OK(event_base_loop(fx.base, EVLOOP_ONCE));
        ASSERT_EQ(a.n_delivered, 1);
        ASSERT_EQ(b.n_delivered, 1);
        ASSERT_TRUE(a.last_body != NULL && a.last_body == b.last_body);
        ASSERT_U64_EQ(a.count, 1);

        snprintf(path, sizeof(path), "%s/mem/memory.events", fx.root);
        ASSERT_OK(unlink(path));
        snprintf(path, sizeof(path), "%s/mem", fx.root);
        ASSERT_OK(rmdir(path));
        while (a.n_removed == 0)
                ASSERT_OK(event_base_loop(fx.base, EVLOOP_ONCE));
        ASSERT_EQ(b.n_removed, 1);
        ASSERT_TRUE(a.unlinked_when_removed && b.unlinked_when_removed);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);
        fixture_done(&fx);
}

/*
 * An injected level reaches what a kernel event of that level would: level
 * subscriptions of that level and below, a vmpressure listener of that
 * level and below (it hears its level and above), every listener without a
 * level (an explicit PSI trigger); a registration nobody of which hears
 * it gets nothing, not even an episode.
 */
static void test_registry_inject_levels(void) {
        static const Level levels[] = { LEVEL_LOW, LEVEL_MEDIUM, LEVEL_CRITICAL };
        /* low + psi; and medium + vm; and critical + lone on the other registration. */
        static const uint64_t reached[] = { 2, 4, 6 };
        Fixture fx;
        Fake low, medium, critical, psi, vm, lone;
        Registration *r, *r2;
        Body *body;
        uint64_t mono = now_usec(CLOCK_MONOTONIC);

        fixture_init(&fx);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        fake_attach(&low, r, false, LEVEL_LOW);
        fake_attach(&medium, r, false, LEVEL_MEDIUM);
        fake_attach(&critical, r, false, LEVEL_CRITICAL);
        fake_attach(&psi, r, false, _LEVEL_INVALID);
        fake_attach(&vm, r, false, LEVEL_MEDIUM);
        vm.l.by_level = false; /* an explicit vmpressure subscription: its level, no [Levels] */
        r2 = registration_make(&fx, SOURCE_PSI, "/test");
        r2->src.requested = r2->src.used = (PsiTrigger) { PSI_STALL_FULL, 100000, 2000000 };
        fake_attach(&lone, r2, false, LEVEL_CRITICAL);

        for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
                body = make_pressure_body("/test");
                ASSERT_U64_EQ(registry_inject_split(&fx.reg, "/test", body, "/test", body, RESOURCE_MEMORY, levels[i],
                                                    mono),
                              reached[i]);
                body_unref(body);
                if (i == 0)
                        /* Low: nobody on r2 hears it, so no episode began there. */
                        ASSERT_TRUE(r->episode.active && !r2->episode.active);
        }
        ASSERT_EQ(low.n_delivered, 3);      /* low, medium, critical */
        ASSERT_EQ(medium.n_delivered, 2);   /* medium, critical */
        ASSERT_EQ(critical.n_delivered, 1); /* critical */
        ASSERT_EQ(psi.n_delivered, 3);      /* every level */
        ASSERT_EQ(vm.n_delivered, 2);       /* its level and above */
        ASSERT_EQ(lone.n_delivered, 1);
        ASSERT_TRUE(r2->episode.active);
        ASSERT_U64_EQ(r->episode.cur.events, 3);
        ASSERT_U64_EQ(r2->episode.cur.events, 1);

        listener_detach(&low.l);
        listener_detach(&medium.l);
        listener_detach(&critical.l);
        listener_detach(&psi.l);
        listener_detach(&vm.l);
        listener_detach(&lone.l);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        fixture_done(&fx);
}

static void test_registry_move(void) {
        Fixture fx;
        Fake a, b;
        Registration *r1, *r2;
        Body *body;
        uint64_t mono = now_usec(CLOCK_MONOTONIC);

        fixture_init(&fx);
        r1 = registration_make(&fx, SOURCE_PSI, "/test");
        r2 = registration_make(&fx, SOURCE_PSI, "/test");
        r2->src.requested = r2->src.used = (PsiTrigger) { PSI_STALL_FULL, 100000, 2000000 };
        fake_attach(&a, r1, false, LEVEL_LOW);
        fake_attach(&b, r1, false, LEVEL_LOW);

        listener_move(&a.l, r2);
        ASSERT_TRUE(a.l.reg == r2);
        ASSERT_EQ(r1->n_subscribers, 1);
        ASSERT_EQ(r2->n_subscribers, 1);
        ASSERT_EQ(fx.reg.n_registrations, 2);
        listener_move(&a.l, r2); /* to where it is: nothing */
        ASSERT_EQ(r2->n_subscribers, 1);

        /* Both registrations are on /test: an injected event reaches each listener once. */
        body = make_pressure_body("/test");
        ASSERT_U64_EQ(registry_inject_split(&fx.reg, "/test", body, "/test", body, RESOURCE_MEMORY, LEVEL_LOW, mono), 2);
        ASSERT_EQ(a.n_delivered, 1);
        ASSERT_EQ(b.n_delivered, 1);
        body_unref(body);

        /* Moving the last listener away releases the old registration. */
        listener_move(&b.l, r2);
        ASSERT_EQ(fx.reg.n_registrations, 1);
        ASSERT_TRUE(fx.reg.registrations == r2);
        ASSERT_EQ(r2->n_subscribers, 2);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);

        listener_detach(&a.l);
        listener_detach(&b.l);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        fixture_done(&fx);
}

/* ---- server level: clients over socketpairs, subscriptions ---- */

typedef struct Peer {
        Client *client;
        Subscription *sub;
        int fd;          /* our end */
        char *buf;       /* 1 MiB, on the heap */
        size_t size;
} Peer;

#define PEER_BUF (1u << 20)

static void peer_open(Fixture *f, Peer *p, int sndbuf, uid_t uid) {
        struct ucred cred = { .pid = getpid(), .uid = uid, .gid = uid };
        int sv[2];

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
        if (sndbuf)
                ASSERT_OK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)));
        *p = (Peer) { .fd = sv[1] };
        ASSERT_OK(client_new(f->server, sv[0], &cred, &p->client));
        p->buf = malloc(PEER_BUF);
        ASSERT_TRUE(p->buf);
}

/* The client goes away with its stream. */
static void peer_leave(Peer *p) {
        p->client = client_free(p->client);
        p->sub = NULL;
}

static void peer_close(Peer *p) {
        if (p->client)
                peer_leave(p);
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

static int64_t ev_int(json_t *ev, size_t i, const char *field) {
        json_t *v = json_object_get(json_array_get(ev, i), field);

        ASSERT_TRUE(json_is_integer(v));
        return json_integer_value(v);
}

static const char *ev_str(json_t *ev, size_t i, const char *field) {
        return json_string_value(json_object_get(json_array_get(ev, i), field));
}

static Subscription *subscribe_req(Fixture *f, Peer *p, Registration *r, const SubscribeRequest *req) {
        ASSERT_OK(subscription_new(p->client, &f->counters, r, req, &p->sub));
        ASSERT_TRUE(p->sub->listener.reg == r);
        subscription_start(p->sub);
        ASSERT_TRUE(p->client->stream == p->sub);
        return p->sub;
}

static Subscription *subscribe(Fixture *f, Peer *p, Registration *r, Level level, uint64_t interval_usec) {
        SubscribeRequest req = { .selector = SELECTOR_LEVEL, .level = level, .min_interval_usec = interval_usec };

        return subscribe_req(f, p, r, &req);
}

static Subscription *subscribe_psi(Fixture *f, Peer *p, Registration *r) {
        SubscribeRequest req = { .selector = SELECTOR_PSI, .psi = r->src.requested };

        return subscribe_req(f, p, r, &req);
}

static void test_fanout_and_release(void) {
        Fixture fx;
        Peer a, b;
        Registration *r;
        Body *body;
        json_t *ev;
        uint64_t mono = now_usec(CLOCK_MONOTONIC);

        fixture_init(&fx);
        peer_open(&fx, &a, 0, 1000);
        peer_open(&fx, &b, 0, 1000);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        subscribe(&fx, &a, r, LEVEL_MEDIUM, 0);
        subscribe(&fx, &b, r, LEVEL_CRITICAL, 0);
        ASSERT_EQ(r->n_subscribers, 2);
        ASSERT_EQ(fx.server->n_streams, 2);

        /* A kernel notification standing for 3, then one injected medium
         * event, which the critical subscriber does not hear. */
        registry_cb->pressure(&r->src, NULL, now_usec(CLOCK_REALTIME), mono, 3);
        body = make_pressure_body("/test");
        ASSERT_U64_EQ(registry_inject_split(&fx.reg, "/test", body, "/test", body, RESOURCE_MEMORY, LEVEL_MEDIUM, mono), 1);
        ASSERT_EQ(body->n_ref, 1); /* written out at once: nobody holds it */
        body_unref(body);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_DELIVERED], 3);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_DROPPED], 0);

        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 2);
        ASSERT_EQ(ev_int(ev, 0, "seq"), 1);
        ASSERT_EQ(ev_int(ev, 0, "count"), 3);
        ASSERT_EQ(ev_int(ev, 0, "missed"), 0);
        ASSERT_EQ(ev_int(ev, 1, "seq"), 2);
        ASSERT_EQ(ev_int(ev, 1, "missed"), 0);
        ASSERT_EQ(ev_int(ev, 1, "count"), 1);
        ASSERT_STREQ(ev_str(ev, 0, "level"), "medium");
        ASSERT_STREQ(ev_str(ev, 0, "kind"), "pressure");
        ASSERT_STREQ(ev_str(ev, 0, "cgroup"), "/test");
        json_decref(ev);
        ev = peer_events(&b);
        ASSERT_EQ(json_array_size(ev), 1);
        ASSERT_EQ(ev_int(ev, 0, "seq"), 1);
        ASSERT_STREQ(ev_str(ev, 0, "level"), "critical");
        json_decref(ev);

        /* The last subscriber leaving removes the registration at once. */
        peer_leave(&a);
        ASSERT_EQ(fx.reg.n_registrations, 1);
        ASSERT_EQ(r->n_subscribers, 1);
        ASSERT_EQ(fx.server->n_streams, 1);
        peer_leave(&b);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        ASSERT_TRUE(fx.reg.registrations == NULL);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);
        ASSERT_EQ(fx.server->n_streams, 0);

        peer_close(&a);
        peer_close(&b);
        fixture_done(&fx);
}

/* The cgroup goes away: every stream ends with "removed", the clients stay connected. */
static void test_removed_stream(void) {
        Fixture fx;
        Peer a, b;
        Registration *r;
        json_t *ev;

        fixture_init(&fx);
        peer_open(&fx, &a, 0, 1000);
        peer_open(&fx, &b, 0, 1000);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        subscribe(&fx, &a, r, LEVEL_LOW, 0);
        subscribe(&fx, &b, r, LEVEL_LOW, 0);
        registry_cb->pressure(&r->src, NULL, now_usec(CLOCK_REALTIME), now_usec(CLOCK_MONOTONIC), 1);

        registry_cb->removed(&r->src);
        a.sub = b.sub = NULL; /* freed with the stream */
        ASSERT_EQ(fx.reg.n_registrations, 0);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_REGISTRATIONS_REMOVED], 1);
        ASSERT_EQ(fx.server->n_streams, 0);
        ASSERT_TRUE(a.client->stream == NULL && !a.client->dead);
        ASSERT_TRUE(b.client->stream == NULL && !b.client->dead);

        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 2);
        ASSERT_STREQ(ev_str(ev, 0, "kind"), "pressure");
        ASSERT_STREQ(ev_str(ev, 1, "kind"), "removed");
        ASSERT_STREQ(ev_str(ev, 1, "cgroup"), "/test");
        ASSERT_EQ(ev_int(ev, 1, "seq"), 2);
        json_decref(ev);
        ev = peer_events(&b);
        ASSERT_EQ(json_array_size(ev), 2);
        ASSERT_STREQ(ev_str(ev, 1, "kind"), "removed");
        json_decref(ev);

        peer_close(&a);
        peer_close(&b);
        fixture_done(&fx);
}

static void test_slow_consumer(void) {
        Fixture fx;
        Peer slow, fast;
        Registration *r;
        Subscription *s;
        json_t *ev;
        uint64_t n = 2000, got = 0, last_seq = 0, missed_seen = 0;

        fixture_init(&fx);
        fx.config->output_buffer_bytes = 4096;
        peer_open(&fx, &slow, 4096, 1000);
        peer_open(&fx, &fast, 0, 1000);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        s = subscribe(&fx, &slow, r, LEVEL_LOW, 0);
        subscribe(&fx, &fast, r, LEVEL_LOW, 0);

        for (uint64_t i = 0; i < n; i++) {
                Body *body = make_pressure_body("/test");

                registry_inject_split(&fx.reg, "/test", body, "/test", body, RESOURCE_MEMORY, LEVEL_LOW, now_usec(CLOCK_MONOTONIC));
                body_unref(body);
                /* The fast client reads as it goes. */
                ev = peer_events(&fast);
                got += json_array_size(ev);
                json_decref(ev);
        }
        ASSERT_U64_EQ(got, n);
        ASSERT_TRUE(s->missed > 0);
        ASSERT_TRUE(fx.counters.value[COUNTER_EVENTS_DROPPED] == s->missed);
        ASSERT_TRUE(slow.client->out.bytes <= 4096);
        ASSERT_TRUE(!slow.client->dead);

        /* Once the slow client reads, the loop writes out its queue... */
        do {
                ev = peer_events(&slow);
                for (size_t i = 0; i < json_array_size(ev); i++)
                        last_seq = (uint64_t) ev_int(ev, i, "seq");
                json_decref(ev);
                ASSERT_OK(event_base_loop(fx.base, EVLOOP_NONBLOCK));
        } while (slow.client->write_armed || !outqueue_is_empty(&slow.client->out));
        ev = peer_events(&slow);
        for (size_t i = 0; i < json_array_size(ev); i++)
                last_seq = (uint64_t) ev_int(ev, i, "seq");
        json_decref(ev);

        /* ...and the next event tells what it missed. */
        {
                Body *body = make_pressure_body("/test");
                uint64_t dropped = s->missed;

                registry_inject_split(&fx.reg, "/test", body, "/test", body, RESOURCE_MEMORY, LEVEL_LOW, now_usec(CLOCK_MONOTONIC));
                body_unref(body);
                ev = peer_events(&slow);
                ASSERT_EQ(json_array_size(ev), 1);
                missed_seen = (uint64_t) ev_int(ev, 0, "missed");
                ASSERT_U64_EQ(missed_seen, dropped);
                ASSERT_U64_EQ(ev_int(ev, 0, "seq"), last_seq + dropped + 1);
                json_decref(ev);
                ASSERT_U64_EQ(s->missed, 0);
        }

        peer_leave(&slow);
        peer_leave(&fast);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        peer_close(&slow);
        peer_close(&fast);
        fixture_done(&fx);
}

static void test_coalesce(void) {
        Fixture fx;
        Peer a;
        Registration *r;
        json_t *ev;

        fixture_init(&fx);
        peer_open(&fx, &a, 0, 1000);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        subscribe(&fx, &a, r, LEVEL_LOW, 50 * USEC_PER_MSEC);

        for (int i = 0; i < 5; i++)
                registry_cb->pressure(&r->src, NULL, now_usec(CLOCK_REALTIME), now_usec(CLOCK_MONOTONIC),
                                      i == 0 ? 1 : 2);
        /* The first goes out at once; the other four wait, merged. */
        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 1);
        ASSERT_EQ(ev_int(ev, 0, "count"), 1);
        json_decref(ev);
        ASSERT_TRUE(a.sub->coalesce != NULL);
        ASSERT_TRUE(a.sub->pending != NULL);
        ASSERT_U64_EQ(a.sub->pending_count, 8);

        /* The timer delivers one event counting the four notifications... */
        while (a.sub->coalesce)
                ASSERT_OK(event_base_loop(fx.base, EVLOOP_ONCE));
        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 1);
        ASSERT_EQ(ev_int(ev, 0, "count"), 8);
        ASSERT_EQ(ev_int(ev, 0, "seq"), 2);
        ASSERT_EQ(ev_int(ev, 0, "missed"), 0);
        json_decref(ev);
        /* ...and then no timer is left. */
        ASSERT_TRUE(a.sub->coalesce == NULL);
        ASSERT_TRUE(a.sub->pending == NULL);
        ASSERT_U64_EQ(a.sub->pending_count, 0);

        peer_close(&a);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        fixture_done(&fx);
}

/* The end of an episode reaches a reader whose queue is full: "cleared"
 * may use a reserve beyond OutputBufferBytes=, and carries what was missed. */
static void test_cleared_reserve(void) {
        Fixture fx;
        Peer slow;
        Registration *r;
        Subscription *s;
        Fake watch;
        json_t *ev;
        uint64_t dropped, last_seq = 0, last_missed = 0;
        size_t queued, small = 0;
        const char *last_kind = NULL;

        fixture_init(&fx);
        fx.config->output_buffer_bytes = 4096;
        fx.config->clear_after_usec = 30 * USEC_PER_MSEC;
        peer_open(&fx, &slow, 4096, 1000);
        r = registration_make(&fx, SOURCE_VMPRESSURE, "/test");
        r->src.vm_level = LEVEL_LOW;
        s = subscribe(&fx, &slow, r, LEVEL_LOW, 0);
        fake_attach(&watch, r, false, _LEVEL_INVALID);

        /* Small events fill the queue until even they no longer fit. */
        while (s->missed < 3) {
                Body *body = test_body_new(json_pack("{s:s}", "kind", "pressure"), 0, 0);
                size_t before = slow.client->out.bytes;

                ASSERT_TRUE(body);
                registry_inject_split(&fx.reg, "/test", body, "/test", body, RESOURCE_MEMORY, LEVEL_LOW, now_usec(CLOCK_MONOTONIC));
                body_unref(body);
                if (before > 0 && slow.client->out.bytes > before)
                        small = slow.client->out.bytes - before;
        }
        ASSERT_TRUE(small > 0);
        dropped = s->missed;
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_DROPPED], dropped);
        queued = slow.client->out.bytes;
        ASSERT_TRUE(queued <= 4096);
        ASSERT_TRUE(r->episode_timer != NULL);

        /* The episode clears after the hold period, from the loop. */
        while (watch.n_cleared == 0)
                ASSERT_OK(event_base_loop(fx.base, EVLOOP_ONCE));
        ASSERT_TRUE(watch.cleared_flags & BODY_NO_COUNT);
        ASSERT_TRUE(r->episode_timer == NULL);
        ASSERT_U64_EQ(s->missed, 0);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_DROPPED], dropped);
        /* It is bigger than the events that no longer fitted: it took the reserve. */
        ASSERT_TRUE(slow.client->out.bytes > queued + small);
        ASSERT_TRUE(slow.client->out.bytes <= 4096 + SUBSCRIPTION_CLEARED_RESERVE_BYTES);

        /* Ordinary events still do not fit. (Handed to the subscription
         * directly: an injected one would start another episode.) */
        {
                Body *body = test_body_new(json_pack("{s:s}", "kind", "pressure"), 0, 0);

                ASSERT_TRUE(body);
                ASSERT_TRUE(!s->listener.ops->deliver(&s->listener, body, 1));
                body_unref(body);
                ASSERT_U64_EQ(s->missed, 1);
                ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_DROPPED], dropped + 1);
        }

        /* The reader catches up: the last thing it gets is "cleared", with the drops. */
        for (bool queue_empty = false;;) {
                ev = peer_events(&slow);
                for (size_t i = 0; i < json_array_size(ev); i++) {
                        ASSERT_TRUE((uint64_t) ev_int(ev, i, "seq") > last_seq);
                        last_seq = (uint64_t) ev_int(ev, i, "seq");
                        last_missed = (uint64_t) ev_int(ev, i, "missed");
                        last_kind = streq_ptr(ev_str(ev, i, "kind"), "cleared") ? "cleared" : "other";
                }
                json_decref(ev);
                if (queue_empty)
                        break;
                ASSERT_OK(event_base_loop(fx.base, EVLOOP_NONBLOCK));
                queue_empty = !slow.client->write_armed && outqueue_is_empty(&slow.client->out);
        }
        ASSERT_EQ(slow.size, 0);
        ASSERT_STREQ(last_kind, "cleared");
        ASSERT_U64_EQ(last_missed, dropped);
        ASSERT_U64_EQ(last_seq, s->seq - 1); /* the last one was dropped */

        listener_detach(&watch.l);
        peer_close(&slow);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        fixture_done(&fx);
}

/* A fast registration's charge: counted once, kept by its uid, moved to
 * another explicit non-root subscriber when that uid leaves, dropped when
 * only root and [Levels] subscribers remain. */
static void test_fast_charge(void) {
        Fixture fx;
        Peer a, b, root, lvl, e;
        Registration *r;
        Fake keep;

        fixture_init(&fx);
        peer_open(&fx, &a, 0, 1000);
        peer_open(&fx, &b, 0, 2000);
        peer_open(&fx, &root, 0, 0);
        peer_open(&fx, &lvl, 0, 3000);
        peer_open(&fx, &e, 0, 2000);

        r = registration_make(&fx, SOURCE_PSI, "/test");
        r->src.used = r->src.requested = (PsiTrigger) { PSI_STALL_SOME, 100000, 1000000 };
        r->fast_charged = true;
        r->fast_uid = 1000;
        subscribe_psi(&fx, &a, r);
        subscribe_psi(&fx, &b, r);
        subscribe_psi(&fx, &root, r);
        subscribe(&fx, &lvl, r, LEVEL_LOW, 0);
        ASSERT_TRUE(a.sub->listener.explicit_psi && a.sub->listener.uid == 1000);
        ASSERT_TRUE(!lvl.sub->listener.explicit_psi && lvl.sub->listener.by_level);
        ASSERT_EQ(registry_fast_count(&fx.reg, 1000), 1);
        ASSERT_EQ(registry_fast_count(&fx.reg, 2000), 0);
        ASSERT_EQ(registry_fast_count(&fx.reg, 0), 0);

        /* Another subscriber leaving changes nothing. */
        peer_leave(&root);
        ASSERT_TRUE(r->fast_charged);
        ASSERT_EQ(r->fast_uid, 1000);

        /* The creator leaves: the charge moves to the remaining explicit
         * non-root subscriber, not to the [Levels] one. */
        peer_leave(&a);
        ASSERT_TRUE(r->fast_charged);
        ASSERT_EQ(r->fast_uid, 2000);
        ASSERT_EQ(registry_fast_count(&fx.reg, 1000), 0);
        ASSERT_EQ(registry_fast_count(&fx.reg, 2000), 1);

        /* It stays with its uid while any peer of that uid is left. */
        subscribe_psi(&fx, &e, r);
        peer_leave(&b);
        ASSERT_TRUE(r->fast_charged);
        ASSERT_EQ(r->fast_uid, 2000);

        /* Only a [Levels] subscriber left: nobody is charged. */
        peer_leave(&e);
        ASSERT_TRUE(!r->fast_charged);
        ASSERT_EQ(registry_fast_count(&fx.reg, 2000), 0);
        ASSERT_EQ(fx.reg.n_registrations, 1);

        /* A removed registration counts for nobody, and loses its charge
         * when a listener leaves it. (A second listener keeps it alive.) */
        fake_attach(&keep, r, false, _LEVEL_INVALID);
        r->fast_charged = true;
        r->fast_uid = 1000;
        r->removed = true;
        ASSERT_EQ(registry_fast_count(&fx.reg, 1000), 0);
        peer_leave(&lvl);
        ASSERT_TRUE(!r->fast_charged);
        ASSERT_EQ(fx.reg.n_registrations, 1);
        listener_detach(&keep.l);
        /* A detached listener has no registration to recharge or release. */
        ASSERT_TRUE(keep.l.reg == NULL);
        listener_detach(&keep.l);

        ASSERT_EQ(fx.reg.n_registrations, 0);
        peer_close(&a);
        peer_close(&b);
        peer_close(&root);
        peer_close(&lvl);
        peer_close(&e);
        fixture_done(&fx);
}

/*
 * The directory that was checked is the one registered: a cgroup renamed
 * and replaced by another of the same path between the caller's check
 * (its directory fd) and the registration is not what gets registered,
 * and a registration on one of the two is not shared with a request
 * checked on the other.
 */
static void test_registry_checked_directory(void) {
        RegistrationKey key = { .type = SOURCE_MEMORY_EVENTS, .cgroup = "/mem" };
        SourceFailure e = {};
        Fixture fx;
        Registration *r, *r_new, *again;
        char path[160], moved[128];
        struct stat checked, replaced;
        int dirfd, newfd;

        fixture_init(&fx);
        test_write_file_at(fx.root, "/mem/memory.events", "low 0\nhigh 7\nmax 0\noom 0\noom_kill 0\n");
        snprintf(path, sizeof(path), "%s/mem", fx.root);
        dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dirfd >= 0);
        ASSERT_OK(fstat(dirfd, &checked));

        /* Between the check and the registration: /mem is another directory. */
        snprintf(moved, sizeof(moved), "%s/mem-checked", fx.root);
        ASSERT_OK(rename(path, moved));
        ASSERT_OK(mkdir(path, 0755));
        test_write_file_at(fx.root, "/mem/memory.events", "low 0\nhigh 1\nmax 0\noom 0\noom_kill 0\n");
        newfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(newfd >= 0);
        ASSERT_OK(fstat(newfd, &replaced));
        ASSERT_TRUE(checked.st_ino != replaced.st_ino);

        ASSERT_OK(registration_acquire(&fx.reg, &key, dirfd, &r, &e));
        ASSERT_U64_EQ(r->src.dir_ino, checked.st_ino);
        ASSERT_U64_EQ(r->src.last_events.value[MEMORY_EVENT_HIGH], 7);
        ASSERT_TRUE(r->src.aux_fd >= 0);

        /* The same path checked on the replacement: a registration of its own. */
        ASSERT_OK(registration_acquire(&fx.reg, &key, newfd, &r_new, &e));
        ASSERT_TRUE(r_new != r);
        ASSERT_U64_EQ(r_new->src.dir_ino, replaced.st_ino);
        ASSERT_U64_EQ(r_new->src.last_events.value[MEMORY_EVENT_HIGH], 1);
        ASSERT_EQ(fx.reg.n_registrations, 2);
        /* Checked on the first again: shares the first. */
        ASSERT_OK(registration_acquire(&fx.reg, &key, dirfd, &again, &e));
        ASSERT_TRUE(again == r);
        ASSERT_EQ(fx.reg.n_registrations, 2);

        registration_release(r);
        registration_release(r_new);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        close(dirfd);
        close(newfd);
        snprintf(path, sizeof(path), "%s/memory.events", moved);
        ASSERT_OK(unlink(path));
        ASSERT_OK(rmdir(moved));
        fixture_done(&fx);
}

/*
 * A kernel event's stall totals come with it: the episode takes its total
 * from the sample the source read (this registration has no file to read
 * again), and the event carries the sample's averages.
 */
static void test_pressure_sample(void) {
        PsiStats st = { .some = { .avg10 = 1812, .total_us = 123456 }, .has_some = true, .has_full = true,
                        .full = { .total_us = 654321 } };
        Fixture fx;
        Peer a;
        Registration *r;
        json_t *ev;

        fixture_init(&fx);
        peer_open(&fx, &a, 0, 1000);
        r = registration_make(&fx, SOURCE_PSI, "/test");
        subscribe(&fx, &a, r, LEVEL_LOW, 0);
        ASSERT_TRUE(r->src.fd < 0);

        registry_cb->pressure(&r->src, &st, now_usec(CLOCK_REALTIME), now_usec(CLOCK_MONOTONIC), 1);
        ASSERT_TRUE(r->episode.active);
        ASSERT_TRUE(r->episode.have_sample);
        ASSERT_U64_EQ(r->episode.sample_total_us, 123456);
        /* None could be read: the event goes out without averages. */
        registry_cb->pressure(&r->src, NULL, now_usec(CLOCK_REALTIME), now_usec(CLOCK_MONOTONIC), 1);

        ev = peer_events(&a);
        ASSERT_EQ(json_array_size(ev), 2);
        ASSERT_STREQ(ev_str(ev, 0, "kind"), "pressure");
        ASSERT_TRUE(json_object_get(json_array_get(ev, 0), "psi") != NULL);
        ASSERT_TRUE(json_object_get(json_array_get(ev, 1), "psi") == NULL);
        json_decref(ev);

        peer_close(&a);
        ASSERT_EQ(fx.reg.n_registrations, 0);
        fixture_done(&fx);
}

int main(void) {
        test_registry_fanout_and_release();
        test_registry_inject_levels();
        test_registry_removed();
        test_registry_source();
        test_registry_checked_directory();
        test_registry_move();
        test_fanout_and_release();
        test_removed_stream();
        test_pressure_sample();
        test_slow_consumer();
        test_coalesce();
        test_cleared_reserve();
        test_fast_charge();
        return 0;
}
