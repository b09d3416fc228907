/* SPDX-License-Identifier: MIT */
/*
 * API test of libpressure.so against a scripted varlink server that runs in
 * a child process on a temporary Unix socket. The server's behaviour is
 * chosen by the cgroup a client subscribes to:
 *
 *   /kinds       every event kind once, then "removed"
 *   /err/NAME    the error io.pressured.NAME (/verr/NAME: org.varlink.service.NAME)
 *   /flaky       first connection: subscribed + one event, then hang up;
 *                later ones: subscribed + one event, kept open
 *   /hangup      subscribed + one event, then hang up, every time
 *   /gone        first connection: subscribed, then hang up; later: NoSuchCgroup
 *   /bad         subscribed, then an event of an unknown kind
 *   /reason      subscribed with an adjusted_reason, then as "anything"
 *   /reason-bad  subscribed with an adjusted_reason that is no string
 *   anything     subscribed (trigger = the request's parameters) + one
 *                pressure event, kept open
 *
 * plus Inject, GetStatus, GetProtection and Reload (denied).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "pressure.h"
#include "tests.h"
#include "util.h"

#define LOOP_BUDGET_USEC (10 * 1000000ULL)

static char socket_path[108];

#define ADJUSTED_REASON "the daemon lacks CAP_SYS_RESOURCE: the window was rounded up to 2 s"

/* ---- The fake server (child process) ------------------------------------------ */

static void send_json(int fd, json_t *msg) {
        char *text = json_dumps(msg, JSON_COMPACT);

        if (text) {
                (void) !send(fd, text, strlen(text) + 1, MSG_NOSIGNAL);
                free(text);
        }
        json_decref(msg);
}

static void send_event(int fd, json_t *event, bool continues) {
        send_json(fd, json_pack("{s:{s:o}, s:b}", "parameters", "event", event, "continues", continues));
}

static json_t *read_request(int fd) {
        char buf[65536];
        size_t n = 0;

        while (n < sizeof(buf)) {
                ssize_t k = recv(fd, buf + n, 1, 0);
                if (k <= 0)
                        return NULL;
                if (buf[n] == 0)
                        return json_loads(buf, 0, NULL);
                n++;
        }
        return NULL;
}

static json_t *node_json(const char *cgroup) {
        return json_pack("{s:s, s:I, s:n, s:I, s:n, s:I, s:I, s:I, s:I, s:I, s:s}",
                         "cgroup", cgroup, "usage", (json_int_t) 1288490188, "min",
                         "low", (json_int_t) 2147483648, "emin", "elow", (json_int_t) 1073741824,
                         "min_usage", (json_int_t) 1288490188, "low_usage", (json_int_t) 1288490188,
                         "children_min_usage", (json_int_t) 5, "children_low_usage", (json_int_t) 7,
                         "state", "low");
}

static json_t *psi_json(void) {
        return json_pack("{s:f, s:f, s:i, s:I, s:f, s:f, s:f, s:I}",
                         "some_avg10", 1.5, "some_avg60", 0.25, "some_avg300", 0,
                         "some_total_us", (json_int_t) 123456,
                         "full_avg10", 0.5, "full_avg60", 0.0, "full_avg300", 0.0,
                         "full_total_us", (json_int_t) 789);
}

/* Returns true if the connection is to be kept open. */
static bool serve_subscribe(int fd, json_t *params, unsigned *n_flaky, unsigned *n_gone) {
        const char *cgroup = json_string_value(json_object_get(params, "cgroup"));
        const char *level = json_string_value(json_object_get(params, "level"));
        json_t *trigger = json_deep_copy(params), *state, *sub;

        if (!cgroup)
                cgroup = "/";
        if (strncmp(cgroup, "/err/", 5) == 0 || strncmp(cgroup, "/verr/", 6) == 0) {
                char name[128];

                snprintf(name, sizeof(name), "%s.%s",
                         cgroup[1] == 'e' ? "io.pressured" : "org.varlink.service", strchr(cgroup + 1, '/') + 1);
                json_decref(trigger);
                send_json(fd, json_pack("{s:s, s:{s:s}}", "error", name, "parameters", "cgroup", cgroup));
                return false;
        }
        if (streq_ptr(cgroup, "/gone") && ++*n_gone > 1) {
                json_decref(trigger);
                send_json(fd, json_pack("{s:s, s:{s:s}}", "error", "io.pressured.NoSuchCgroup",
                                        "parameters", "cgroup", cgroup));
                return false;
        }

        state = json_pack("{s:o}", "psi", psi_json());
        if (streq_ptr(cgroup, "/kinds"))
                /* An episode is going on. */
                json_object_set_new(state, "episode",
                                    json_pack("{s:I, s:I, s:i, s:f}", "active_since_us", (json_int_t) 40,
                                              "duration_us", (json_int_t) 1500000, "events", 3, "peak", 12.5));
        sub = json_pack("{s:s, s:s, s:s, s:o, s:b, s:o}", "kind", "subscribed",
                        "cgroup", cgroup, "source", "psi", "trigger", trigger, "adjusted", 1, "state", state);
        if (streq_ptr(cgroup, "/reason"))
                json_object_set_new(sub, "adjusted_reason", json_string(ADJUSTED_REASON));
        else if (streq_ptr(cgroup, "/reason-bad"))
                json_object_set_new(sub, "adjusted_reason", json_integer(7));
        send_event(fd, sub, true);

        if (streq_ptr(cgroup, "/kinds")) {
                send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:b, s:o, s:o, s:s}",
                                         "kind", "pressure", "cgroup", cgroup, "source", "psi", "level", "medium",
                                         "seq", 1, "count", 2, "missed", 1,
                                         "time_us", (json_int_t) 1700000000000000, "monotonic_us", (json_int_t) 42,
                                         "synthetic", 0, "psi", psi_json(), "protection", node_json(cgroup),
                                         "extra_field_of_a_newer_daemon", "ignored"), true);
                send_event(fd, json_pack("{s:s, s:s, s:s, s:i, s:{s:i, s:i, s:i, s:i, s:i}, s:{s:i, s:i}, s:I, s:I}",
                                         "kind", "memory_events", "cgroup", cgroup, "source", "memory_events",
                                         "seq", 2,
                                         "counters", "low", 0, "high", 7, "max", 3, "oom", 1, "oom_kill", 1,
                                         "delta", "high", 2, "oom_kill", 1,
                                         "time_us", (json_int_t) 1700000000000001, "monotonic_us", (json_int_t) 43),
                           true);
                send_event(fd, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:o, s:I, s:I}",
                                         "kind", "protection", "cgroup", cgroup, "source", "protection", "seq", 3,
                                         "state", "low", "previous", "min", "node", node_json(cgroup),
                                         "time_us", (json_int_t) 1700000000000002, "monotonic_us", (json_int_t) 44),
                           true);
                send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:i, s:f}",
                                         "kind", "cleared", "cgroup", cgroup, "source", "psi", "level", "medium",
                                         "seq", 4, "missed", 0,
                                         "time_us", (json_int_t) 1700000000000003, "monotonic_us", (json_int_t) 45,
                                         "duration_us", (json_int_t) 4000000, "events", 5, "peak", 37.25),
                           true);
                send_event(fd, json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:i, s:s}",
                                         "kind", "cleared", "cgroup", cgroup, "source", "vmpressure", "seq", 5,
                                         "time_us", (json_int_t) 1700000000000004, "monotonic_us", (json_int_t) 46,
                                         "duration_us", (json_int_t) 2000000, "events", 40, "peak_level", "critical"),
                           true);
                send_event(fd, json_pack("{s:s, s:s}", "kind", "removed", "cgroup", cgroup), false);
                return false;
        }
        if (streq_ptr(cgroup, "/bad") || streq_ptr(cgroup, "/reason-bad")) {
                send_event(fd, json_pack("{s:s, s:s}", "kind", "no-such-kind", "cgroup", cgroup), true);
                return true;
        }
        if (streq_ptr(cgroup, "/gone"))
                return false;

        if (streq_ptr(cgroup, "/flaky"))
                ++*n_flaky;
        send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:b}",
                                 "kind", "pressure", "cgroup", cgroup, "source", "inject",
                                 "level", level ? level : "low", "seq", streq_ptr(cgroup, "/flaky") ? (int) *n_flaky : 1,
                                 "count", 1, "missed", 0, "synthetic", 1), true);
        return !(streq_ptr(cgroup, "/flaky") && *n_flaky == 1) && !streq_ptr(cgroup, "/hangup");
}

static void serve_call(int fd, const char *method, json_t *params) {
        if (streq(method, "io.pressured.Inject"))
                send_json(fd, json_pack("{s:{s:i}}", "parameters", "delivered", 3));
        else if (streq(method, "io.pressured.GetStatus"))
                send_json(fd, json_pack("{s:{s:s, s:i}}", "parameters", "version", "9.9", "clients", 1));
        else if (streq(method, "io.pressured.GetProtection"))
                send_json(fd, json_pack("{s:{s:[o]}}", "parameters", "nodes",
                                        node_json(json_string_value(json_object_get(params, "cgroup")) ?: "/")));
        else if (streq(method, "io.pressured.Reload"))
                send_json(fd, json_pack("{s:s, s:{s:s}}", "error", "io.pressured.PermissionDenied",
                                        "parameters", "reason", "not root"));
        else
                send_json(fd, json_pack("{s:s, s:{s:s}}", "error", "org.varlink.service.MethodNotFound",
                                        "parameters", "method", method));
}

_Noreturn static void server_run(int listen_fd) {
        unsigned n_flaky = 0, n_gone = 0;

        for (;;) {
                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
                json_t *req;
                const char *method;

                if (fd < 0)
                        continue;
                req = read_request(fd);
                method = json_string_value(json_object_get(req, "method"));
                if (!method) {
                        close(fd);
                        json_decref(req);
                        continue;
                }
                if (streq(method, "io.pressured.Subscribe")) {
                        if (!serve_subscribe(fd, json_object_get(req, "parameters"), &n_flaky, &n_gone))
                                close(fd);
                        /* kept connections stay open until the server dies */
                } else {
                        serve_call(fd, method, json_object_get(req, "parameters"));
                        close(fd);
                }
                json_decref(req);
        }
}

static pid_t server_start(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;
        pid_t pid;

        (void) unlink(socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(fd >= 0);
        memcpy(sa.sun_path, socket_path, strlen(socket_path));
        ASSERT_OK(bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
        ASSERT_OK(listen(fd, 64));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                /* Never outlive the test, even when an assertion aborts it. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                server_run(fd);
        }
        close(fd);
        return pid;
}

static void server_stop(pid_t pid) {
        ASSERT_OK(kill(pid, SIGKILL));
        ASSERT_EQ(waitpid(pid, NULL, 0), pid);
}

/* ---- Recording handler -------------------------------------------------------------- */

typedef struct Recorded {
        pressure_event_kind kind;
        pressure_level level;
        uint64_t seq;
        int error;
        char cgroup[64];
        char error_name[64];
        char error_params[128];
} Recorded;

typedef struct Recorder {
        Recorded events[32];
        unsigned n;
        bool free_on_first_pressure;
} Recorder;

static int on_event(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        Recorder *r = userdata;
        Recorded *x;

        ASSERT_TRUE(r->n < ELEMENTSOF(r->events));
        ASSERT_TRUE(pressure_subscription_get_userdata(sub) == userdata);
        x = &r->events[r->n++];
        *x = (Recorded) { .kind = e->kind, .level = e->level, .seq = e->seq, .error = e->error };
        snprintf(x->cgroup, sizeof(x->cgroup), "%s", e->cgroup);
        if (e->kind != PRESSURE_EVENT_ERROR)
                ASSERT_TRUE(e->error_name == NULL && e->error_parameters == NULL);
        if (e->error_name)
                snprintf(x->error_name, sizeof(x->error_name), "%s", e->error_name);
        if (e->error_parameters)
                snprintf(x->error_params, sizeof(x->error_params), "%s", e->error_parameters);
        /* Raw JSON is there for everything the daemon sent. */
        if (e->kind == PRESSURE_EVENT_RECONNECTED || e->kind == PRESSURE_EVENT_ERROR)
                ASSERT_TRUE(e->json == NULL);
        else {
                json_t *j = e->json ? json_loads(e->json, 0, NULL) : NULL;
                ASSERT_TRUE(j);
                json_decref(j);
        }
        if (r->free_on_first_pressure && e->kind == PRESSURE_EVENT_PRESSURE)
                pressure_subscription_free(sub);
        return 0;
}

/* Run the client until @done says so or the budget is spent. */
static void run_until(pressure_client *c, bool (*done)(void *), void *data) {
        for (unsigned i = 0; i < 1000 && !done(data); i++)
                ASSERT_OK(pressure_client_wait(c, LOOP_BUDGET_USEC / 100));
        ASSERT_TRUE(done(data));
}

static unsigned want_n;
static bool have_n(void *data) {
        return ((Recorder *) data)->n >= want_n;
}

static pressure_client *client_new(void) {
        pressure_client *c;

        ASSERT_OK(pressure_client_new(&c));
        ASSERT_OK(pressure_client_set_socket(c, socket_path));
        ASSERT_STREQ(pressure_client_get_socket(c), socket_path);
        return c;
}

static int subscribe_cgroup(pressure_client *c, const char *cgroup, Recorder *r, pressure_subscription **ret) {
        pressure_selector *s;
        int k;

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, cgroup));
        k = pressure_client_subscribe(c, s, on_event, r, ret);
        pressure_selector_free(s);
        return k;
}

/* ---- Tests ------------------------------------------------------------------------------ */

static pressure_subscription *kinds_sub;

static int on_kinds(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        unsigned *n = userdata;
        json_t *j = json_loads(e->json, 0, NULL);

        ASSERT_TRUE(sub == kinds_sub);
        ASSERT_TRUE(j);
        ASSERT_STREQ(e->cgroup, "/kinds");
        switch ((*n)++) {
        case 0:
                ASSERT_EQ(e->kind, PRESSURE_EVENT_SUBSCRIBED);
                ASSERT_EQ(e->source, PRESSURE_SOURCE_PSI);
                ASSERT_EQ(e->adjusted, 1);
                /* Adjusted without a reason, as a daemon before 0.2 says it. */
                ASSERT_TRUE(pressure_event_get_adjusted_reason(e) == NULL);
                /* The server echoes the request as the trigger: the builder's PSI spec. */
                ASSERT_EQ(e->trigger.has_psi, 1);
                ASSERT_EQ(e->trigger.psi_stall, PRESSURE_STALL_FULL);
                ASSERT_U64_EQ(e->trigger.psi_threshold_us, 150000);
                ASSERT_U64_EQ(e->trigger.psi_window_us, 2000000);
                ASSERT_EQ(e->trigger.has_vmpressure, 0);
                ASSERT_EQ(json_integer_value(json_object_get(json_object_get(j, "trigger"), "min_interval_ms")), 250);
                ASSERT_EQ(e->psi.present, 1);
                ASSERT_TRUE(e->psi.some_avg10 == 1.5);
                ASSERT_U64_EQ(e->psi.some_total_us, 123456);
                /* The active episode rides along. */
                ASSERT_TRUE(pressure_event_get_episode(e));
                ASSERT_U64_EQ(pressure_event_get_episode(e)->active_since_us, 40);
                ASSERT_U64_EQ(pressure_event_get_episode(e)->duration_us, 1500000);
                ASSERT_U64_EQ(pressure_event_get_episode(e)->events, 3);
                ASSERT_EQ(pressure_event_get_episode(e)->has_peak, 1);
                ASSERT_TRUE(pressure_event_get_episode(e)->peak == 12.5);
                ASSERT_EQ(pressure_event_get_episode(e)->peak_level, PRESSURE_LEVEL_NONE);
                break;
        case 1:
                ASSERT_EQ(e->kind, PRESSURE_EVENT_PRESSURE);
                ASSERT_EQ(e->level, PRESSURE_LEVEL_MEDIUM);
                ASSERT_EQ(e->source, PRESSURE_SOURCE_PSI);
                ASSERT_U64_EQ(e->seq, 1);
                ASSERT_U64_EQ(e->count, 2);
                ASSERT_U64_EQ(e->missed, 1);
                ASSERT_U64_EQ(e->time_us, 1700000000000000ULL);
                ASSERT_U64_EQ(e->monotonic_us, 42);
                ASSERT_EQ(e->synthetic, 0);
                ASSERT_EQ(e->psi.present, 1);
                ASSERT_TRUE(e->psi.some_avg60 == 0.25);
                ASSERT_TRUE(e->psi.some_avg300 == 0);
                ASSERT_EQ(e->psi.has_full, 1);
                ASSERT_TRUE(e->psi.full_avg10 == 0.5);
                ASSERT_U64_EQ(e->psi.full_total_us, 789);
                ASSERT_EQ(e->node.present, 1);
                ASSERT_U64_EQ(e->node.usage, 1288490188);
                ASSERT_TRUE(strstr(e->json, "extra_field_of_a_newer_daemon"));
                break;
        case 2:
                ASSERT_EQ(e->kind, PRESSURE_EVENT_MEMORY_EVENTS);
                ASSERT_EQ(e->source, PRESSURE_SOURCE_MEMORY_EVENTS);
                ASSERT_U64_EQ(e->seq, 2);
                ASSERT_EQ(e->counters.present, PRESSURE_MEMORY_EVENT_LOW | PRESSURE_MEMORY_EVENT_HIGH |
                          PRESSURE_MEMORY_EVENT_MAX | PRESSURE_MEMORY_EVENT_OOM | PRESSURE_MEMORY_EVENT_OOM_KILL);
                ASSERT_U64_EQ(e->counters.high, 7);
                ASSERT_U64_EQ(e->counters.max, 3);
                ASSERT_U64_EQ(e->counters.oom_kill, 1);
                ASSERT_EQ(e->delta.present, PRESSURE_MEMORY_EVENT_HIGH | PRESSURE_MEMORY_EVENT_OOM_KILL);
                ASSERT_U64_EQ(e->delta.high, 2);
                ASSERT_U64_EQ(e->monotonic_us, 43);
                break;
        case 3:
                ASSERT_EQ(e->kind, PRESSURE_EVENT_PROTECTION);
                ASSERT_EQ(e->source, PRESSURE_SOURCE_PROTECTION);
                ASSERT_EQ(e->state, PRESSURE_PROTECTION_LOW);
                ASSERT_EQ(e->previous, PRESSURE_PROTECTION_MIN);
                ASSERT_EQ(e->node.present, 1);
                ASSERT_STREQ(e->node.cgroup, "/kinds");
                ASSERT_U64_EQ(e->node.usage, 1288490188);
                ASSERT_U64_EQ(e->node.min, PRESSURE_UNLIMITED);
                ASSERT_U64_EQ(e->node.low, 2147483648ULL);
                ASSERT_U64_EQ(e->node.emin, PRESSURE_UNLIMITED);
                ASSERT_U64_EQ(e->node.elow, 1073741824);
                ASSERT_U64_EQ(e->node.min_usage, 1288490188);
                ASSERT_U64_EQ(e->node.low_usage, 1288490188);
                ASSERT_U64_EQ(e->node.children_min_usage, 5);
                ASSERT_U64_EQ(e->node.children_low_usage, 7);
                ASSERT_EQ(e->node.state, PRESSURE_PROTECTION_LOW);
                ASSERT_U64_EQ(e->seq, 3);
                break;
        case 4: {
                const pressure_episode *ep = pressure_event_get_episode(e);

                ASSERT_EQ(e->kind, PRESSURE_EVENT_CLEARED);
                ASSERT_STREQ(pressure_event_kind_to_string(e->kind), "cleared");
                ASSERT_EQ(e->source, PRESSURE_SOURCE_PSI);
                ASSERT_EQ(e->level, PRESSURE_LEVEL_MEDIUM);
                ASSERT_U64_EQ(e->seq, 4);
                ASSERT_U64_EQ(e->monotonic_us, 45);
                ASSERT_TRUE(ep);
                ASSERT_U64_EQ(ep->duration_us, 4000000);
                ASSERT_U64_EQ(ep->events, 5);
                ASSERT_EQ(ep->has_peak, 1);
                ASSERT_TRUE(ep->peak == 37.25);
                ASSERT_EQ(ep->peak_level, PRESSURE_LEVEL_NONE);
                break;
        }
        case 5: {
                const pressure_episode *ep = pressure_event_get_episode(e);

                ASSERT_EQ(e->kind, PRESSURE_EVENT_CLEARED);
                ASSERT_EQ(e->source, PRESSURE_SOURCE_VMPRESSURE);
                ASSERT_U64_EQ(e->seq, 5);
                ASSERT_TRUE(ep);
                ASSERT_U64_EQ(ep->events, 40);
                ASSERT_EQ(ep->has_peak, 0);
                ASSERT_EQ(ep->peak_level, PRESSURE_LEVEL_CRITICAL);
                break;
        }
        case 6:
                ASSERT_EQ(e->kind, PRESSURE_EVENT_REMOVED);
                ASSERT_TRUE(pressure_event_get_episode(e) == NULL);
                break;
        default:
                TEST_FAIL("unexpected event %s", pressure_event_kind_to_string(e->kind));
        }
        json_decref(j);
        return 0;
}

static bool kinds_done(void *data) {
        return *(unsigned *) data >= 7;
}

static void test_event_kinds(void) {
        pressure_client *c = client_new();
        pressure_selector *s;
        unsigned n = 0;
        uint64_t timeout;
        struct pollfd p;

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, "/kinds"));
        ASSERT_OK(pressure_selector_set_psi(s, PRESSURE_STALL_FULL, 150000, 2000000));
        ASSERT_OK(pressure_selector_set_min_interval_ms(s, 250));
        ASSERT_OK(pressure_client_subscribe(c, s, on_kinds, &n, &kinds_sub));
        pressure_selector_free(s);
        ASSERT_EQ(n, 0); /* handlers run from process() only */
        ASSERT_EQ(pressure_client_get_n_active(c), 1);

        /* The confirmation waits in the library: due at once, and the fd says so. */
        ASSERT_OK(pressure_client_get_timeout(c, &timeout));
        ASSERT_U64_EQ(timeout, 0);
        p = (struct pollfd) { .fd = pressure_client_get_fd(c), .events = (short) pressure_client_get_events(c) };
        ASSERT_EQ(poll(&p, 1, 5000), 1);
        ASSERT_EQ(pressure_client_process(c), 1);
        ASSERT_TRUE(n >= 1);

        run_until(c, kinds_done, &n);
        ASSERT_EQ(n, 7);
        /* "removed" ends the stream: no reconnect, nothing due. */
        ASSERT_EQ(pressure_subscription_is_active(kinds_sub), 0);
        ASSERT_EQ(pressure_client_get_n_active(c), 0);
        ASSERT_OK(pressure_client_get_timeout(c, &timeout));
        ASSERT_U64_EQ(timeout, PRESSURE_TIMEOUT_INFINITE);
        pressure_client_free(c);
}

static void test_errors(void) {
        static const struct {
                const char *cgroup;
                int error;
                const char *name;
        } table[] = {
                { "/err/PermissionDenied",   EACCES,     "io.pressured.PermissionDenied" },
                { "/err/NoSuchCgroup",       ENOENT,     "io.pressured.NoSuchCgroup" },
                { "/err/InvalidCgroupPath",  EINVAL,     "io.pressured.InvalidCgroupPath" },
                { "/err/InvalidTrigger",     EINVAL,     "io.pressured.InvalidTrigger" },
                { "/verr/InvalidParameter",  EINVAL,     "org.varlink.service.InvalidParameter" },
                { "/err/LimitExceeded",      EUSERS,     "io.pressured.LimitExceeded" },
                { "/err/SourceUnavailable",  EOPNOTSUPP, "io.pressured.SourceUnavailable" },
                { "/err/SomethingNew",       EPROTO,     "io.pressured.SomethingNew" },
        };
        pressure_client *c = client_new();
        Recorder rec = {};
        pressure_subscription *sub = NULL;
        uint64_t delivered = 0;
        char *json = NULL;

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                json_t *params;

                ASSERT_EQ(subscribe_cgroup(c, table[i].cgroup, &rec, &sub), -table[i].error);
                ASSERT_TRUE(sub == NULL);
                ASSERT_STREQ(pressure_client_last_error_name(c), table[i].name);
                params = json_loads(pressure_client_last_error_params(c), 0, NULL);
                ASSERT_STREQ(json_string_value(json_object_get(params, "cgroup")), table[i].cgroup);
                json_decref(params);
        }
        ASSERT_EQ(pressure_client_get_n_active(c), 0);

        /* Simple calls: results, and errors mapped the same way. */
        ASSERT_OK(pressure_client_inject(c, "/x", PRESSURE_LEVEL_CRITICAL, &delivered));
        ASSERT_U64_EQ(delivered, 3);
        ASSERT_TRUE(pressure_client_last_error_name(c) == NULL);
        ASSERT_ERR(pressure_client_inject(c, "/x", PRESSURE_LEVEL_NONE, NULL), EINVAL);
        ASSERT_ERR(pressure_client_reload(c), EACCES);
        ASSERT_STREQ(pressure_client_last_error_name(c), "io.pressured.PermissionDenied");
        ASSERT_STREQ(pressure_client_last_error_params(c), "{\"reason\":\"not root\"}");
        ASSERT_OK(pressure_client_get_status(c, &json));
        ASSERT_STREQ(json, "{\"version\":\"9.9\",\"clients\":1}");
        free(json);
        ASSERT_OK(pressure_client_get_protection(c, "/p", &json));
        ASSERT_TRUE(strstr(json, "\"cgroup\":\"/p\""));
        free(json);
        ASSERT_ERR(pressure_client_call(c, "io.pressured.Nope", "{}", NULL), EOPNOTSUPP);
        ASSERT_ERR(pressure_client_call(c, "io.pressured.GetStatus", "[1]", NULL), EINVAL);

        /* No daemon at all: a connection error, no error name. */
        ASSERT_OK(pressure_client_set_socket(c, "/nonexistent/pressured.sock"));
        ASSERT_ERR(pressure_client_inject(c, NULL, PRESSURE_LEVEL_LOW, NULL), ENOENT);
        ASSERT_TRUE(pressure_client_last_error_name(c) == NULL);
        ASSERT_ERR(subscribe_cgroup(c, "/a", &rec, NULL), ENOENT);
        pressure_client_free(c);
}

static void test_selectors(void) {
        pressure_selector *s;

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_ERR(pressure_selector_set_level(s, PRESSURE_LEVEL_NONE), EINVAL);
        ASSERT_ERR(pressure_selector_set_level(s, (pressure_level) 17), EINVAL);
        ASSERT_ERR(pressure_selector_set_psi(s, (pressure_stall) 5, 1, 2), EINVAL);
        ASSERT_ERR(pressure_selector_set_vmpressure(s, PRESSURE_LEVEL_LOW, (pressure_vmpressure_mode) 9), EINVAL);
        ASSERT_OK(pressure_selector_set_vmpressure(s, PRESSURE_LEVEL_CRITICAL, PRESSURE_VMPRESSURE_MODE_LOCAL));
        ASSERT_OK(pressure_selector_set_memory_events(s));
        ASSERT_OK(pressure_selector_set_protection(s));
        ASSERT_OK(pressure_selector_set_cgroup(s, NULL));
        ASSERT_TRUE(pressure_selector_free(s) == NULL);
        ASSERT_TRUE(pressure_selector_free(NULL) == NULL);
        ASSERT_TRUE(pressure_client_free(NULL) == NULL);
        ASSERT_TRUE(pressure_subscription_free(NULL) == NULL);

        ASSERT_EQ(pressure_level_from_string("medium"), PRESSURE_LEVEL_MEDIUM);
        ASSERT_EQ(pressure_level_from_string("severe"), -EINVAL);
        ASSERT_STREQ(pressure_level_to_string(PRESSURE_LEVEL_CRITICAL), "critical");
        ASSERT_TRUE(pressure_level_to_string(PRESSURE_LEVEL_NONE) == NULL);
        ASSERT_STREQ(pressure_event_kind_to_string(PRESSURE_EVENT_RECONNECTED), "reconnected");
        ASSERT_STREQ(pressure_source_to_string(PRESSURE_SOURCE_INJECT), "inject");
        ASSERT_STREQ(pressure_protection_state_to_string(PRESSURE_PROTECTION_MIN), "min");
        ASSERT_TRUE(strlen(pressure_version()) > 0);
}

/* Which request did the vmpressure/memory_events/protection builders send? */
typedef struct Echo {
        json_t *trigger;
} Echo;

static int on_echo(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        Echo *echo = userdata;

        if (e->kind == PRESSURE_EVENT_SUBSCRIBED && !echo->trigger) {
                json_t *j = json_loads(e->json, 0, NULL);
                echo->trigger = json_incref(json_object_get(j, "trigger"));
                json_decref(j);
        }
        return 0;
}

static bool echo_done(void *data) {
        return ((Echo *) data)->trigger != NULL;
}

static void check_request(void (*setup)(pressure_selector *), const char *expected) {
        pressure_client *c = client_new();
        pressure_selector *s;
        Echo echo = {};
        char *text;

        ASSERT_OK(pressure_selector_new(&s));
        setup(s);
        ASSERT_OK(pressure_client_subscribe(c, s, on_echo, &echo, NULL));
        pressure_selector_free(s);
        run_until(c, echo_done, &echo);
        text = json_dumps(echo.trigger, JSON_COMPACT | JSON_SORT_KEYS);
        ASSERT_STREQ(text, expected);
        free(text);
        json_decref(echo.trigger);
        pressure_client_free(c);
}

static void setup_vmpressure(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_cgroup(s, "/v1"));
        ASSERT_OK(pressure_selector_set_vmpressure(s, PRESSURE_LEVEL_CRITICAL, PRESSURE_VMPRESSURE_MODE_HIERARCHY));
}

static void setup_vmpressure_nomode(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_vmpressure(s, PRESSURE_LEVEL_LOW, PRESSURE_VMPRESSURE_MODE_UNSET));
}

static void setup_memory_events(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_cgroup(s, "/m"));
        ASSERT_OK(pressure_selector_set_memory_events(s));
}

static void setup_protection(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_protection(s));
        ASSERT_OK(pressure_selector_set_min_interval_ms(s, 1000));
}

static void setup_default(pressure_selector *s) {
}

static void test_requests(void) {
        check_request(setup_vmpressure, "{\"cgroup\":\"/v1\",\"vmpressure\":{\"level\":\"critical\",\"mode\":\"hierarchy\"}}");
        check_request(setup_vmpressure_nomode, "{\"vmpressure\":{\"level\":\"low\"}}");
        check_request(setup_memory_events, "{\"cgroup\":\"/m\",\"memory_events\":true}");
        check_request(setup_protection, "{\"min_interval_ms\":1000,\"protection\":true}");
        check_request(setup_default, "{\"level\":\"low\"}");
}

static unsigned count_pressure(Recorder *r, const char *cgroup) {
        unsigned n = 0;

        for (unsigned i = 0; i < r->n; i++)
                n += r->events[i].kind == PRESSURE_EVENT_PRESSURE && streq(r->events[i].cgroup, cgroup);
        return n;
}

static bool two_streams_done(void *data) {
        Recorder *r = data;
        return count_pressure(r, "/a") >= 1 && count_pressure(r, "/b") >= 1;
}

static void test_multiple(void) {
        pressure_client *c = client_new();
        pressure_subscription *a, *b;
        pressure_selector *s;
        Recorder rec = {};

        ASSERT_OK(subscribe_cgroup(c, "/a", &rec, &a));
        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, "/b"));
        ASSERT_OK(pressure_selector_set_level(s, PRESSURE_LEVEL_CRITICAL));
        ASSERT_OK(pressure_client_subscribe(c, s, on_event, &rec, &b));
        pressure_selector_free(s);
        ASSERT_TRUE(a != b);
        ASSERT_TRUE(pressure_subscription_get_client(a) == c);
        ASSERT_EQ(pressure_client_get_n_active(c), 2);

        run_until(c, two_streams_done, &rec);
        for (unsigned i = 0; i < rec.n; i++)
                if (rec.events[i].kind == PRESSURE_EVENT_PRESSURE)
                        ASSERT_EQ(rec.events[i].level,
                                  streq(rec.events[i].cgroup, "/b") ? PRESSURE_LEVEL_CRITICAL : PRESSURE_LEVEL_LOW);

        ASSERT_TRUE(pressure_subscription_free(a) == NULL);
        ASSERT_EQ(pressure_client_get_n_active(c), 1);
        ASSERT_EQ(pressure_subscription_is_active(b), 1);
        pressure_client_free(c);

        /* A handler may free its own subscription. */
        c = client_new();
        rec = (Recorder) { .free_on_first_pressure = true };
        ASSERT_OK(subscribe_cgroup(c, "/a", &rec, &a));
        want_n = 2;
        run_until(c, have_n, &rec);
        ASSERT_EQ(rec.events[1].kind, PRESSURE_EVENT_PRESSURE);
        ASSERT_EQ(pressure_client_get_n_active(c), 0);
        ASSERT_EQ(pressure_client_process(c), 0);
        ASSERT_EQ(rec.n, 2);
        pressure_client_free(c);
}

static bool flaky_done(void *data) {
        Recorder *r = data;
        return r->n >= 5;
}

static bool true_after_some(void *data) {
        unsigned *n = data;
        return ++*n > 3;
}

static void test_reconnect(pid_t *server) {
        pressure_client *c = client_new();
        Recorder rec = {};
        unsigned spins = 0;
        pressure_subscription *sub;

        /* The server hangs up after the first event; the library subscribes again. */
        ASSERT_OK(subscribe_cgroup(c, "/flaky", &rec, &sub));
        run_until(c, flaky_done, &rec);
        ASSERT_EQ(rec.events[0].kind, PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(rec.events[1].kind, PRESSURE_EVENT_PRESSURE);
        ASSERT_U64_EQ(rec.events[1].seq, 1);
        ASSERT_EQ(rec.events[2].kind, PRESSURE_EVENT_RECONNECTED);
        ASSERT_STREQ(rec.events[2].cgroup, "/flaky");
        ASSERT_EQ(rec.events[3].kind, PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(rec.events[4].kind, PRESSURE_EVENT_PRESSURE);
        ASSERT_U64_EQ(rec.events[4].seq, 2);
        ASSERT_EQ(pressure_subscription_is_active(sub), 1);

        /* The whole server dies and comes back: connection refused meanwhile, then resubscribed. */
        server_stop(*server);
        run_until(c, true_after_some, &spins); /* the failed attempts are silent */
        ASSERT_EQ(rec.n, 5);
        *server = server_start();
        want_n = 8;
        run_until(c, have_n, &rec);
        ASSERT_EQ(rec.events[5].kind, PRESSURE_EVENT_RECONNECTED);
        ASSERT_EQ(rec.events[6].kind, PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(rec.events[7].kind, PRESSURE_EVENT_PRESSURE);
        pressure_client_free(c);
}

static void test_reconnect_failures(pid_t *server) {
        pressure_client *c = client_new();
        Recorder rec = {};
        pressure_subscription *sub;
        unsigned spins = 0;

        /* Resubscribing is refused: the subscription ends with the daemon's error. */
        ASSERT_OK(subscribe_cgroup(c, "/gone", &rec, &sub));
        want_n = 2;
        run_until(c, have_n, &rec);
        ASSERT_EQ(rec.events[0].kind, PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(rec.events[1].kind, PRESSURE_EVENT_ERROR);
        ASSERT_EQ(rec.events[1].error, -ENOENT);
        /* The error comes with the event; the client's last error is not the reconnect's. */
        ASSERT_STREQ(rec.events[1].error_name, "io.pressured.NoSuchCgroup");
        ASSERT_STREQ(rec.events[1].error_params, "{\"cgroup\":\"/gone\"}");
        ASSERT_TRUE(pressure_client_last_error_name(c) == NULL);
        ASSERT_EQ(pressure_subscription_is_active(sub), 0);
        pressure_client_free(c);

        /* Reconnecting turned off: a hang-up ends the subscription. */
        c = client_new();
        rec = (Recorder) {};
        ASSERT_OK(pressure_client_set_reconnect(c, 0));
        ASSERT_OK(subscribe_cgroup(c, "/hangup", &rec, &sub));
        want_n = 3;
        run_until(c, have_n, &rec);
        ASSERT_EQ(rec.events[2].kind, PRESSURE_EVENT_ERROR);
        ASSERT_EQ(rec.events[2].error, -ECONNRESET);
        ASSERT_STREQ(rec.events[2].error_name, ""); /* no daemon error: a connection failure */
        ASSERT_EQ(pressure_client_get_n_active(c), 0);
        pressure_client_free(c);

        /* A malformed event ends the subscription with -EBADMSG. */
        c = client_new();
        rec = (Recorder) {};
        ASSERT_OK(subscribe_cgroup(c, "/bad", &rec, &sub));
        want_n = 2;
        run_until(c, have_n, &rec);
        ASSERT_EQ(rec.events[1].kind, PRESSURE_EVENT_ERROR);
        ASSERT_EQ(rec.events[1].error, -EBADMSG);
        pressure_client_free(c);

        /* Waiting for a daemon that is not there yet. */
        server_stop(*server);
        (void) unlink(socket_path);
        c = client_new();
        rec = (Recorder) {};
        ASSERT_ERR(subscribe_cgroup(c, "/a", &rec, &sub), ENOENT);
        ASSERT_OK(pressure_client_set_wait_for_daemon(c, 1));
        ASSERT_OK(subscribe_cgroup(c, "/a", &rec, &sub));
        ASSERT_EQ(pressure_subscription_is_active(sub), 1);
        run_until(c, true_after_some, &spins);
        ASSERT_EQ(rec.n, 0);
        *server = server_start();
        want_n = 2;
        run_until(c, have_n, &rec);
        /* The first subscription is no reconnection. */
        ASSERT_EQ(rec.events[0].kind, PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(rec.events[1].kind, PRESSURE_EVENT_PRESSURE);
        pressure_client_free(c);
}

typedef struct ReasonSeen {
        unsigned n;
        pressure_event_kind kinds[2];
        int adjusted;
        int error;
        bool has_reason;
        char reason[128];
} ReasonSeen;

static int on_reason(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        ReasonSeen *r = userdata;
        const char *reason = pressure_event_get_adjusted_reason(e);

        (void) sub;
        ASSERT_TRUE(r->n < ELEMENTSOF(r->kinds));
        r->kinds[r->n++] = e->kind;
        if (e->kind == PRESSURE_EVENT_SUBSCRIBED) {
                r->adjusted = e->adjusted;
                r->has_reason = reason != NULL;
                snprintf(r->reason, sizeof(r->reason), "%s", reason ?: "");
                /* The accessor and the field agree. */
                ASSERT_TRUE(reason == e->adjusted_reason);
        } else
                /* Only the confirmation carries a reason. */
                ASSERT_TRUE(reason == NULL);
        if (e->kind == PRESSURE_EVENT_ERROR)
                r->error = e->error;
        return 0;
}

static unsigned reason_want;
static bool reason_done(void *data) {
        return ((ReasonSeen *) data)->n >= reason_want;
}

/* Subscribe to @cgroup of the fake server and take @n events. */
static void subscribe_reason(const char *cgroup, unsigned n, ReasonSeen *seen) {
        pressure_client *c = client_new();
        pressure_selector *s;

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, cgroup));
        ASSERT_OK(pressure_selector_set_psi(s, PRESSURE_STALL_SOME, 100000, 1000000));
        ASSERT_OK(pressure_client_set_reconnect(c, 0));
        *seen = (ReasonSeen) {};
        ASSERT_OK(pressure_client_subscribe(c, s, on_reason, seen, NULL));
        pressure_selector_free(s);
        reason_want = n;
        run_until(c, reason_done, seen);
        pressure_client_free(c);
}

static void test_adjusted_reason(void) {
        ReasonSeen seen;

        ASSERT_TRUE(pressure_event_get_adjusted_reason(NULL) == NULL);

        /* The daemon says why it adjusted: the text as sent, on the confirmation only. */
        subscribe_reason("/reason", 2, &seen);
        ASSERT_EQ(seen.kinds[0], PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(seen.kinds[1], PRESSURE_EVENT_PRESSURE);
        ASSERT_EQ(seen.adjusted, 1);
        ASSERT_TRUE(seen.has_reason);
        ASSERT_STREQ(seen.reason, ADJUSTED_REASON);

        /* Adjusted without a reason (a daemon before 0.2): NULL. */
        subscribe_reason("/noreason", 2, &seen);
        ASSERT_EQ(seen.kinds[0], PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(seen.adjusted, 1);
        ASSERT_TRUE(!seen.has_reason);

        /* A reason that is no string is a malformed event: the subscription ends with -EBADMSG. */
        subscribe_reason("/reason-bad", 1, &seen);
        ASSERT_EQ(seen.kinds[0], PRESSURE_EVENT_ERROR);
        ASSERT_EQ(seen.error, -EBADMSG);
}

static int subscribe_async_cgroup(pressure_client *c, const char *cgroup, Recorder *r,
                                  pressure_subscription **ret) {
        _cleanup_(pressure_selector_freep) pressure_selector *s = NULL;

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, cgroup));
        return pressure_client_subscribe_async(c, s, on_event, r, ret);
}

static void test_async(void) {
        _cleanup_(pressure_client_freep) pressure_client *c = client_new();
        _cleanup_free_ char *name = NULL, *params = NULL, *json = NULL;
        Recorder ok = {}, denied = {}, gone = {};
        pressure_subscription *sub_ok, *sub_denied, *sub_gone;

        /* A blocking call fails first: its error must survive what follows. */
        ASSERT_ERR(pressure_client_reload(c), EACCES);
        ASSERT_STREQ(pressure_client_last_error_name(c), "io.pressured.PermissionDenied");

        /* Three subscriptions in flight at once; nothing is answered before process(). */
        ASSERT_OK(subscribe_async_cgroup(c, "/async", &ok, &sub_ok));
        ASSERT_OK(subscribe_async_cgroup(c, "/err/LimitExceeded", &denied, &sub_denied));
        ASSERT_OK(subscribe_async_cgroup(c, "/err/NoSuchCgroup", &gone, &sub_gone));
        ASSERT_EQ(ok.n + denied.n + gone.n, 0);
        ASSERT_EQ(pressure_client_get_n_active(c), 3);

        want_n = 2;
        run_until(c, have_n, &ok);
        want_n = 1;
        run_until(c, have_n, &denied);
        run_until(c, have_n, &gone);
        ASSERT_EQ(ok.events[0].kind, PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_STREQ(ok.events[0].cgroup, "/async");
        ASSERT_EQ(ok.events[1].kind, PRESSURE_EVENT_PRESSURE);
        ASSERT_U64_EQ(ok.events[1].seq, 1);
        ASSERT_EQ(pressure_subscription_is_active(sub_ok), 1);

        /* Each failure carries its own errno, error name and parameters. */
        ASSERT_EQ(denied.n, 1);
        ASSERT_EQ(denied.events[0].kind, PRESSURE_EVENT_ERROR);
        ASSERT_EQ(denied.events[0].error, -EUSERS);
        ASSERT_STREQ(denied.events[0].error_name, "io.pressured.LimitExceeded");
        ASSERT_STREQ(denied.events[0].error_params, "{\"cgroup\":\"/err/LimitExceeded\"}");
        ASSERT_EQ(gone.n, 1);
        ASSERT_EQ(gone.events[0].error, -ENOENT);
        ASSERT_STREQ(gone.events[0].error_name, "io.pressured.NoSuchCgroup");
        ASSERT_EQ(pressure_subscription_is_active(sub_denied), 0);
        ASSERT_EQ(pressure_subscription_is_active(sub_gone), 0);
        ASSERT_EQ(pressure_client_get_n_active(c), 1);
        ASSERT_STREQ(pressure_client_last_error_name(c), "io.pressured.PermissionDenied");

        /* A call with its own error. */
        ASSERT_ERR(pressure_client_call_full(c, "io.pressured.Reload", NULL, &json, &name, &params), EACCES);
        ASSERT_TRUE(json == NULL);
        ASSERT_STREQ(name, "io.pressured.PermissionDenied");
        ASSERT_STREQ(params, "{\"reason\":\"not root\"}");
        free(name);
        free(params);
        name = params = NULL;
        ASSERT_OK(pressure_client_call_full(c, "io.pressured.GetStatus", NULL, &json, &name, &params));
        ASSERT_STREQ(json, "{\"version\":\"9.9\",\"clients\":1}");
        ASSERT_TRUE(name == NULL && params == NULL);

        /* No daemon: still answered through the handler, without an error name. */
        {
                _cleanup_(pressure_client_freep) pressure_client *lonely = client_new();
                _cleanup_(pressure_subscription_freep) pressure_subscription *sub = NULL;
                Recorder none = {};

                ASSERT_OK(pressure_client_set_socket(lonely, "/nonexistent/pressured.sock"));
                ASSERT_OK(subscribe_async_cgroup(lonely, "/a", &none, &sub));
                ASSERT_EQ(none.n, 0);
                want_n = 1;
                run_until(lonely, have_n, &none);
                ASSERT_EQ(none.events[0].kind, PRESSURE_EVENT_ERROR);
                ASSERT_EQ(none.events[0].error, -ENOENT);
                ASSERT_STREQ(none.events[0].error_name, "");
                ASSERT_EQ(pressure_client_get_n_active(lonely), 0);
                /* freed by the cleanup helpers, subscription first */
        }
        ASSERT_ERR(pressure_client_subscribe_async(c, NULL, on_event, NULL, NULL), EINVAL);
}

int main(void) {
        char dir[] = "/tmp/test-client-XXXXXX";
        pid_t server;

        ASSERT_TRUE(mkdtemp(dir));
        snprintf(socket_path, sizeof(socket_path), "%s/io.pressured", dir);
        server = server_start();

        test_selectors();
        test_event_kinds();
        test_adjusted_reason();
        test_errors();
        test_requests();
        test_multiple();
        test_async();
        test_reconnect(&server);
        test_reconnect_failures(&server);

        server_stop(server);
        (void) unlink(socket_path);
        (void) rmdir(dir);
        printf("all client tests passed\n");
        return 0;
}
