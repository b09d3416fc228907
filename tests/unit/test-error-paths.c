/* SPDX-License-Identifier: MIT */
/*
 * The daemon's error paths, each forced with fail-inject.h, judged by what
 * a peer of the varlink socket sees.
 *
 * Out of memory: GetStatus, GetInfo, Inject and Subscribe are called
 * through methods_dispatch() with the n-th allocation failing, for every n
 * until the call goes through without a failure. Every answer must be a
 * complete reply or an error (or the connection closed); never an empty
 * or partial success. A failed Subscribe leaves no subscription nor
 * registration behind.
 *
 * A refused event_add(): a client whose output must wait for EV_WRITE, or
 * whose reading must resume, or whose timer must be armed, is closed (the
 * peer reads EOF) instead of being left stalled. A coalescing timer that
 * cannot be armed counts its event as missed; an episode timer that cannot
 * be armed is logged and the registration goes on delivering.
 *
 * A refused event_new(): a kernel notification whose report cannot wait
 * for the end of the loop's turn is reported at once.
 *
 * A refused open(): a level stream's headroom is read from /proc/meminfo
 * by its path when the copy kept open cannot be opened.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "client.h"
#include "event.h"
#include "fail-inject.h"
#include "log.h"
#include "methods.h"
#include "registration-episode.h"
#include "registration.h"
#include "source-common.h"
#include "status.h"
#include "subscription.h"
#include "test-capture.h"
#include "test-registry-fixture.h"
#include "test-body.h"
#include "tests.h"
#include "util.h"

#define MEMORY_EVENTS_ZERO "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"
#define CALL_DESCRIPTION "{\"method\":\"org.varlink.service.GetInterfaceDescription\"," \
                         "\"parameters\":{\"interface\":\"io.pressured\"}}"

typedef struct Fixture {
        char root[64];
        REGISTRY_FIXTURE_FIELDS;
        StatusContext status;
        Methods methods;
        ClientServer *server;
} Fixture;

typedef struct Peer {
        Client *client;  /* NULL once the server freed it */
        int fd;          /* our end */
        bool eof;
        size_t size;
        char buf[1 << 16];
} Peer;

/* What the registry installs in the sources it opens: static in registration.c. */
static const SourceCallbacks *registry_cb;

/* How many registrations a GetStatus reply must list. */
static size_t status_registrations;

/* The root of the cgroup namespace of the peers peer_open() makes (NULL: the daemon's own). */
static const char *peer_root;

/* The cgroup a "subscribed" answer must name: /x as the peers see it. */
static const char *subscribed_cgroup = "/x";

/* A fake cgroup2 tree with /x/memory.events, and the callbacks of a registration on it. */
static void fixture_tree(Fixture *f) {
        RegistrationKey key = { .type = SOURCE_MEMORY_EVENTS, .cgroup = "/x" };
        SourceFailure e = {};
        Registration *r;
        char path[128];

        snprintf(f->root, sizeof(f->root), "/tmp/test-error-paths-XXXXXX");
        ASSERT_TRUE(mkdtemp(f->root));
        snprintf(path, sizeof(path), "%s/x", f->root);
        ASSERT_OK(mkdir(path, 0755));
        test_write_file_at(f->root, "/x/memory.events", MEMORY_EVENTS_ZERO);
        ASSERT_OK(hierarchy_open(&f->v2, f->root));

        ASSERT_OK(registration_acquire(&f->reg, &key, -1, &r, &e));
        registry_cb = r->src.cb;
        registration_release(r);
        ASSERT_EQ(f->reg.n_registrations, 0);
}

/* A varlink server whose clients are answered by methods_dispatch(). */
static void fixture_server(Fixture *f) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(lfd >= 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/varlink", f->root);
        ASSERT_OK(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)));
        ASSERT_OK(listen(lfd, 1));
        ASSERT_OK(client_server_new(f->base, f->config, lfd, methods_dispatch, &f->methods, &f->server));
        f->status.clients = f->server;
}

static void fixture_init(Fixture *f) {
        *f = (Fixture) {};
        fail_inject_reset();
        registry_fixture_init(f);
        fixture_tree(f);
        f->status = (StatusContext) {
                .config = f->config, .registry = &f->reg, .counters = &f->counters,
                .v2 = &f->v2, .v1 = &f->v1, .start_monotonic = now_usec(CLOCK_MONOTONIC),
        };
        f->methods = (Methods) {
                .config = f->config, .registry = &f->reg, .v2 = &f->v2, .v1 = &f->v1,
                .counters = &f->counters, .status = &f->status,
        };
        fixture_server(f);
}

static void fixture_done(Fixture *f) {
        char path[128];

        f->server = client_server_free(f->server);
        registry_fixture_done(f);
        snprintf(path, sizeof(path), "%s/x/memory.events", f->root);
        ASSERT_OK(unlink(path));
        snprintf(path, sizeof(path), "%s/x", f->root);
        ASSERT_OK(rmdir(path));
        snprintf(path, sizeof(path), "%s/varlink", f->root);
        ASSERT_OK(unlink(path));
        ASSERT_OK(rmdir(f->root));
}

/* ---- peers ---- */

static void peer_open(Fixture *f, Peer *p, int sndbuf) {
        struct ucred cred = { .pid = getpid(), .uid = 0, .gid = 0 };
        int sv[2];

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
        if (sndbuf)
                ASSERT_OK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)));
        p->client = NULL;
        p->fd = sv[1];
        p->eof = false;
        p->size = 0;
        ASSERT_OK(client_new(f->server, sv[0], &cred, &p->client));
        if (peer_root) {
                p->client->view.v2_root = strdup(peer_root);
                ASSERT_TRUE(p->client->view.v2_root);
        }
}

static void peer_close(Peer *p) {
        p->client = client_free(p->client);
        close(p->fd);
}

static void peer_send(Peer *p, const char *msg) {
        ASSERT_EQ(write(p->fd, msg, strlen(msg) + 1), (ssize_t) strlen(msg) + 1);
}

/* Read what is there; note the end of the stream. */
static void peer_read(Peer *p) {
        ssize_t n;

        ASSERT_TRUE(p->size < sizeof(p->buf));
        while ((n = read(p->fd, p->buf + p->size, sizeof(p->buf) - p->size)) > 0) {
                p->size += (size_t) n;
                ASSERT_TRUE(p->size < sizeof(p->buf));
        }
        if (n == 0)
                p->eof = true;
        else
                ASSERT_TRUE(errno == EAGAIN);
}

/* The next complete message read, or NULL. */
static json_t *peer_next(Peer *p) {
        char *nul = memchr(p->buf, 0, p->size);
        size_t len;
        json_t *msg;

        if (!nul)
                return NULL;
        len = (size_t) (nul - p->buf);
        msg = json_loadb(p->buf, len, 0, NULL);
        if (!msg)
                TEST_FAIL("the peer read a message that is not JSON: %.*s", (int) len, p->buf);
        memmove(p->buf, nul + 1, p->size - len - 1);
        p->size -= len + 1;
        return msg;
}

static bool client_listed(const Fixture *f, const Client *c) {
        for (const Client *i = f->server->clients; i; i = i->clients_next)
                if (i == c)
                        return true;
        return false;
}

/* One turn of the loop without waiting (killed clients are freed there), then read. */
static void turn(Fixture *f, Peer *p) {
        ASSERT_OK(event_base_loop(f->base, EVLOOP_NONBLOCK));
        if (p->client && !client_listed(f, p->client))
                p->client = NULL;
        peer_read(p);
}

/* Turn the loop until @done(p), for five seconds at most; returns @done(p). */
static bool turn_until(Fixture *f, Peer *p, bool (*done)(const Peer *p)) {
        for (int i = 0; i < 5000 && !done(p); i++) {
                turn(f, p);
                (void) poll(NULL, 0, 1);
        }
        return done(p);
}

static bool peer_closed(const Peer *p) {
        return p->client == NULL && p->eof;
}

/* ---- what a complete answer holds ---- */

static void expect_member(json_t *o, const char *key, json_type type) {
        json_t *v = json_object_get(o, key);
        bool ok = v && (json_typeof(v) == type || (type == JSON_TRUE && json_is_boolean(v)));

        if (!ok) {
                char *s = json_dumps(o, JSON_COMPACT);

                TEST_FAIL("\"%s\" is missing or of the wrong type in %s", key, s ? s : "?");
        }
}

static void check_status(json_t *p) {
        json_t *counters, *cgroup, *fast;

        expect_member(p, "version", JSON_STRING);
        expect_member(p, "uptime_us", JSON_INTEGER);
        expect_member(p, "clients", JSON_INTEGER);
        expect_member(p, "subscriptions", JSON_INTEGER);
        expect_member(p, "proxied_clients", JSON_INTEGER);
        expect_member(p, "registrations", JSON_ARRAY);
        expect_member(p, "cgroup", JSON_OBJECT);
        expect_member(p, "counters", JSON_OBJECT);
        cgroup = json_object_get(p, "cgroup");
        expect_member(cgroup, "v2_root", JSON_STRING);
        expect_member(cgroup, "recursive_protection", JSON_TRUE);
        ASSERT_EQ(json_array_size(json_object_get(p, "registrations")), status_registrations);
        for (size_t i = 0; i < status_registrations; i++) {
                json_t *r = json_array_get(json_object_get(p, "registrations"), i);

                expect_member(r, "cgroup", JSON_STRING);
                expect_member(r, "source", JSON_STRING);
                expect_member(r, "trigger", JSON_OBJECT);
                expect_member(r, "subscribers", JSON_INTEGER);
                expect_member(r, "proxied", JSON_ARRAY);
        }
        counters = json_object_get(p, "counters");
        for (Counter c = 0; c < _COUNTER_MAX; c++)
                expect_member(counters, counter_info(c)->name, JSON_INTEGER);
        fast = json_object_get(p, "fast_triggers");
        if (fast) {
                expect_member(fast, "max_per_user", JSON_INTEGER);
                expect_member(fast, "users", JSON_ARRAY);
        }
}

static void check_info(json_t *p) {
        expect_member(p, "vendor", JSON_STRING);
        expect_member(p, "product", JSON_STRING);
        expect_member(p, "version", JSON_STRING);
        expect_member(p, "url", JSON_STRING);
        expect_member(p, "interfaces", JSON_ARRAY);
        ASSERT_EQ(json_array_size(json_object_get(p, "interfaces")), 2);
}

static void check_inject(json_t *p) {
        expect_member(p, "delivered", JSON_INTEGER);
}

static void check_subscribed(json_t *p) {
        json_t *ev, *state;

        expect_member(p, "event", JSON_OBJECT);
        ev = json_object_get(p, "event");
        ASSERT_STREQ(json_string_value(json_object_get(ev, "kind")), "subscribed");
        ASSERT_STREQ(json_string_value(json_object_get(ev, "cgroup")), subscribed_cgroup);
        ASSERT_STREQ(json_string_value(json_object_get(ev, "source")), "memory_events");
        expect_member(ev, "trigger", JSON_OBJECT);
        expect_member(ev, "adjusted", JSON_TRUE);
        expect_member(ev, "state", JSON_OBJECT);
        state = json_object_get(ev, "state");
        expect_member(state, "counters", JSON_OBJECT);
        expect_member(json_object_get(state, "counters"), "oom_kill", JSON_INTEGER);
}

/* ---- out of memory in the methods ---- */

typedef struct Method {
        const char *call;
        bool stream;                    /* answers with "continues" and starts a stream */
        void (*check)(json_t *params);  /* a complete success */
} Method;

/* Dispatch @call to @p's client with the @n-th call of @kind failing; whether one failed. */
static bool dispatch_failing(Fixture *f, Peer *p, const char *call, FailKind kind, unsigned n) {
        VarlinkCall vc = {};
        bool injected;

        ASSERT_OK(varlink_call_parse(call, strlen(call), &vc));
        fail_inject_reset();
        fail_inject_after(kind, n);
        methods_dispatch(p->client, &vc, &f->methods);
        injected = fail_inject_fired(kind) > 0;
        fail_inject_reset();
        varlink_call_done(&vc);
        return injected;
}

/* What the peer got is a complete success (true), or an error or the end of the connection (false). */
static bool judge_answer(Fixture *f, Peer *p, const Method *m) {
        json_t *msg, *err;
        bool success;

        turn(f, p);
        msg = peer_next(p);
        if (!msg) {
                /* No answer: only acceptable if the connection was closed. */
                ASSERT_TRUE(peer_closed(p));
                return false;
        }
        ASSERT_TRUE(peer_next(p) == NULL);
        err = json_object_get(msg, "error");
        success = !err;
        if (err && !streq_ptr(json_string_value(err), "io.pressured.InternalError")) {
                char *text = json_dumps(msg, JSON_COMPACT);

                TEST_FAIL("%s answered %s", m->call, text ? text : "?");
        }
        if (success) {
                ASSERT_TRUE(json_is_true(json_object_get(msg, "continues")) == m->stream);
                m->check(json_object_get(msg, "parameters"));
        }
        json_decref(msg);
        return success;
}

/* After a failed Subscribe nothing of it is left; after a successful one, the stream runs. */
static void check_stream_left(Fixture *f, Peer *p, bool success) {
        if (success) {
                ASSERT_TRUE(p->client && p->client->stream != NULL);
                ASSERT_EQ(f->server->n_streams, 1);
                ASSERT_EQ(f->reg.n_registrations, 1);
                return;
        }
        ASSERT_TRUE(!p->client || p->client->stream == NULL);
        ASSERT_EQ(f->server->n_streams, 0);
        ASSERT_EQ(f->reg.n_registrations, 0);
}

/* Fail the n-th call of @kind for n = 1, 2, ... until @m runs without a failure. */
static unsigned walk_failures(Fixture *f, const Method *m, FailKind kind) {
        unsigned registrations = f->reg.n_registrations;
        Peer p;

        for (unsigned n = 1;; n++) {
                bool injected, success;

                peer_open(f, &p, 0);
                injected = dispatch_failing(f, &p, m->call, kind, n);
                success = judge_answer(f, &p, m);
                if (m->stream)
                        check_stream_left(f, &p, success);
                peer_close(&p);
                ASSERT_EQ(f->reg.n_registrations, registrations);
                if (!injected) {
                        ASSERT_TRUE(success);
                        return n;
                }
        }
}

static const Method get_status = { "{\"method\":\"io.pressured.GetStatus\"}", false, check_status };
static const Method get_info = { "{\"method\":\"org.varlink.service.GetInfo\"}", false, check_info };
static const Method inject = {
        "{\"method\":\"io.pressured.Inject\",\"parameters\":{\"cgroup\":\"/x\",\"level\":\"low\"}}",
        false, check_inject,
};
static const Method subscribe = {
        "{\"method\":\"io.pressured.Subscribe\",\"more\":true,"
        "\"parameters\":{\"memory_events\":true,\"cgroup\":\"/x\"}}",
        true, check_subscribed,
};

static void test_methods_out_of_memory(void) {
        const Method *all[] = { &get_status, &get_info, &inject };
        Fixture fx;

        fixture_init(&fx);
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                ASSERT_TRUE(walk_failures(&fx, all[i], FAIL_ALLOC) > 1);
        fixture_done(&fx);
}

/* GetStatus lists a live registration completely or fails. */
static void test_status_with_registration_out_of_memory(void) {
        Fixture fx;
        Peer sub;

        fixture_init(&fx);
        peer_open(&fx, &sub, 0);
        ASSERT_TRUE(!dispatch_failing(&fx, &sub, subscribe.call, FAIL_ALLOC, 0));
        ASSERT_TRUE(judge_answer(&fx, &sub, &subscribe));
        status_registrations = 1;
        ASSERT_TRUE(walk_failures(&fx, &get_status, FAIL_ALLOC) > 1);
        status_registrations = 0;
        peer_close(&sub);
        fixture_done(&fx);
}

static void test_subscribe_failures(void) {
        Fixture fx;

        fixture_init(&fx);
        ASSERT_TRUE(walk_failures(&fx, &subscribe, FAIL_ALLOC) > 1);
        /* The memory.events source watches its file with an event of its own. */
        ASSERT_TRUE(walk_failures(&fx, &subscribe, FAIL_EVENT_ADD) > 1);
        fixture_done(&fx);
}

/* ---- a refused event_add() ---- */

static bool peer_has_message(const Peer *p) {
        return memchr(p->buf, 0, p->size) != NULL;
}

/* The peer's next message is the event of a stream; returns its "event" (owned). */
static json_t *next_event(Fixture *f, Peer *p) {
        json_t *msg, *ev;

        ASSERT_TRUE(turn_until(f, p, peer_has_message));
        msg = peer_next(p);
        ASSERT_TRUE(json_is_true(json_object_get(msg, "continues")));
        ev = json_incref(json_object_get(json_object_get(msg, "parameters"), "event"));
        ASSERT_TRUE(json_is_object(ev));
        json_decref(msg);
        return ev;
}

static int64_t ev_int(json_t *ev, const char *field) {
        json_t *v = json_object_get(ev, field);

        ASSERT_TRUE(json_is_integer(v));
        return json_integer_value(v);
}

/* An answer bigger than the socket buffer must wait for EV_WRITE; the watcher is refused. */
static void test_write_watcher_refused(void) {
        Fixture fx;
        Peer p;

        fixture_init(&fx);
        peer_open(&fx, &p, 4096);
        peer_send(&p, CALL_DESCRIPTION);
        fail_inject_reset();
        fail_inject_after(FAIL_EVENT_ADD, 1);
        turn(&fx, &p);
        ASSERT_EQ(fail_inject_calls(FAIL_EVENT_ADD), 1);
        ASSERT_EQ(fail_inject_fired(FAIL_EVENT_ADD), 1);
        ASSERT_TRUE(!p.client || p.client->dead);
        /* Closed, not left with a queue nothing will ever write out. */
        ASSERT_TRUE(turn_until(&fx, &p, peer_closed));
        /* What failed was the write watcher: the answer had not all gone out. */
        ASSERT_TRUE(p.size > 0 && !peer_has_message(&p));
        peer_close(&p);
        fixture_done(&fx);
}

/* A client over OutputBufferBytes= stops being read; reading cannot resume. */
static void test_resume_reading_refused(void) {
        Fixture fx;
        Peer p;
        json_t *msg;

        fixture_init(&fx);
        fx.config->output_buffer_bytes = 1024;
        peer_open(&fx, &p, 4096);
        peer_send(&p, CALL_DESCRIPTION);
        peer_send(&p, CALL_DESCRIPTION);
        ASSERT_OK(event_base_loop(fx.base, EVLOOP_NONBLOCK));
        ASSERT_TRUE(p.client->read_paused && p.client->write_armed);

        /* The peer reads; once the answer is out, reading resumes: refused. */
        fail_inject_reset();
        fail_inject_after(FAIL_EVENT_ADD, 1);
        ASSERT_TRUE(turn_until(&fx, &p, peer_closed));
        ASSERT_EQ(fail_inject_fired(FAIL_EVENT_ADD), 1);
        fail_inject_reset();
        /* The first call was answered in full, the second never read. */
        msg = peer_next(&p);
        ASSERT_TRUE(msg && json_is_string(json_object_get(json_object_get(msg, "parameters"), "description")));
        json_decref(msg);
        ASSERT_TRUE(peer_next(&p) == NULL);
        peer_close(&p);
        fixture_done(&fx);
}

/* After a call the idle timer is re-armed; refused, the client is closed rather than never timed out. */
static void test_idle_timer_refused(void) {
        Fixture fx;
        Peer p;
        json_t *msg;

        fixture_init(&fx);
        peer_open(&fx, &p, 0);
        peer_send(&p, get_info.call);
        fail_inject_reset();
        fail_inject_after(FAIL_EVENT_ADD, 1);
        ASSERT_TRUE(turn_until(&fx, &p, peer_closed));
        ASSERT_EQ(fail_inject_fired(FAIL_EVENT_ADD), 1);
        fail_inject_reset();
        msg = peer_next(&p);
        ASSERT_TRUE(msg);
        check_info(json_object_get(msg, "parameters"));
        json_decref(msg);
        peer_close(&p);
        fixture_done(&fx);
}

static bool deliver(Subscription *s, uint64_t count) {
        Body *body = test_body_new(json_pack("{s:s, s:s}", "kind", "memory_events", "cgroup", "/x"), 0, 0);
        bool delivered;

        ASSERT_TRUE(body);
        delivered = s->listener.ops->deliver(&s->listener, body, count);
        body_unref(body);
        return delivered;
}

/* An event inside min_interval_ms waits for a timer; refused, the event counts as missed. */
static void test_coalesce_timer_refused(void) {
        static const Method sub = {
                "{\"method\":\"io.pressured.Subscribe\",\"more\":true,"
                "\"parameters\":{\"memory_events\":true,\"cgroup\":\"/x\",\"min_interval_ms\":300}}",
                true, check_subscribed,
        };
        Fixture fx;
        Subscription *s;
        Peer p;
        json_t *ev;

        fixture_init(&fx);
        peer_open(&fx, &p, 0);
        ASSERT_TRUE(!dispatch_failing(&fx, &p, sub.call, FAIL_ALLOC, 0));
        ASSERT_TRUE(judge_answer(&fx, &p, &sub));
        s = p.client->stream;
        ASSERT_TRUE(deliver(s, 1));
        ev = next_event(&fx, &p);
        ASSERT_EQ(ev_int(ev, "seq"), 1);
        json_decref(ev);

        fail_inject_reset();
        fail_inject_after(FAIL_EVENT_ADD, 1);
        ASSERT_TRUE(!deliver(s, 3));
        ASSERT_EQ(fail_inject_fired(FAIL_EVENT_ADD), 1);
        fail_inject_reset();
        ASSERT_TRUE(s->pending == NULL);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_DROPPED], 1);

        /* The next one is held and goes out with the timer, telling what was missed. */
        ASSERT_TRUE(deliver(s, 1));
        ev = next_event(&fx, &p);
        ASSERT_EQ(ev_int(ev, "seq"), 2);
        ASSERT_EQ(ev_int(ev, "count"), 1);
        ASSERT_EQ(ev_int(ev, "missed"), 3);
        json_decref(ev);
        peer_close(&p);
        fixture_done(&fx);
}

/* A vmpressure registration made in memory, like test-registration's: no kernel file. */
static Registration *registration_make(Fixture *f, const char *cgroup) {
        Registration *r = calloc(1, sizeof(*r));

        ASSERT_TRUE(r);
        r->registry = &f->reg;
        r->src = (Source) {
                .env = &f->env,
                .cb = registry_cb,
                .type = SOURCE_VMPRESSURE,
                .cgroup = strdup(cgroup),
                .vm_level = LEVEL_LOW,
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

static uint64_t inject_low(Fixture *f, const char *cgroup) {
        Body *body = test_body_new(event_pressure_new(cgroup, "inject", RESOURCE_MEMORY, NULL, 1, now_usec(CLOCK_MONOTONIC)), 0, 0);
        uint64_t n;

        ASSERT_TRUE(body);
        n = registry_inject_split(&f->reg, cgroup, body, cgroup, body, RESOURCE_MEMORY, LEVEL_LOW, now_usec(CLOCK_MONOTONIC));
        body_unref(body);
        return n;
}

/* The first event of an episode arms its timer; refused, that is logged and the registration goes on. */
static void test_episode_timer_refused(void) {
        SubscribeRequest req = { .selector = SELECTOR_LEVEL, .level = LEVEL_LOW };
        Fixture fx;
        Registration *r;
        Subscription *s;
        char path[64];
        const char *log;
        json_t *ev;
        Peer p;
        int saved;

        fixture_init(&fx);
        fx.config->clear_after_usec = 30 * USEC_PER_MSEC;
        peer_open(&fx, &p, 0);
        r = registration_make(&fx, "/test");
        ASSERT_OK(subscription_new(p.client, &fx.counters, r, &req, &s));
        subscription_start(s);

        log_set_max_level(LOG_WARNING);
        saved = stderr_capture(path);
        fail_inject_reset();
        fail_inject_after(FAIL_EVENT_ADD, 1);
        ASSERT_U64_EQ(inject_low(&fx, "/test"), 1);
        ASSERT_EQ(fail_inject_fired(FAIL_EVENT_ADD), 1);
        fail_inject_reset();
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        ASSERT_TRUE(strstr(log, "Failed to arm the episode timer of /test") != NULL);
        ASSERT_TRUE(r->episode.active);
        ASSERT_TRUE(!r->episode_timer || !event_pending(r->episode_timer, EV_TIMEOUT, NULL));
        ev = next_event(&fx, &p);
        ASSERT_STREQ(json_string_value(json_object_get(ev, "kind")), "pressure");
        ASSERT_EQ(ev_int(ev, "seq"), 1);
        json_decref(ev);

        /* The next event arms the timer, and the episode ends as it should. */
        ASSERT_U64_EQ(inject_low(&fx, "/test"), 1);
        ASSERT_TRUE(r->episode_timer && event_pending(r->episode_timer, EV_TIMEOUT, NULL));
        ev = next_event(&fx, &p);
        ASSERT_EQ(ev_int(ev, "seq"), 2);
        json_decref(ev);
        ev = next_event(&fx, &p);
        ASSERT_STREQ(json_string_value(json_object_get(ev, "kind")), "cleared");
        json_decref(ev);
        peer_close(&p);
        fixture_done(&fx);
}

/*
 * A kernel notification is reported at the end of the loop's turn, by an
 * event made at the first one. Without that event (out of memory) it is
 * reported at once, count and all, and the next notification makes it.
 */
static void test_report_event_refused(void) {
        SubscribeRequest req = { .selector = SELECTOR_LEVEL, .level = LEVEL_LOW };
        Fixture fx;
        Registration *r;
        Subscription *s;
        json_t *ev;
        Peer p;

        fixture_init(&fx);
        peer_open(&fx, &p, 0);
        r = registration_make(&fx, "/test");
        ASSERT_OK(subscription_new(p.client, &fx.counters, r, &req, &s));
        subscription_start(s);

        fail_inject_reset();
        fail_inject_after(FAIL_EVENT_NEW, 1);
        source_notify(&r->src, 2);
        ASSERT_EQ(fail_inject_fired(FAIL_EVENT_NEW), 1);
        fail_inject_reset();
        ASSERT_TRUE(r->src.report == NULL);
        ASSERT_U64_EQ(r->src.woke, 0); /* reported already, not waiting for the turn */
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_READ], 1);
        ev = next_event(&fx, &p);
        ASSERT_STREQ(json_string_value(json_object_get(ev, "kind")), "pressure");
        ASSERT_EQ(ev_int(ev, "seq"), 1);
        ASSERT_EQ(ev_int(ev, "count"), 2);
        json_decref(ev);

        /* Next time the event is made, and the report waits for the turn. */
        source_notify(&r->src, 1);
        ASSERT_TRUE(r->src.report != NULL);
        ASSERT_U64_EQ(r->src.woke, 1);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_READ], 1);
        ev = next_event(&fx, &p);
        ASSERT_EQ(ev_int(ev, "seq"), 2);
        ASSERT_EQ(ev_int(ev, "count"), 1);
        json_decref(ev);
        ASSERT_U64_EQ(r->src.woke, 0);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_READ], 2);
        peer_close(&p);
        fixture_done(&fx);
}

/*
 * Level streams keep /proc/meminfo open for their headroom. When it cannot
 * be opened (out of file descriptors), the headroom is read by the path as
 * GetHeadroom reads it, and the next level event opens it again.
 */
static void test_meminfo_open_refused(void) {
        HeadroomHint hint = HEADROOM_HINT_NONE;
        int fd = -1;
        LevelTarget t = { .cgroup = "/", .real_v2 = "/", .real_v1 = "/", .hint = &hint, .meminfo_fd = &fd };
        uint64_t headroom = 0, target = 0;
        Fixture fx;
        char path[128];
        unsigned known;

        fixture_init(&fx);
        test_write_file_at(fx.root, "/cgroup.controllers", "memory\n"); /* a root that has the controller */
        fail_inject_reset();
        fail_inject_after(FAIL_OPEN, 1);
        known = methods_level_headroom(&fx.methods, &t, STREAM_LEVEL_NORMAL, &headroom, &target);
        ASSERT_EQ(fail_inject_fired(FAIL_OPEN), 1);
        fail_inject_reset();
        ASSERT_EQ(fd, -1);
        ASSERT_TRUE(known & 1u); /* MemAvailable for the whole system, all the same */
        ASSERT_TRUE(headroom > 0);

        headroom = 0;
        known = methods_level_headroom(&fx.methods, &t, STREAM_LEVEL_NORMAL, &headroom, &target);
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(known & 1u);
        ASSERT_TRUE(headroom > 0);
        ASSERT_OK(close(fd));
        snprintf(path, sizeof(path), "%s/cgroup.controllers", fx.root);
        ASSERT_OK(unlink(path));
        fixture_done(&fx);
}

/*
 * A peer in a cgroup namespace rooted at /x: every allocation of its
 * translations may fail, and an event it cannot have copied is dropped
 * and counted like one its queue could not take.
 */
static void test_namespaced_peer(void) {
        static const Method sub = {
                "{\"method\":\"io.pressured.Subscribe\",\"more\":true,"
                "\"parameters\":{\"memory_events\":true,\"cgroup\":\"/\"}}",
                true, check_subscribed,
        };
        static const Method inj = {
                "{\"method\":\"io.pressured.Inject\",\"parameters\":{\"level\":\"low\"}}", false, check_inject,
        };
        Fixture fx;
        Subscription *s;
        Body *body;
        Peer p;
        json_t *ev;

        fixture_init(&fx);
        peer_root = "/x";
        subscribed_cgroup = "/";
        ASSERT_TRUE(walk_failures(&fx, &sub, FAIL_ALLOC) > 1);
        ASSERT_TRUE(walk_failures(&fx, &inj, FAIL_ALLOC) > 1);
        ASSERT_TRUE(walk_failures(&fx, &get_status, FAIL_ALLOC) > 1);

        peer_open(&fx, &p, 0);
        ASSERT_TRUE(!dispatch_failing(&fx, &p, sub.call, FAIL_ALLOC, 0));
        ASSERT_TRUE(judge_answer(&fx, &p, &sub));
        s = p.client->stream;
        ASSERT_TRUE(deliver(s, 1));
        ev = next_event(&fx, &p);
        ASSERT_STREQ(json_string_value(json_object_get(ev, "cgroup")), "/");
        json_decref(ev);

        /* The shared body exists; the peer's copy of it cannot be made. */
        body = test_body_new(json_pack("{s:s, s:s}", "kind", "memory_events", "cgroup", "/x"), 0, 0);
        ASSERT_TRUE(body);
        fail_inject_reset();
        fail_inject_after(FAIL_MALLOC, 1);
        ASSERT_TRUE(!s->listener.ops->deliver(&s->listener, body, 1));
        ASSERT_EQ(fail_inject_fired(FAIL_MALLOC), 1);
        fail_inject_reset();
        body_unref(body);
        ASSERT_U64_EQ(fx.counters.value[COUNTER_EVENTS_DROPPED], 1);
        ASSERT_TRUE(deliver(s, 1));
        ev = next_event(&fx, &p);
        ASSERT_EQ(ev_int(ev, "seq"), 3);
        ASSERT_EQ(ev_int(ev, "missed"), 1);
        ASSERT_STREQ(json_string_value(json_object_get(ev, "cgroup")), "/");
        json_decref(ev);

        peer_root = NULL;
        subscribed_cgroup = "/x";
        peer_close(&p);
        fixture_done(&fx);
}

int main(void) {
        log_set_max_level(LOG_CRIT); /* every failed call is logged */
        test_methods_out_of_memory();
        test_status_with_registration_out_of_memory();
        test_subscribe_failures();
        test_write_watcher_refused();
        test_resume_reading_refused();
        test_idle_timer_refused();
        test_coalesce_timer_refused();
        test_episode_timer_refused();
        test_report_event_refused();
        test_meminfo_open_refused();
        test_namespaced_peer();
        return 0;
}
