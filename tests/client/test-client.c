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
 *   /bad         subscribed, an event of a kind this version does not know,
 *                then one it knows (kept open)
 *   /bad-first   an event of an unknown kind where "subscribed" belongs
 *   /bad-last    subscribed, then an unknown kind as the stream's last event
 *   /reason      subscribed with an adjusted_reason, then as "anything"
 *   /reason-bad  subscribed with an adjusted_reason that is no string
 *   /resource-new  as "anything", with a resource this version does not know
 *   kills: true  (any cgroup C) subscribed with kill_sources, a kill by
 *                systemd-oomd of C/app-firefox.scope, two by the kernel of
 *                C, then "removed"; C = /kills-bad-by: the kill has no "by";
 *                /kills-bad-sources: kill_sources holds a number;
 *                /prekill: a warning (id 7) of C/app.service, a kill of it,
 *                "removed"; /prekill-no-id, /prekill-no-deadline: a warning
 *                without its id, or its deadline
 *   anything     subscribed (trigger = the request's parameters) + one
 *                pressure event, kept open; both carry the request's
 *                resource if it has one
 *
 * plus Inject, GetStatus, GetProtection, Reload (denied) and
 * AcknowledgePrekill: id 7 acknowledged, 8 NoSuchPrekill, 9 hung up on
 * without an answer, 10 MethodNotFound (a daemon before 0.5). The call
 * test.SetStatus {"reply": PARAMETERS} makes GetStatus answer PARAMETERS
 * from then on (a fixture); without "reply", the built-in answer again.
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

/* A warning before a kill, then the kill: see the list at the top. */
static void serve_prekill(int fd, const char *cgroup, json_t *params) {
        json_t *warning = json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:i, s:I, s:I}", "kind", "prekill",
                                    "cgroup", "/prekill/app.service", "by", "systemd-oomd", "id", 7,
                                    "deadline_us", (json_int_t) 9000000123, "seq", 1, "missed", 2,
                                    "time_us", (json_int_t) 1700000000000020, "monotonic_us", (json_int_t) 60);

        send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:O, s:b, s:{s:[s]}}", "kind", "subscribed", "cgroup", cgroup,
                                 "source", "kills", "resource", "memory", "trigger", params, "adjusted", 0,
                                 "state", "kill_sources", "systemd-oomd"), true);
        if (streq(cgroup, "/prekill-no-id"))
                json_object_del(warning, "id");
        else if (streq(cgroup, "/prekill-no-deadline"))
                json_object_del(warning, "deadline_us");
        send_event(fd, warning, true);
        send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I}", "kind", "killed",
                                 "cgroup", "/prekill/app.service", "by", "systemd-oomd", "reason", "memory-pressure",
                                 "count", 1, "seq", 2, "missed", 0,
                                 "time_us", (json_int_t) 1700000000000021, "monotonic_us", (json_int_t) 61), true);
        send_event(fd, json_pack("{s:s, s:s, s:i}", "kind", "removed", "cgroup", cgroup, "seq", 3), false);
}

/* A kills subscription: see the list at the top. */
static void serve_kills(int fd, const char *cgroup, json_t *params) {
        char scope[256];
        json_t *sources = streq(cgroup, "/kills-bad-sources") ? json_pack("[s, i]", "kernel", 7)
                                                              : json_pack("[s, s]", "kernel", "systemd-oomd");

        if (strncmp(cgroup, "/prekill", strlen("/prekill")) == 0) {
                json_decref(sources);
                serve_prekill(fd, cgroup, params);
                return;
        }
        snprintf(scope, sizeof(scope), "%s/app-firefox.scope", streq(cgroup, "/") ? "" : cgroup);
        send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:O, s:b, s:{s:o}}", "kind", "subscribed", "cgroup", cgroup,
                                 "source", "kills", "resource", "memory", "trigger", params, "adjusted", 0,
                                 "state", "kill_sources", sources), true);
        if (streq(cgroup, "/kills-bad-by"))
                send_event(fd, json_pack("{s:s, s:s, s:s, s:i, s:i, s:i}", "kind", "killed", "cgroup", scope,
                                         "reason", "memory-pressure", "count", 1, "seq", 1, "missed", 0), true);
        send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I}", "kind", "killed", "cgroup", scope,
                                 "by", "systemd-oomd", "reason", "memory-pressure", "count", 1, "seq", 1, "missed", 0,
                                 "time_us", (json_int_t) 1700000000000010, "monotonic_us", (json_int_t) 50), true);
        send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I}", "kind", "killed", "cgroup", cgroup,
                                 "by", "kernel", "reason", "oom_kill", "count", 2, "seq", 3, "missed", 1,
                                 "time_us", (json_int_t) 1700000000000011, "monotonic_us", (json_int_t) 51), true);
        send_event(fd, json_pack("{s:s, s:s, s:i}", "kind", "removed", "cgroup", cgroup, "seq", 4), false);
}

/* Returns true if the connection is to be kept open. */
static bool serve_subscribe(int fd, json_t *params, unsigned *n_flaky, unsigned *n_gone) {
        const char *cgroup = json_string_value(json_object_get(params, "cgroup"));
        const char *level = json_string_value(json_object_get(params, "level"));
        json_t *trigger = json_deep_copy(params), *state, *sub;

        if (!cgroup)
                cgroup = "/";
        if (json_is_true(json_object_get(params, "kills"))) {
                json_decref(trigger);
                serve_kills(fd, cgroup, params);
                return false;
        }
        if (strncmp(cgroup, "/err/", 5) == 0 || strncmp(cgroup, "/verr/", 6) == 0) {
                char name[128];

                snprintf(name, sizeof(name), "%s.%s",
                         cgroup[1] == 'e' ? "io.pressured" : "org.varlink.service", strchr(cgroup + 1, '/') + 1);
                json_decref(trigger);
                send_json(fd, json_pack("{s:s, s:{s:s}}", "error", name, "parameters", "cgroup", cgroup));
                return false;
        }
        if (streq_ptr(cgroup, "/bad-first")) {
                json_decref(trigger);
                send_event(fd, json_pack("{s:s, s:s}", "kind", "no-such-kind", "cgroup", cgroup), true);
                return true;
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
        if (json_object_get(params, "resource"))
                json_object_set(sub, "resource", json_object_get(params, "resource"));
        else if (streq_ptr(cgroup, "/resource-new"))
                json_object_set_new(sub, "resource", json_string("irq"));
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
                send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:{s:{s:s, s:i, s:i}, s:s}, "
                                         "s:b}",
                                         "kind", "trigger_changed", "cgroup", cgroup, "source", "psi",
                                         "resource", "memory", "level", "medium", "seq", 6, "missed", 0,
                                         "time_us", (json_int_t) 1700000000000005, "monotonic_us", (json_int_t) 47,
                                         "trigger", "psi", "stall", "some", "threshold_us", 300000,
                                         "window_us", 4000000, "level", "medium", "adjusted", 0),
                           true);
                /* An episode made only of injected events: its peak is unknown. */
                send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:i, s:n}",
                                         "kind", "cleared", "cgroup", cgroup, "source", "psi", "level", "medium",
                                         "seq", 7, "missed", 0,
                                         "time_us", (json_int_t) 1700000000000006, "monotonic_us", (json_int_t) 48,
                                         "duration_us", (json_int_t) 4000000, "events", 1, "peak"),
                           true);
                send_event(fd, json_pack("{s:s, s:s}", "kind", "removed", "cgroup", cgroup), false);
                return false;
        }
        if (streq_ptr(cgroup, "/bad") || streq_ptr(cgroup, "/bad-last") || streq_ptr(cgroup, "/reason-bad")) {
                /* A kind of a later daemon, with fields of its own. */
                send_event(fd, json_pack("{s:s, s:s, s:i, s:[i]}", "kind", "no-such-kind", "cgroup", cgroup,
                                         "seq", 1, "novelty", 1), !streq(cgroup, "/bad-last"));
                if (streq(cgroup, "/bad-last"))
                        return false;
        }
        if (streq_ptr(cgroup, "/reason-bad"))
                return true;
        if (streq_ptr(cgroup, "/gone"))
                return false;

        if (streq_ptr(cgroup, "/flaky"))
                ++*n_flaky;
        send_event(fd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:b, s:O?}",
                                 "kind", "pressure", "cgroup", cgroup, "source", "inject",
                                 "level", level ? level : "low", "seq", streq_ptr(cgroup, "/flaky") ? (int) *n_flaky : 1,
                                 "count", 1, "missed", 0, "synthetic", 1,
                                 "resource", json_object_get(params, "resource")), true);
        return !(streq_ptr(cgroup, "/flaky") && *n_flaky == 1) && !streq_ptr(cgroup, "/hangup");
}

/* AcknowledgePrekill: see the list at the top. */
static void serve_acknowledge(int fd, json_t *params) {
        json_int_t id = json_integer_value(json_object_get(params, "id"));

        if (id == 7)
                send_json(fd, json_pack("{s:{}}", "parameters"));
        else if (id == 8)
                send_json(fd, json_pack("{s:s, s:{s:I}}", "error", "io.pressured.NoSuchPrekill", "parameters", "id", id));
        else if (id != 9)
                send_json(fd, json_pack("{s:s, s:{s:s}}", "error", "org.varlink.service.MethodNotFound",
                                        "parameters", "method", "io.pressured.AcknowledgePrekill"));
}

/* The fixture GetStatus answers with (test.SetStatus), or NULL for the built-in answer. */
static json_t *status_fixture;

static void serve_call(int fd, const char *method, json_t *params) {
        if (streq(method, "test.SetStatus")) {
                json_decref(status_fixture);
                status_fixture = json_incref(json_object_get(params, "reply"));
                send_json(fd, json_pack("{s:{}}", "parameters"));
        } else if (streq(method, "io.pressured.GetStatus") && status_fixture)
                send_json(fd, json_pack("{s:O}", "parameters", status_fixture));
        else if (streq(method, "io.pressured.Inject")) {
                /* Tells the test which resource it asked for: 3 for none (memory), 4 cpu, 5 io. */
                const char *res = json_string_value(json_object_get(params, "resource"));

                send_json(fd, json_pack("{s:{s:i}}", "parameters", "delivered",
                                        !res ? 3 : streq(res, "cpu") ? 4 : streq(res, "io") ? 5 : 6));
        }
        else if (streq(method, "io.pressured.GetStatus"))
                send_json(fd, json_pack("{s:{s:s, s:i, s:I, s:i, s:{s:i}, s:[{s:s, s:s, s:s, s:{s:{s:s, s:I, s:I}}, "
                                        "s:i, s:{s:I, s:I, s:i, s:f}, s:[{s:I, s:I, s:I, s:I, s:I, s:i, s:s}]}]}}",
                                        "parameters", "version", "9.9", "clients", 1,
                                        "uptime_us", (json_int_t) 5000000, "subscriptions", 2,
                                        "counters", "events_read", 17,
                                        "registrations", "cgroup", "/r", "source", "psi", "resource", "io",
                                        "trigger", "psi", "stall", "some", "threshold_us", (json_int_t) 100000,
                                        "window_us", (json_int_t) 1000000, "subscribers", 2,
                                        "episode", "active_since_us", (json_int_t) 90, "duration_us",
                                        (json_int_t) 10, "events", 1, "peak", 3.5,
                                        "history", "start_us", (json_int_t) 10, "end_us", (json_int_t) 30,
                                        "start_time_us", (json_int_t) 1010, "end_time_us", (json_int_t) 1030,
                                        "duration_us", (json_int_t) 20, "events", 4, "peak_level", "medium"));
        else if (streq(method, "io.pressured.Silent"))
                return; /* never answers */
        else if (streq(method, "io.pressured.AcknowledgePrekill"))
                serve_acknowledge(fd, params);
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
                        if (!streq(method, "io.pressured.Silent"))
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
        const pressure_error *error = pressure_event_get_error(e);

        *x = (Recorded) { .kind = pressure_event_get_kind(e), .level = pressure_event_get_level(e),
                          .seq = pressure_event_get_seq(e), .error = error ? pressure_error_get_errno(error) : 0 };
        snprintf(x->cgroup, sizeof(x->cgroup), "%s", pressure_event_get_cgroup(e));
        /* An error event, and only that, carries an error object with a message. */
        ASSERT_EQ(x->kind == PRESSURE_EVENT_ERROR, error != NULL);
        if (error)
                ASSERT_TRUE(pressure_error_get_message(error) && *pressure_error_get_message(error));
        if (pressure_error_get_name(error))
                snprintf(x->error_name, sizeof(x->error_name), "%s", pressure_error_get_name(error));
        if (pressure_error_get_parameters(error))
                snprintf(x->error_params, sizeof(x->error_params), "%s", pressure_error_get_parameters(error));
        /* Raw JSON is there for everything the daemon sent. */
        if (x->kind == PRESSURE_EVENT_RECONNECTED || x->kind == PRESSURE_EVENT_ERROR)
                ASSERT_TRUE(pressure_event_get_json(e) == NULL);
        else {
                json_t *j = pressure_event_get_json(e) ? json_loads(pressure_event_get_json(e), 0, NULL) : NULL;
                ASSERT_TRUE(j);
                json_decref(j);
        }
        if (r->free_on_first_pressure && x->kind == PRESSURE_EVENT_PRESSURE)
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
        k = pressure_client_subscribe(c, s, on_event, r, ret, NULL);
        pressure_selector_free(s);
        return k;
}

/* ---- Tests ------------------------------------------------------------------------------ */

static pressure_subscription *kinds_sub;

static uint64_t node_value(const pressure_protection_node *n, pressure_protection_value what) {
        uint64_t v = 0;

        ASSERT_OK(pressure_protection_node_get_value(n, what, &v));
        return v;
}

static int on_kinds(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        const pressure_protection_node *node;
        const pressure_episode *ep;
        uint64_t threshold, window, total;
        pressure_stall stall;
        unsigned *n = userdata;
        double avg;
        json_t *j = json_loads(pressure_event_get_json(e), 0, NULL);

        ASSERT_TRUE(sub == kinds_sub);
        ASSERT_TRUE(j);
        ASSERT_STREQ(pressure_event_get_cgroup(e), "/kinds");
        switch ((*n)++) {
        case 0:
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_SUBSCRIBED);
                ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_PSI);
                ASSERT_EQ(pressure_event_is_adjusted(e), 1);
                /* Adjusted without a reason, as a daemon before 0.2 says it. */
                ASSERT_TRUE(pressure_event_get_adjusted_reason(e) == NULL);
                /* The server echoes the request as the trigger: the builder's PSI spec. */
                ASSERT_OK(pressure_trigger_get_psi(pressure_event_get_trigger(e), &stall, &threshold, &window));
                ASSERT_EQ(stall, PRESSURE_STALL_FULL);
                ASSERT_U64_EQ(threshold, 150000);
                ASSERT_U64_EQ(window, 2000000);
                ASSERT_ERR(pressure_trigger_get_vmpressure(pressure_event_get_trigger(e), NULL, NULL), ENODATA);
                ASSERT_EQ(json_integer_value(json_object_get(json_object_get(j, "trigger"), "min_interval_ms")), 250);
                ASSERT_OK(pressure_event_get_psi_avg(e, PRESSURE_STALL_SOME, 10, &avg));
                ASSERT_TRUE(avg == 1.5);
                ASSERT_OK(pressure_event_get_psi_total(e, PRESSURE_STALL_SOME, &total));
                ASSERT_U64_EQ(total, 123456);
                ASSERT_ERR(pressure_event_get_psi_avg(e, PRESSURE_STALL_SOME, 11, &avg), EINVAL);
                /* The active episode rides along. */
                ASSERT_TRUE(pressure_event_get_episode(e));
                ep = pressure_event_get_episode(e);
                ASSERT_EQ(pressure_episode_is_active(ep), 1);
                ASSERT_U64_EQ(pressure_episode_get_start_us(ep), 40);
                ASSERT_U64_EQ(pressure_episode_get_duration_us(ep), 1500000);
                ASSERT_U64_EQ(pressure_episode_get_events(ep), 3);
                ASSERT_OK(pressure_episode_get_peak(ep, &avg));
                ASSERT_TRUE(avg == 12.5);
                ASSERT_EQ(pressure_episode_get_peak_level(ep), PRESSURE_LEVEL_NONE);
                break;
        case 1:
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_PRESSURE);
                ASSERT_EQ(pressure_event_get_level(e), PRESSURE_LEVEL_MEDIUM);
                ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_PSI);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 1);
                ASSERT_U64_EQ(pressure_event_get_count(e), 2);
                ASSERT_U64_EQ(pressure_event_get_missed(e), 1);
                ASSERT_U64_EQ(pressure_event_get_time_us(e), 1700000000000000ULL);
                ASSERT_U64_EQ(pressure_event_get_monotonic_us(e), 42);
                ASSERT_EQ(pressure_event_is_synthetic(e), 0);
                ASSERT_OK(pressure_event_get_psi_avg(e, PRESSURE_STALL_SOME, 60, &avg));
                ASSERT_TRUE(avg == 0.25);
                ASSERT_OK(pressure_event_get_psi_avg(e, PRESSURE_STALL_SOME, 300, &avg));
                ASSERT_TRUE(avg == 0);
                ASSERT_OK(pressure_event_get_psi_avg(e, PRESSURE_STALL_FULL, 10, &avg));
                ASSERT_TRUE(avg == 0.5);
                ASSERT_OK(pressure_event_get_psi_total(e, PRESSURE_STALL_FULL, &total));
                ASSERT_U64_EQ(total, 789);
                ASSERT_TRUE(pressure_event_get_protection_node(e));
                ASSERT_U64_EQ(node_value(pressure_event_get_protection_node(e), PRESSURE_PROTECTION_USAGE), 1288490188);
                ASSERT_TRUE(strstr(pressure_event_get_json(e), "extra_field_of_a_newer_daemon"));
                break;
        case 2:
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_MEMORY_EVENTS);
                ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_MEMORY_EVENTS);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 2);
                ASSERT_OK(pressure_event_get_memory_event(e, PRESSURE_MEMORY_EVENT_LOW, &total));
                ASSERT_OK(pressure_event_get_memory_event(e, PRESSURE_MEMORY_EVENT_OOM, &total));
                ASSERT_ERR(pressure_event_get_memory_event(e, PRESSURE_MEMORY_EVENT_OOM_GROUP_KILL, &total), ENODATA);
                ASSERT_OK(pressure_event_get_memory_event(e, PRESSURE_MEMORY_EVENT_HIGH, &total));
                ASSERT_U64_EQ(total, 7);
                ASSERT_OK(pressure_event_get_memory_event(e, PRESSURE_MEMORY_EVENT_MAX, &total));
                ASSERT_U64_EQ(total, 3);
                ASSERT_OK(pressure_event_get_memory_event(e, PRESSURE_MEMORY_EVENT_OOM_KILL, &total));
                ASSERT_U64_EQ(total, 1);
                ASSERT_OK(pressure_event_get_memory_event_delta(e, PRESSURE_MEMORY_EVENT_HIGH, &total));
                ASSERT_U64_EQ(total, 2);
                ASSERT_OK(pressure_event_get_memory_event_delta(e, PRESSURE_MEMORY_EVENT_OOM_KILL, &total));
                ASSERT_ERR(pressure_event_get_memory_event_delta(e, PRESSURE_MEMORY_EVENT_LOW, &total), ENODATA);
                ASSERT_U64_EQ(pressure_event_get_monotonic_us(e), 43);
                break;
        case 3:
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_PROTECTION);
                ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_PROTECTION);
                ASSERT_EQ(pressure_event_get_protection_state(e), PRESSURE_PROTECTION_LOW);
                ASSERT_EQ(pressure_event_get_previous_protection_state(e), PRESSURE_PROTECTION_MIN);
                node = pressure_event_get_protection_node(e);
                ASSERT_TRUE(node);
                ASSERT_STREQ(pressure_protection_node_get_cgroup(node), "/kinds");
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_USAGE), 1288490188);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_MIN_SETTING), PRESSURE_UNLIMITED);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_LOW_SETTING), 2147483648ULL);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_EMIN), PRESSURE_UNLIMITED);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_ELOW), 1073741824);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_MIN_USAGE), 1288490188);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_LOW_USAGE), 1288490188);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_CHILDREN_MIN_USAGE), 5);
                ASSERT_U64_EQ(node_value(node, PRESSURE_PROTECTION_CHILDREN_LOW_USAGE), 7);
                ASSERT_ERR(pressure_protection_node_get_value(node, (pressure_protection_value) 99, &total), EINVAL);
                ASSERT_EQ(pressure_protection_node_get_state(node), PRESSURE_PROTECTION_LOW);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 3);
                break;
        case 4:
                ep = pressure_event_get_episode(e);
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_CLEARED);
                ASSERT_STREQ(pressure_event_kind_to_string(pressure_event_get_kind(e)), "cleared");
                ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_PSI);
                ASSERT_EQ(pressure_event_get_level(e), PRESSURE_LEVEL_MEDIUM);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 4);
                ASSERT_U64_EQ(pressure_event_get_monotonic_us(e), 45);
                ASSERT_TRUE(ep);
                ASSERT_EQ(pressure_episode_is_active(ep), 0);
                ASSERT_U64_EQ(pressure_episode_get_duration_us(ep), 4000000);
                ASSERT_U64_EQ(pressure_episode_get_events(ep), 5);
                ASSERT_OK(pressure_episode_get_peak(ep, &avg));
                ASSERT_TRUE(avg == 37.25);
                ASSERT_EQ(pressure_episode_get_peak_level(ep), PRESSURE_LEVEL_NONE);
                break;
        case 5:
                ep = pressure_event_get_episode(e);
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_CLEARED);
                ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_VMPRESSURE);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 5);
                ASSERT_TRUE(ep);
                ASSERT_U64_EQ(pressure_episode_get_events(ep), 40);
                ASSERT_ERR(pressure_episode_get_peak(ep, &avg), ENODATA);
                ASSERT_EQ(pressure_episode_get_peak_level(ep), PRESSURE_LEVEL_CRITICAL);
                break;
        case 6:
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_TRIGGER_CHANGED);
                ASSERT_STREQ(pressure_event_kind_to_string(pressure_event_get_kind(e)), "trigger_changed");
                ASSERT_EQ(pressure_event_get_level(e), PRESSURE_LEVEL_MEDIUM);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 6);
                ASSERT_OK(pressure_trigger_get_psi(pressure_event_get_trigger(e), &stall, &threshold, &window));
                ASSERT_EQ(stall, PRESSURE_STALL_SOME);
                ASSERT_U64_EQ(threshold, 300000);
                ASSERT_U64_EQ(window, 4000000);
                ASSERT_EQ(pressure_trigger_get_level(pressure_event_get_trigger(e)), PRESSURE_LEVEL_MEDIUM);
                ASSERT_EQ(pressure_event_is_adjusted(e), 0);
                ASSERT_TRUE(pressure_event_get_episode(e) == NULL);
                break;
        case 7:
                ep = pressure_event_get_episode(e);
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_CLEARED);
                ASSERT_TRUE(ep);
                ASSERT_U64_EQ(pressure_episode_get_events(ep), 1);
                /* "peak": null, unknown: no figure. */
                ASSERT_ERR(pressure_episode_get_peak(ep, &avg), ENODATA);
                ASSERT_EQ(pressure_episode_get_peak_level(ep), PRESSURE_LEVEL_NONE);
                break;
        case 8:
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_REMOVED);
                ASSERT_TRUE(pressure_event_get_episode(e) == NULL);
                break;
        default:
                TEST_FAIL("unexpected event %s", pressure_event_kind_to_string(pressure_event_get_kind(e)));
        }
        json_decref(j);
        return 0;
}

static bool kinds_done(void *data) {
        return *(unsigned *) data >= 9;
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
        ASSERT_OK(pressure_client_subscribe(c, s, on_kinds, &n, &kinds_sub, NULL));
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
        ASSERT_EQ(n, 9);
        /* "removed" ends the stream: no reconnect, nothing due. */
        ASSERT_EQ(pressure_subscription_is_active(kinds_sub), 0);
        ASSERT_EQ(pressure_client_get_n_active(c), 0);
        ASSERT_OK(pressure_client_get_timeout(c, &timeout));
        ASSERT_U64_EQ(timeout, PRESSURE_TIMEOUT_INFINITE);
        pressure_client_free(c);
}

/* The errno of each daemon error: one per error (libpressure(3), ERRORS). */
static const struct {
        const char *cgroup;
        int error;
        const char *name;
        const char *message;
} error_table[] = {
        { "/err/PermissionDenied",       EACCES,        "io.pressured.PermissionDenied",   "Permission denied" },
        { "/err/NoSuchCgroup",           ENOENT,        "io.pressured.NoSuchCgroup",       "No such cgroup: /err/NoSuchCgroup" },
        { "/err/InvalidCgroupPath",      EBADR,         "io.pressured.InvalidCgroupPath",  "Invalid cgroup path: /err/InvalidCgroupPath" },
        { "/err/InvalidTrigger",         EDOM,          "io.pressured.InvalidTrigger",     "Invalid trigger" },
        { "/err/LimitExceeded",          EUSERS,        "io.pressured.LimitExceeded",      "Limit exceeded" },
        { "/err/SourceUnavailable",      EOPNOTSUPP,    "io.pressured.SourceUnavailable",  "Source unavailable" },
        { "/err/ConfigurationRejected",  EBADE,         "io.pressured.ConfigurationRejected", "Configuration rejected" },
        { "/err/InternalError",          EIO,           "io.pressured.InternalError",      "Internal error of the daemon" },
        { "/verr/InvalidParameter",      EINVAL,        "org.varlink.service.InvalidParameter", "Invalid parameter" },
        { "/verr/MethodNotFound",        ENXIO,         "org.varlink.service.MethodNotFound", "Method not found" },
        { "/verr/InterfaceNotFound",     EADDRNOTAVAIL, "org.varlink.service.InterfaceNotFound", "Interface not found" },
        { "/verr/ExpectedMore",          EPROTO,        "org.varlink.service.ExpectedMore", "Expected more" },
        { "/err/SomethingNew",           EREMOTEIO,     "io.pressured.SomethingNew",       "The daemon answered io.pressured.SomethingNew" },
};

/* Handlers of calls that must not be made. */
static int on_headroom_unused(pressure_call *call, pressure_headroom *h, const pressure_error *error, void *userdata) {
        TEST_FAIL("%s", "a call with an invalid cgroup was made");
        return 0;
}

static int on_protection_unused(pressure_call *call, pressure_protection *p, const pressure_error *error,
                                void *userdata) {
        TEST_FAIL("%s", "a call with an invalid cgroup was made");
        return 0;
}

static int on_monitor_unused(pressure_monitor *m, const pressure_event *e, void *userdata) {
        TEST_FAIL("%s", "a monitor with an invalid cgroup was made");
        return 0;
}

static void test_errors(void) {
        pressure_client *c = client_new();
        Recorder rec = {};
        pressure_subscription *sub = NULL;
        pressure_error *error = NULL;
        pressure_status *status = NULL;
        pressure_protection *prot = NULL;
        uint64_t delivered = 0;
        int64_t value;
        char *json = NULL;

        for (size_t i = 0; i < ELEMENTSOF(error_table); i++) {
                pressure_selector *s;

                /* No two errors share an errno. */
                for (size_t k = 0; k < i; k++)
                        ASSERT_TRUE(error_table[k].error != error_table[i].error);
                ASSERT_OK(pressure_selector_new(&s));
                ASSERT_OK(pressure_selector_set_cgroup(s, error_table[i].cgroup));
                ASSERT_EQ(pressure_client_subscribe(c, s, on_event, &rec, &sub, &error), -error_table[i].error);
                pressure_selector_free(s);
                ASSERT_TRUE(sub == NULL);
                ASSERT_EQ(pressure_error_get_errno(error), -error_table[i].error);
                ASSERT_STREQ(pressure_error_get_name(error), error_table[i].name);
                ASSERT_STREQ(pressure_error_get_parameter_string(error, "cgroup"), error_table[i].cgroup);
                ASSERT_TRUE(strstr(pressure_error_get_parameters(error), error_table[i].cgroup));
                ASSERT_STREQ(pressure_error_get_message(error), error_table[i].message);
                ASSERT_ERR(pressure_error_get_parameter_integer(error, "value", &value), ENODATA);
                error = pressure_error_free(error);
        }
        ASSERT_EQ(pressure_client_get_n_active(c), 0);

        /* Blocking calls: results, and errors mapped the same way; ret_error is NULL on success. */
        error = (pressure_error *) 1;
        ASSERT_OK(pressure_client_inject(c, "/x", PRESSURE_LEVEL_CRITICAL, &delivered, &error));
        ASSERT_U64_EQ(delivered, 3);
        ASSERT_TRUE(error == NULL);
        ASSERT_ERR(pressure_client_inject(c, "/x", PRESSURE_LEVEL_NONE, NULL, &error), EINVAL);
        ASSERT_TRUE(pressure_error_get_name(error) == NULL); /* a local error */
        ASSERT_EQ(pressure_error_get_errno(error), -EINVAL);
        ASSERT_STREQ(pressure_error_get_message(error), strerror(EINVAL));
        error = pressure_error_free(error);
        ASSERT_ERR(pressure_client_reload(c, NULL), EACCES);
        ASSERT_ERR(pressure_client_reload(c, &error), EACCES);
        ASSERT_STREQ(pressure_error_get_name(error), "io.pressured.PermissionDenied");
        ASSERT_STREQ(pressure_error_get_parameters(error), "{\"reason\":\"not root\"}");
        ASSERT_STREQ(pressure_error_get_message(error), "Permission denied: not root");
        error = pressure_error_free(error);

        ASSERT_OK(pressure_client_get_status(c, &status, NULL));
        ASSERT_STREQ(pressure_status_get_version(status), "9.9");
        status = pressure_status_unref(status);
        ASSERT_OK(pressure_client_get_protection(c, "/p", &prot, NULL));
        ASSERT_EQ(pressure_protection_get_n_nodes(prot), 1);
        ASSERT_STREQ(pressure_protection_node_get_cgroup(pressure_protection_get_node(prot, 0)), "/p");
        ASSERT_TRUE(pressure_protection_get_node(prot, 1) == NULL);
        prot = pressure_protection_unref(prot);
        ASSERT_ERR(pressure_client_call(c, "io.pressured.Nope", "{}", NULL, &error), ENXIO);
        ASSERT_STREQ(pressure_error_get_parameter_string(error, "method"), "io.pressured.Nope");
        error = pressure_error_free(error);
        ASSERT_ERR(pressure_client_call(c, "io.pressured.GetStatus", "[1]", NULL, NULL), EINVAL);
        ASSERT_OK(pressure_client_call(c, "io.pressured.GetStatus", NULL, &json, NULL));
        ASSERT_TRUE(strstr(json, "\"version\":\"9.9\""));
        free(json);

        /* No daemon at all: an error of the library's own that says so and names the socket. */
        ASSERT_OK(pressure_client_set_socket(c, "/nonexistent/pressured.sock"));
        ASSERT_ERR(pressure_client_inject(c, NULL, PRESSURE_LEVEL_LOW, NULL, &error), ECONNREFUSED);
        ASSERT_STREQ(pressure_error_get_name(error), PRESSURE_ERROR_DAEMON_NOT_RUNNING);
        ASSERT_STREQ(pressure_error_get_name(error), "libpressure.DaemonNotRunning");
        ASSERT_STREQ(pressure_error_get_parameter_string(error, "socket"), "/nonexistent/pressured.sock");
        ASSERT_STREQ(pressure_error_get_message(error),
                     "pressured is not running: there is no socket /nonexistent/pressured.sock");
        error = pressure_error_free(error);
        {
                pressure_selector *s;

                ASSERT_OK(pressure_selector_new(&s));
                ASSERT_ERR(pressure_client_subscribe(c, s, on_event, &rec, NULL, &error), ECONNREFUSED);
                pressure_selector_free(s);
                ASSERT_STREQ(pressure_error_get_name(error), PRESSURE_ERROR_DAEMON_NOT_RUNNING);
                error = pressure_error_free(error);
        }
        /* A cgroup path no daemon accepts: the same -EINVAL and error from every call that takes one,
         * naming the rule it breaks, before anything is sent (no daemon here to send it to). */
        {
                static const struct {
                        const char *path, *shown, *reason;
                } bad[] = {
                        { "/\xff", "/\\xff", "it is not valid UTF-8" },
                        { "/a\tb", "/a\\x09b", "it contains a control character, such as a tab or a newline" },
                        { "/a/../b", "/a/../b", "it has a '..' component" },
                        { "a", "a", "it is not absolute: a cgroup path starts with '/'" },
                };
                pressure_protection *p = NULL;
                pressure_headroom *h = NULL;
                pressure_selector *s;
                pressure_monitor *m = NULL;
                uint64_t untouched = 7;
                char message[128];

                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        snprintf(message, sizeof(message), "Invalid cgroup path '%s': %s", bad[i].shown, bad[i].reason);
                        ASSERT_ERR(pressure_client_get_headroom(c, bad[i].path, &h, &error), EINVAL);
                        ASSERT_STREQ(pressure_error_get_name(error), PRESSURE_ERROR_INVALID_CGROUP_PATH);
                        ASSERT_STREQ(pressure_error_get_name(error), "libpressure.InvalidCgroupPath");
                        ASSERT_STREQ(pressure_error_get_parameter_string(error, "cgroup"), bad[i].shown);
                        ASSERT_STREQ(pressure_error_get_parameter_string(error, "reason"), bad[i].reason);
                        ASSERT_STREQ(pressure_error_get_message(error), message);
                        error = pressure_error_free(error);
                        ASSERT_ERR(pressure_client_get_protection(c, bad[i].path, &p, &error), EINVAL);
                        ASSERT_STREQ(pressure_error_get_message(error), message);
                        error = pressure_error_free(error);
                        ASSERT_ERR(pressure_client_inject(c, bad[i].path, PRESSURE_LEVEL_LOW, &untouched, &error),
                                   EINVAL);
                        ASSERT_STREQ(pressure_error_get_message(error), message);
                        error = pressure_error_free(error);
                        ASSERT_ERR(pressure_client_get_headroom_async(c, bad[i].path, on_headroom_unused, NULL,
                                                                      NULL), EINVAL);
                        ASSERT_ERR(pressure_client_get_protection_async(c, bad[i].path, on_protection_unused, NULL,
                                                                        NULL), EINVAL);
                        ASSERT_ERR(pressure_monitor_new(&m, bad[i].path, on_monitor_unused, NULL), EINVAL);
                        ASSERT_OK(pressure_selector_new(&s));
                        ASSERT_ERR(pressure_selector_set_cgroup(s, bad[i].path), EINVAL);
                        pressure_selector_free(s);
                }
                ASSERT_TRUE(p == NULL && h == NULL && m == NULL && untouched == 7);
        }
        /* A socket file nobody listens on: the same, in its own words. */
        {
                _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                char path[sizeof(sa.sun_path) + 8];

                ASSERT_TRUE(snprintf(path, sizeof(sa.sun_path), "%s.st", socket_path) < (int) sizeof(sa.sun_path));
                ASSERT_TRUE(strlen(path) < sizeof(sa.sun_path));
                memcpy(sa.sun_path, path, strlen(path) + 1);
                (void) unlink(path);
                ASSERT_TRUE(fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0);
                ASSERT_OK(pressure_client_set_socket(c, path));
                ASSERT_ERR(pressure_client_get_status(c, &status, &error), ECONNREFUSED);
                ASSERT_STREQ(pressure_error_get_name(error), PRESSURE_ERROR_DAEMON_NOT_RUNNING);
                ASSERT_TRUE(strstr(pressure_error_get_message(error), "pressured is not running: nothing listens on "));
                error = pressure_error_free(error);
                (void) unlink(path);
        }
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

        if (pressure_event_get_kind(e) == PRESSURE_EVENT_SUBSCRIBED && !echo->trigger) {
                json_t *j = json_loads(pressure_event_get_json(e), 0, NULL);
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
        ASSERT_OK(pressure_client_subscribe(c, s, on_echo, &echo, NULL, NULL));
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

/* Kills replace the source set before, and keep the cgroup and the interval. */
static void setup_kills(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_cgroup(s, "/user.slice"));
        ASSERT_OK(pressure_selector_set_memory_events(s));
        ASSERT_OK(pressure_selector_set_kills(s));
        ASSERT_OK(pressure_selector_set_min_interval_ms(s, 500));
}

/* A pressure source set after kills replaces them. */
static void setup_kills_replaced(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_kills(s));
        ASSERT_OK(pressure_selector_set_level(s, PRESSURE_LEVEL_CRITICAL));
}

static void setup_cpu_level(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_resource(s, PRESSURE_RESOURCE_CPU));
        ASSERT_OK(pressure_selector_set_level(s, PRESSURE_LEVEL_MEDIUM));
}

/* The resource stays when the source changes; memory is not sent. */
static void setup_io_psi(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_resource(s, PRESSURE_RESOURCE_IO));
        ASSERT_OK(pressure_selector_set_psi(s, PRESSURE_STALL_FULL, 100000, 2000000));
}

static void setup_memory_explicit(pressure_selector *s) {
        ASSERT_OK(pressure_selector_set_resource(s, PRESSURE_RESOURCE_CPU));
        ASSERT_OK(pressure_selector_set_resource(s, PRESSURE_RESOURCE_MEMORY));
}

static void test_requests(void) {
        check_request(setup_vmpressure, "{\"cgroup\":\"/v1\",\"vmpressure\":{\"level\":\"critical\",\"mode\":\"hierarchy\"}}");
        check_request(setup_vmpressure_nomode, "{\"vmpressure\":{\"level\":\"low\"}}");
        check_request(setup_memory_events, "{\"cgroup\":\"/m\",\"memory_events\":true}");
        check_request(setup_protection, "{\"min_interval_ms\":1000,\"protection\":true}");
        check_request(setup_default, "{\"level\":\"low\"}");
        check_request(setup_cpu_level, "{\"level\":\"medium\",\"resource\":\"cpu\"}");
        check_request(setup_io_psi, "{\"psi\":{\"stall\":\"full\",\"threshold_us\":100000,\"window_us\":2000000},"
                                    "\"resource\":\"io\"}");
        check_request(setup_memory_explicit, "{\"level\":\"low\"}");
        check_request(setup_kills, "{\"cgroup\":\"/user.slice\",\"kills\":true,\"min_interval_ms\":500}");
        check_request(setup_kills_replaced, "{\"level\":\"critical\"}");
}

/* libpressure 1.2: what a kills subscription saw. */
typedef struct Kills {
        unsigned n;
        pressure_event_kind kinds[8];
        int error;
} Kills;

static void check_kills_subscribed(const pressure_event *e) {
        ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_KILLS);
        ASSERT_EQ(pressure_event_get_resource(e), PRESSURE_RESOURCE_MEMORY);
        ASSERT_U64_EQ(pressure_event_get_n_kill_sources(e), 2);
        ASSERT_STREQ(pressure_event_get_kill_source(e, 0), "kernel");
        ASSERT_STREQ(pressure_event_get_kill_source(e, 1), "systemd-oomd");
        ASSERT_TRUE(pressure_event_get_kill_source(e, 2) == NULL);
        ASSERT_TRUE(pressure_event_get_killed_by(e) == NULL);
        ASSERT_TRUE(pressure_event_get_reason(e) == NULL);
}

static int on_kills(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        Kills *k = userdata;
        unsigned i = k->n++;

        (void) sub;
        ASSERT_TRUE(i < ELEMENTSOF(k->kinds));
        k->kinds[i] = pressure_event_get_kind(e);
        if (k->kinds[i] == PRESSURE_EVENT_ERROR) {
                k->error = pressure_error_get_errno(pressure_event_get_error(e));
                return 0;
        }
        if (i == 0)
                check_kills_subscribed(e);
        else if (i == 1) {
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_KILLED);
                ASSERT_STREQ(pressure_event_kind_to_string(PRESSURE_EVENT_KILLED), "killed");
                ASSERT_EQ(pressure_event_get_source(e), PRESSURE_SOURCE_KILLS);
                ASSERT_STREQ(pressure_event_get_cgroup(e), "/user.slice/app-firefox.scope");
                ASSERT_STREQ(pressure_event_get_killed_by(e), "systemd-oomd");
                ASSERT_STREQ(pressure_event_get_reason(e), "memory-pressure");
                ASSERT_U64_EQ(pressure_event_get_count(e), 1);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 1);
                ASSERT_U64_EQ(pressure_event_get_missed(e), 0);
                ASSERT_U64_EQ(pressure_event_get_time_us(e), 1700000000000010ULL);
                ASSERT_U64_EQ(pressure_event_get_monotonic_us(e), 50);
                /* Only a confirmation lists the killers. */
                ASSERT_U64_EQ(pressure_event_get_n_kill_sources(e), 0);
                ASSERT_TRUE(pressure_event_get_kill_source(e, 0) == NULL);
        } else if (i == 2) {
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_KILLED);
                ASSERT_STREQ(pressure_event_get_cgroup(e), "/user.slice");
                ASSERT_STREQ(pressure_event_get_killed_by(e), "kernel");
                ASSERT_STREQ(pressure_event_get_reason(e), "oom_kill");
                ASSERT_U64_EQ(pressure_event_get_count(e), 2);
                ASSERT_U64_EQ(pressure_event_get_seq(e), 3);
                ASSERT_U64_EQ(pressure_event_get_missed(e), 1);
        } else {
                ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_REMOVED);
                ASSERT_TRUE(pressure_event_get_killed_by(e) == NULL);
        }
        return 0;
}

static unsigned kills_want;
static bool kills_done(void *data) {
        return ((Kills *) data)->n >= kills_want;
}

static Kills subscribe_kills(const char *cgroup, unsigned n) {
        pressure_client *c = client_new();
        pressure_selector *s;
        Kills k = {};

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, cgroup));
        ASSERT_OK(pressure_selector_set_kills(s));
        ASSERT_OK(pressure_client_set_reconnect(c, 0));
        ASSERT_OK(pressure_client_subscribe(c, s, on_kills, &k, NULL, NULL));
        pressure_selector_free(s);
        kills_want = n;
        run_until(c, kills_done, &k);
        pressure_client_free(c);
        return k;
}

static void test_kills(void) {
        Kills k;

        ASSERT_ERR(pressure_selector_set_kills(NULL), EINVAL);
        ASSERT_TRUE(pressure_event_get_killed_by(NULL) == NULL);
        ASSERT_TRUE(pressure_event_get_reason(NULL) == NULL);
        ASSERT_U64_EQ(pressure_event_get_n_kill_sources(NULL), 0);
        ASSERT_TRUE(pressure_event_get_kill_source(NULL, 0) == NULL);
        ASSERT_STREQ(pressure_source_to_string(PRESSURE_SOURCE_KILLS), "kills");

        /* Subscribed, a kill by systemd-oomd, two by the kernel, removed: the stream ends. */
        k = subscribe_kills("/user.slice", 4);
        ASSERT_EQ(k.n, 4);
        ASSERT_EQ(k.kinds[3], PRESSURE_EVENT_REMOVED);

        /* A kill that does not say who killed is malformed: the subscription ends with -EBADMSG. */
        k = subscribe_kills("/kills-bad-by", 2);
        ASSERT_EQ(k.kinds[0], PRESSURE_EVENT_SUBSCRIBED);
        ASSERT_EQ(k.kinds[1], PRESSURE_EVENT_ERROR);
        ASSERT_EQ(k.error, -EBADMSG);

        /* So is a list of killers with something other than names in it. */
        k = subscribe_kills("/kills-bad-sources", 1);
        ASSERT_EQ(k.kinds[0], PRESSURE_EVENT_ERROR);
        ASSERT_EQ(k.error, -EBADMSG);
}

/* The resources of the subscribed and pressure events of one subscription. */
typedef struct Resources {
        pressure_resource subscribed, pressure;
        bool done;
} Resources;

static int on_resources(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        Resources *r = userdata;

        if (pressure_event_get_kind(e) == PRESSURE_EVENT_SUBSCRIBED)
                r->subscribed = pressure_event_get_resource(e);
        else if (pressure_event_get_kind(e) == PRESSURE_EVENT_PRESSURE) {
                r->pressure = pressure_event_get_resource(e);
                r->done = true;
        }
        return 0;
}

static bool resources_done(void *data) {
        return ((Resources *) data)->done;
}

static Resources subscribe_resource(const char *cgroup, pressure_resource resource) {
        pressure_client *c = client_new();
        pressure_selector *s;
        Resources r = {};

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, cgroup));
        if (resource != PRESSURE_RESOURCE_NONE)
                ASSERT_OK(pressure_selector_set_resource(s, resource));
        ASSERT_OK(pressure_client_subscribe(c, s, on_resources, &r, NULL, NULL));
        pressure_selector_free(s);
        run_until(c, resources_done, &r);
        pressure_client_free(c);
        return r;
}

static int on_inject_value(pressure_call *call, uint64_t delivered, const pressure_error *error, void *userdata) {
        ASSERT_TRUE(!error);
        *(uint64_t *) userdata = delivered;
        return 0;
}

static bool inject_value_done(void *data) {
        return *(uint64_t *) data != 0;
}

/* libpressure 1.1: resources of selectors, events and Inject. */
static void test_resources(void) {
        pressure_client *c = client_new();
        pressure_selector *s;
        pressure_error *error = NULL;
        uint64_t delivered = 0;
        Resources r;

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_ERR(pressure_selector_set_resource(s, PRESSURE_RESOURCE_NONE), EINVAL);
        ASSERT_ERR(pressure_selector_set_resource(s, (pressure_resource) 9), EINVAL);
        ASSERT_ERR(pressure_selector_set_resource(NULL, PRESSURE_RESOURCE_CPU), EINVAL);
        ASSERT_OK(pressure_selector_set_resource(s, PRESSURE_RESOURCE_IO));
        pressure_selector_free(s);
        ASSERT_STREQ(pressure_resource_to_string(PRESSURE_RESOURCE_CPU), "cpu");
        ASSERT_STREQ(pressure_resource_to_string(PRESSURE_RESOURCE_MEMORY), "memory");
        ASSERT_TRUE(pressure_resource_to_string(PRESSURE_RESOURCE_NONE) == NULL);
        ASSERT_TRUE(pressure_resource_to_string((pressure_resource) 9) == NULL);
        ASSERT_EQ(pressure_resource_from_string("io"), PRESSURE_RESOURCE_IO);
        ASSERT_EQ(pressure_resource_from_string("irq"), -EINVAL);
        ASSERT_EQ(pressure_resource_from_string(NULL), -EINVAL);
        ASSERT_EQ(pressure_event_get_resource(NULL), PRESSURE_RESOURCE_NONE);
        ASSERT_EQ(pressure_registration_get_resource(NULL), PRESSURE_RESOURCE_NONE);

        r = subscribe_resource("/r1", PRESSURE_RESOURCE_CPU);
        ASSERT_EQ(r.subscribed, PRESSURE_RESOURCE_CPU);
        ASSERT_EQ(r.pressure, PRESSURE_RESOURCE_CPU);
        r = subscribe_resource("/r2", PRESSURE_RESOURCE_IO);
        ASSERT_EQ(r.subscribed, PRESSURE_RESOURCE_IO);
        ASSERT_EQ(r.pressure, PRESSURE_RESOURCE_IO);
        /* A daemon that does not say means memory; one with a newer resource, none this version knows. */
        r = subscribe_resource("/r3", PRESSURE_RESOURCE_NONE);
        ASSERT_EQ(r.subscribed, PRESSURE_RESOURCE_MEMORY);
        ASSERT_EQ(r.pressure, PRESSURE_RESOURCE_MEMORY);
        r = subscribe_resource("/resource-new", PRESSURE_RESOURCE_NONE);
        ASSERT_EQ(r.subscribed, PRESSURE_RESOURCE_NONE);

        ASSERT_OK(pressure_client_inject_resource(c, "/x", PRESSURE_RESOURCE_CPU, PRESSURE_LEVEL_LOW, &delivered,
                                                  &error));
        ASSERT_U64_EQ(delivered, 4);
        ASSERT_OK(pressure_client_inject_resource(c, "/x", PRESSURE_RESOURCE_MEMORY, PRESSURE_LEVEL_LOW, &delivered,
                                                  NULL));
        ASSERT_U64_EQ(delivered, 3);
        ASSERT_ERR(pressure_client_inject_resource(c, "/x", PRESSURE_RESOURCE_NONE, PRESSURE_LEVEL_LOW, NULL, &error),
                   EINVAL);
        ASSERT_TRUE(error != NULL);
        pressure_error_free(error);
        ASSERT_ERR(pressure_client_inject_resource_async(c, "/x", (pressure_resource) 7, PRESSURE_LEVEL_LOW,
                                                         on_inject_value, &delivered, NULL), EINVAL);
        delivered = 0;
        ASSERT_OK(pressure_client_inject_resource_async(c, "/x", PRESSURE_RESOURCE_IO, PRESSURE_LEVEL_CRITICAL,
                                                        on_inject_value, &delivered, NULL));
        run_until(c, inject_value_done, &delivered);
        ASSERT_U64_EQ(delivered, 5);
        pressure_client_free(c);
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
        ASSERT_OK(pressure_client_subscribe(c, s, on_event, &rec, &b, NULL));
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
        /* The error comes with the event. */
        ASSERT_STREQ(rec.events[1].error_name, "io.pressured.NoSuchCgroup");
        ASSERT_STREQ(rec.events[1].error_params, "{\"cgroup\":\"/gone\"}");
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

        /* An event of a kind a later daemon added is not this version's: the stream goes on without it. */
        c = client_new();
        rec = (Recorder) {};
        ASSERT_OK(subscribe_cgroup(c, "/bad", &rec, &sub));
        want_n = 2;
        run_until(c, have_n, &rec);
        ASSERT_EQ(rec.events[1].kind, PRESSURE_EVENT_PRESSURE);
        ASSERT_EQ(pressure_subscription_is_active(sub), 1);
        pressure_client_free(c);

        /* Where the stream is to begin or end, a kind this version does not know is malformed: -EBADMSG. */
        for (unsigned i = 0; i < 2; i++) {
                c = client_new();
                rec = (Recorder) {};
                ASSERT_OK(pressure_client_set_reconnect(c, 0));
                ASSERT_OK(subscribe_cgroup(c, i == 0 ? "/bad-first" : "/bad-last", &rec, &sub));
                want_n = i + 1;
                run_until(c, have_n, &rec);
                ASSERT_EQ(rec.events[i].kind, PRESSURE_EVENT_ERROR);
                ASSERT_EQ(rec.events[i].error, -EBADMSG);
                ASSERT_EQ(pressure_subscription_is_active(sub), 0);
                pressure_client_free(c);
        }

        /* Waiting for a daemon that is not there yet. */
        server_stop(*server);
        (void) unlink(socket_path);
        c = client_new();
        rec = (Recorder) {};
        ASSERT_ERR(subscribe_cgroup(c, "/a", &rec, &sub), ECONNREFUSED);
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
        r->kinds[r->n++] = pressure_event_get_kind(e);
        if (pressure_event_get_kind(e) == PRESSURE_EVENT_SUBSCRIBED) {
                r->adjusted = pressure_event_is_adjusted(e);
                r->has_reason = reason != NULL;
                snprintf(r->reason, sizeof(r->reason), "%s", reason ?: "");
                /* The same pointer each time: valid as long as the event. */
                ASSERT_TRUE(reason == pressure_event_get_adjusted_reason(e));
        } else
                /* Only the confirmation carries a reason. */
                ASSERT_TRUE(reason == NULL);
        if (pressure_event_get_kind(e) == PRESSURE_EVENT_ERROR)
                r->error = pressure_error_get_errno(pressure_event_get_error(e));
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
        ASSERT_OK(pressure_client_subscribe(c, s, on_reason, seen, NULL, NULL));
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
        Recorder ok = {}, denied = {}, gone = {};
        pressure_subscription *sub_ok, *sub_denied, *sub_gone;

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

        /* No daemon: still answered through the handler, with the library's name for it. */
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
                ASSERT_EQ(none.events[0].error, -ECONNREFUSED);
                ASSERT_STREQ(none.events[0].error_name, PRESSURE_ERROR_DAEMON_NOT_RUNNING);
                ASSERT_EQ(pressure_client_get_n_active(lonely), 0);
                /* freed by the cleanup helpers, subscription first */
        }
        ASSERT_ERR(pressure_client_subscribe_async(c, NULL, on_event, NULL, NULL), EINVAL);
}

/* ---- Asynchronous calls ------------------------------------------------------------------ */

typedef struct CallSeen {
        unsigned n_calls, n_destroyed;
        int error;
        char error_name[64];
        uint64_t delivered;
        size_t n_nodes;
        char json[256];
        pressure_status *kept;
} CallSeen;

static unsigned calls_seen;

static void on_destroy(void *userdata) {
        ((CallSeen *) userdata)->n_destroyed++;
}

static void seen(pressure_call *call, CallSeen *w, bool has_result, const pressure_error *error) {
        ASSERT_TRUE(pressure_call_get_userdata(call) == w);
        ASSERT_TRUE(pressure_call_get_client(call) != NULL);
        ASSERT_EQ(has_result, error == NULL);
        ASSERT_EQ(w->n_destroyed, 0); /* destroyed after the callback */
        calls_seen++;
        w->n_calls++;
        w->error = error ? pressure_error_get_errno(error) : 0;
        snprintf(w->error_name, sizeof(w->error_name), "%s", pressure_error_get_name(error) ?: "");
}

static int on_status(pressure_call *call, pressure_status *status, const pressure_error *error, void *userdata) {
        CallSeen *w = userdata;

        seen(call, w, status != NULL, error);
        w->kept = pressure_status_ref(status);
        return 0;
}

static int on_protection(pressure_call *call, pressure_protection *p, const pressure_error *error, void *userdata) {
        CallSeen *w = userdata;

        seen(call, w, p != NULL, error);
        w->n_nodes = pressure_protection_get_n_nodes(p);
        return 0;
}

static int on_inject(pressure_call *call, uint64_t delivered, const pressure_error *error, void *userdata) {
        CallSeen *w = userdata;

        seen(call, w, error == NULL, error);
        w->delivered = delivered;
        return 0;
}

static int on_reply(pressure_call *call, const char *json, const pressure_error *error, void *userdata) {
        CallSeen *w = userdata;

        seen(call, w, json != NULL, error);
        snprintf(w->json, sizeof(w->json), "%s", json ?: "");
        return 0;
}

static unsigned calls_want;
static bool calls_done(void *data) {
        (void) data;
        return calls_seen >= calls_want;
}

/* The GetStatus() reply of the fake server, read through the typed result. */
static void check_status(const pressure_status *st) {
        const pressure_registration *reg;
        const pressure_episode *ep;
        uint64_t v, threshold, window;
        pressure_stall stall;
        double peak;

        ASSERT_STREQ(pressure_status_get_version(st), "9.9");
        ASSERT_U64_EQ(pressure_status_get_uptime_us(st), 5000000);
        ASSERT_U64_EQ(pressure_status_get_clients(st), 1);
        ASSERT_U64_EQ(pressure_status_get_subscriptions(st), 2);
        ASSERT_OK(pressure_status_get_counter(st, "events_read", &v));
        ASSERT_U64_EQ(v, 17);
        ASSERT_ERR(pressure_status_get_counter(st, "no_such_counter", &v), ENODATA);
        ASSERT_TRUE(strstr(pressure_status_get_json(st), "\"registrations\""));
        ASSERT_EQ(pressure_status_get_n_registrations(st), 1);
        ASSERT_TRUE(pressure_status_get_registration(st, 1) == NULL);
        /* This reply, like a daemon before 0.3, has no "reclaim". */
        ASSERT_EQ(pressure_status_get_n_reclaim(st), 0);
        reg = pressure_status_get_registration(st, 0);
        ASSERT_STREQ(pressure_registration_get_cgroup(reg), "/r");
        ASSERT_EQ(pressure_registration_get_source(reg), PRESSURE_SOURCE_PSI);
        ASSERT_EQ(pressure_registration_get_resource(reg), PRESSURE_RESOURCE_IO);
        ASSERT_U64_EQ(pressure_registration_get_subscribers(reg), 2);
        ASSERT_OK(pressure_trigger_get_psi(pressure_registration_get_trigger(reg), &stall, &threshold, &window));
        ASSERT_EQ(stall, PRESSURE_STALL_SOME);
        ASSERT_U64_EQ(threshold, 100000);
        ASSERT_U64_EQ(window, 1000000);
        ep = pressure_registration_get_episode(reg);
        ASSERT_EQ(pressure_episode_is_active(ep), 1);
        ASSERT_U64_EQ(pressure_episode_get_start_us(ep), 90);
        ASSERT_OK(pressure_episode_get_peak(ep, &peak));
        ASSERT_TRUE(peak == 3.5);
        ASSERT_EQ(pressure_registration_get_n_history(reg), 1);
        ASSERT_TRUE(pressure_registration_get_history(reg, 1) == NULL);
        ep = pressure_registration_get_history(reg, 0);
        ASSERT_EQ(pressure_episode_is_active(ep), 0);
        ASSERT_U64_EQ(pressure_episode_get_start_us(ep), 10);
        ASSERT_U64_EQ(pressure_episode_get_end_us(ep), 30);
        ASSERT_U64_EQ(pressure_episode_get_start_time_us(ep), 1010);
        ASSERT_U64_EQ(pressure_episode_get_end_time_us(ep), 1030);
        ASSERT_U64_EQ(pressure_episode_get_duration_us(ep), 20);
        ASSERT_U64_EQ(pressure_episode_get_events(ep), 4);
        ASSERT_ERR(pressure_episode_get_peak(ep, &peak), ENODATA);
        ASSERT_EQ(pressure_episode_get_peak_level(ep), PRESSURE_LEVEL_MEDIUM);
}

static void test_async_calls(void) {
        _cleanup_(pressure_client_freep) pressure_client *c = client_new();
        pressure_status *status = NULL;
        CallSeen st = {}, pr = {}, inj = {}, rl = {}, nope = {}, cancelled = {}, slow = {};
        pressure_call *call;
        uint64_t t, now;

        calls_seen = 0;
        ASSERT_OK(pressure_client_get_status_async(c, on_status, &st, &call));
        ASSERT_OK(pressure_call_set_destroy_callback(call, on_destroy));
        ASSERT_OK(pressure_client_get_protection_async(c, "/p", on_protection, &pr, &call));
        ASSERT_OK(pressure_call_set_destroy_callback(call, on_destroy));
        ASSERT_OK(pressure_client_inject_async(c, "/x", PRESSURE_LEVEL_LOW, on_inject, &inj, NULL));
        ASSERT_OK(pressure_client_reload_async(c, on_reply, &rl, NULL));
        ASSERT_OK(pressure_client_call_async(c, "io.pressured.Nope", "{}", on_reply, &nope, NULL));
        ASSERT_OK(pressure_client_call_async(c, "io.pressured.Silent", NULL, on_reply, &cancelled, &call));
        ASSERT_OK(pressure_call_set_destroy_callback(call, on_destroy));
        ASSERT_EQ(calls_seen, 0); /* callbacks run from process() only */
        ASSERT_EQ(pressure_client_get_n_active(c), 0); /* calls are no subscriptions */

        /* Cancelled: destroyed at once, its callback never runs. */
        ASSERT_TRUE(pressure_call_free(call) == NULL);
        ASSERT_EQ(cancelled.n_destroyed, 1);

        /* Pending calls are due by their deadline, an absolute CLOCK_MONOTONIC time. */
        now = now_usec(CLOCK_MONOTONIC);
        ASSERT_OK(pressure_client_get_timeout(c, &t));
        ASSERT_TRUE(t <= now + 25 * USEC_PER_SEC);

        calls_want = 5;
        run_until(c, calls_done, NULL);
        ASSERT_EQ(st.n_calls, 1);
        ASSERT_EQ(st.error, 0);
        ASSERT_EQ(st.n_destroyed, 1);
        check_status(st.kept);
        st.kept = pressure_status_unref(st.kept);
        ASSERT_EQ(pr.n_calls, 1);
        ASSERT_EQ(pr.n_nodes, 1);
        ASSERT_EQ(pr.n_destroyed, 1);
        ASSERT_U64_EQ(inj.delivered, 3);
        ASSERT_EQ(rl.error, -EACCES);
        ASSERT_STREQ(rl.error_name, "io.pressured.PermissionDenied");
        ASSERT_STREQ(rl.json, "");
        ASSERT_EQ(nope.error, -ENXIO);
        ASSERT_EQ(cancelled.n_calls, 0);

        /* The blocking form gives the same typed result. */
        ASSERT_OK(pressure_client_get_status(c, &status, NULL));
        check_status(status);
        pressure_status_unref(status);

        /* No timeout at all: the call waits for its answer instead of timing out at once. */
        ASSERT_OK(pressure_client_set_call_timeout(c, PRESSURE_TIMEOUT_INFINITE));
        ASSERT_OK(pressure_client_get_status(c, &status, NULL));
        check_status(status);
        pressure_status_unref(status);
        ASSERT_OK(pressure_client_call_async(c, "io.pressured.Silent", NULL, on_reply, &cancelled, &call));
        ASSERT_OK(pressure_client_get_timeout(c, &t));
        ASSERT_U64_EQ(t, PRESSURE_TIMEOUT_INFINITE);
        ASSERT_TRUE(pressure_call_free(call) == NULL);

        /* A call the daemon does not answer fails with -ETIMEDOUT at its deadline. */
        ASSERT_OK(pressure_client_set_call_timeout(c, 200 * USEC_PER_MSEC));
        now = now_usec(CLOCK_MONOTONIC);
        ASSERT_OK(pressure_client_call_async(c, "io.pressured.Silent", NULL, on_reply, &slow, NULL));
        ASSERT_OK(pressure_client_get_timeout(c, &t));
        ASSERT_TRUE(t >= now + 200 * USEC_PER_MSEC && t <= now_usec(CLOCK_MONOTONIC) + 200 * USEC_PER_MSEC);
        calls_want = 6;
        run_until(c, calls_done, NULL);
        ASSERT_EQ(slow.error, -ETIMEDOUT);
        ASSERT_STREQ(slow.error_name, "");
        ASSERT_TRUE(now_usec(CLOCK_MONOTONIC) >= now + 200 * USEC_PER_MSEC);
        ASSERT_OK(pressure_client_get_timeout(c, &t));
        ASSERT_U64_EQ(t, PRESSURE_TIMEOUT_INFINITE);

        /* Bad arguments. */
        ASSERT_ERR(pressure_client_get_status_async(c, NULL, NULL, NULL), EINVAL);
        ASSERT_ERR(pressure_client_inject_async(c, NULL, PRESSURE_LEVEL_NONE, on_inject, NULL, NULL), EINVAL);
        ASSERT_ERR(pressure_client_call_async(c, "x", "[1]", on_reply, NULL, NULL), EINVAL);

        /* No daemon: the callback gets the connection error. */
        {
                _cleanup_(pressure_client_freep) pressure_client *lonely = client_new();
                CallSeen none = {};

                ASSERT_OK(pressure_client_set_socket(lonely, "/nonexistent/pressured.sock"));
                ASSERT_OK(pressure_client_get_status_async(lonely, on_status, &none, NULL));
                calls_want = 7;
                run_until(lonely, calls_done, NULL);
                ASSERT_EQ(none.error, -ECONNREFUSED);
                ASSERT_STREQ(none.error_name, PRESSURE_ERROR_DAEMON_NOT_RUNNING);
        }
}

/* Make the fake server's GetStatus answer @reply_json (NULL: its built-in answer again). */
static void set_status_fixture(pressure_client *c, const char *reply_json) {
        char *params = NULL;

        ASSERT_TRUE(asprintf(&params, "{\"reply\":%s}", reply_json ?: "null") > 0);
        ASSERT_OK(pressure_client_call(c, "test.SetStatus", reply_json ? params : "{}", NULL, NULL));
        free(params);
}

/* GetStatus of the fixture @reply_json: its result, or the error it fails with. */
static int status_of(pressure_client *c, const char *reply_json, pressure_status **ret) {
        pressure_error *error = NULL;
        int r;

        set_status_fixture(c, reply_json);
        r = pressure_client_get_status(c, ret, &error);
        if (r < 0) {
                ASSERT_EQ(pressure_error_get_errno(error), r);
                ASSERT_TRUE(pressure_error_get_name(error) == NULL); /* the library's verdict, not the daemon's */
        }
        pressure_error_free(error);
        return r;
}

#define RECLAIM_FIXTURE                                                                                   \
        "{\"version\":\"0.3\",\"registrations\":[],\"reclaim\":["                                        \
        "{\"cgroup\":\"/app.slice\",\"state\":\"probing\",\"reclaimed_bytes\":1073741824,"                \
        "\"last_step_bytes\":10485760,\"stall_pct\":0.04,\"io_stall_pct\":0.01,"                         \
        "\"floor_bytes\":104857600},"                                                                     \
        "{\"cgroup\":\"/app.slice/db\",\"state\":\"backing-off\",\"reclaimed_bytes\":5.0,"              \
        "\"last_step_bytes\":0,\"stall_pct\":0.25,\"io_stall_pct\":1,\"floor_bytes\":2147483648},"         \
        "{\"cgroup\":\"/batch\",\"state\":\"at-floor\",\"reclaimed_bytes\":9007199254740993,"            \
        "\"floor_bytes\":104857600,\"stall_pct\":null},"                                                  \
        "{\"cgroup\":\"/v1\",\"state\":\"unsupported\"},"                                                 \
        "{\"cgroup\":\"/later\",\"state\":\"hibernating\",\"something_new\":[1]}]}"

/* libpressure 1.5: a warning before a kill, what the accessors make of it. */
static void check_prekill(const pressure_event *e) {
        uint64_t id = 0;

        ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_PREKILL);
        ASSERT_STREQ(pressure_event_kind_to_string(PRESSURE_EVENT_PREKILL), "prekill");
        ASSERT_STREQ(pressure_event_get_cgroup(e), "/prekill/app.service");
        ASSERT_STREQ(pressure_event_get_killed_by(e), "systemd-oomd");
        ASSERT_TRUE(pressure_event_get_reason(e) == NULL);
        ASSERT_OK(pressure_event_get_prekill_id(e, &id));
        ASSERT_U64_EQ(id, 7);
        ASSERT_U64_EQ(pressure_event_get_deadline_us(e), 9000000123ULL);
        ASSERT_U64_EQ(pressure_event_get_seq(e), 1);
        ASSERT_U64_EQ(pressure_event_get_missed(e), 2);
        ASSERT_U64_EQ(pressure_event_get_time_us(e), 1700000000000020ULL);
        ASSERT_U64_EQ(pressure_event_get_monotonic_us(e), 60);
        ASSERT_TRUE(strstr(pressure_event_get_json(e), "\"deadline_us\":9000000123"));
        ASSERT_ERR(pressure_event_get_prekill_id(e, NULL), EINVAL);
}

static int on_prekill(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        Kills *k = userdata;
        unsigned i = k->n++;
        uint64_t id = 0;

        (void) sub;
        ASSERT_TRUE(i < ELEMENTSOF(k->kinds));
        k->kinds[i] = pressure_event_get_kind(e);
        if (k->kinds[i] == PRESSURE_EVENT_ERROR)
                k->error = pressure_error_get_errno(pressure_event_get_error(e));
        else if (k->kinds[i] == PRESSURE_EVENT_PREKILL)
                check_prekill(e);
        else {
                /* Only a warning has a deadline and a number. */
                ASSERT_U64_EQ(pressure_event_get_deadline_us(e), 0);
                ASSERT_ERR(pressure_event_get_prekill_id(e, &id), ENODATA);
        }
        return 0;
}

static Kills subscribe_prekill(const char *cgroup, unsigned n) {
        _cleanup_(pressure_client_freep) pressure_client *c = client_new();
        _cleanup_(pressure_selector_freep) pressure_selector *s = NULL;
        Kills k = {};

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_selector_set_cgroup(s, cgroup));
        ASSERT_OK(pressure_selector_set_kills(s));
        ASSERT_OK(pressure_client_set_reconnect(c, 0));
        ASSERT_OK(pressure_client_subscribe(c, s, on_prekill, &k, NULL, NULL));
        kills_want = n;
        run_until(c, kills_done, &k);
        return k;
}

/* AcknowledgePrekill(@id), blocking: the errno, and the error's name in @name. */
static int acknowledge(pressure_client *c, uint64_t id, char name[static 64]) {
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        int r = pressure_client_acknowledge_prekill(c, id, &error);

        snprintf(name, 64, "%s", pressure_error_get_name(error) ?: "");
        ASSERT_EQ(r < 0, error != NULL);
        if (error)
                ASSERT_EQ(pressure_error_get_errno(error), r);
        return r;
}

static void test_prekill_acknowledge(void) {
        _cleanup_(pressure_client_freep) pressure_client *c = client_new(), *gone = client_new();
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        CallSeen ok = {}, no = {}, hung = {}, old = {};
        char name[64];
        int64_t v = 0;

        ASSERT_OK(acknowledge(c, 7, name));
        ASSERT_ERR(acknowledge(c, 8, name), ESRCH);
        ASSERT_STREQ(name, "io.pressured.NoSuchPrekill");
        ASSERT_ERR(pressure_client_acknowledge_prekill(c, 8, &error), ESRCH);
        ASSERT_OK(pressure_error_get_parameter_integer(error, "id", &v));
        ASSERT_EQ(v, 8);
        ASSERT_STREQ(pressure_error_get_message(error), "No such warning before a kill: 8");
        ASSERT_ERR(acknowledge(c, 9, name), ECONNRESET);
        ASSERT_STREQ(name, "");
        ASSERT_ERR(acknowledge(c, 10, name), ENXIO);
        ASSERT_STREQ(name, "org.varlink.service.MethodNotFound");
        /* The protocol's int holds no more; nothing is sent. */
        ASSERT_ERR(acknowledge(c, (uint64_t) INT64_MAX + 1, name), EINVAL);
        ASSERT_ERR(pressure_client_acknowledge_prekill(NULL, 7, NULL), EINVAL);
        ASSERT_OK(pressure_client_set_socket(gone, "/nonexistent/io.pressured"));
        ASSERT_ERR(acknowledge(gone, 7, name), ECONNREFUSED);
        ASSERT_STREQ(name, PRESSURE_ERROR_DAEMON_NOT_RUNNING);

        /* The same, without waiting. */
        calls_seen = 0;
        ASSERT_OK(pressure_client_acknowledge_prekill_async(c, 7, on_reply, &ok, NULL));
        ASSERT_OK(pressure_client_acknowledge_prekill_async(c, 8, on_reply, &no, NULL));
        ASSERT_OK(pressure_client_acknowledge_prekill_async(c, 9, on_reply, &hung, NULL));
        ASSERT_OK(pressure_client_acknowledge_prekill_async(c, 10, on_reply, &old, NULL));
        ASSERT_ERR(pressure_client_acknowledge_prekill_async(c, (uint64_t) INT64_MAX + 1, on_reply, &ok, NULL),
                   EINVAL);
        ASSERT_ERR(pressure_client_acknowledge_prekill_async(c, 7, NULL, &ok, NULL), EINVAL);
        calls_want = 4;
        run_until(c, calls_done, NULL);
        ASSERT_EQ(ok.error, 0);
        ASSERT_STREQ(ok.json, "{}");
        ASSERT_EQ(no.error, -ESRCH);
        ASSERT_STREQ(no.error_name, "io.pressured.NoSuchPrekill");
        ASSERT_EQ(hung.error, -ECONNRESET);
        ASSERT_EQ(old.error, -ENXIO);
}

static void test_prekill(void) {
        Kills k;

        ASSERT_U64_EQ(pressure_event_get_deadline_us(NULL), 0);
        ASSERT_ERR(pressure_event_get_prekill_id(NULL, &(uint64_t) { 0 }), EINVAL);

        /* Subscribed, the warning, the kill, removed. */
        k = subscribe_prekill("/prekill", 4);
        ASSERT_EQ(k.kinds[1], PRESSURE_EVENT_PREKILL);
        ASSERT_EQ(k.kinds[2], PRESSURE_EVENT_KILLED);
        ASSERT_EQ(k.kinds[3], PRESSURE_EVENT_REMOVED);

        /* A warning that cannot be acknowledged, or has no deadline, is malformed. */
        k = subscribe_prekill("/prekill-no-id", 2);
        ASSERT_EQ(k.kinds[1], PRESSURE_EVENT_ERROR);
        ASSERT_EQ(k.error, -EBADMSG);
        k = subscribe_prekill("/prekill-no-deadline", 2);
        ASSERT_EQ(k.kinds[1], PRESSURE_EVENT_ERROR);
        ASSERT_EQ(k.error, -EBADMSG);

        test_prekill_acknowledge();
}

/* libpressure 1.1: the reclaim entries of GetStatus, from fixtures. */
static void test_reclaim(void) {
        _cleanup_(pressure_client_freep) pressure_client *c = client_new();
        pressure_status *st = NULL;
        const pressure_reclaim *rc;
        double v;

        /* The names, and what is no state. */
        ASSERT_STREQ(pressure_reclaim_state_to_string(PRESSURE_RECLAIM_PROBING), "probing");
        ASSERT_STREQ(pressure_reclaim_state_to_string(PRESSURE_RECLAIM_BACKING_OFF), "backing-off");
        ASSERT_STREQ(pressure_reclaim_state_to_string(PRESSURE_RECLAIM_AT_FLOOR), "at-floor");
        ASSERT_STREQ(pressure_reclaim_state_to_string(PRESSURE_RECLAIM_UNSUPPORTED), "unsupported");
        ASSERT_TRUE(pressure_reclaim_state_to_string(PRESSURE_RECLAIM_UNKNOWN) == NULL);
        ASSERT_TRUE(pressure_reclaim_state_to_string((pressure_reclaim_state) 5) == NULL);
        ASSERT_TRUE(pressure_reclaim_state_to_string((pressure_reclaim_state) -1) == NULL);

        /* NULL objects. */
        ASSERT_EQ(pressure_status_get_n_reclaim(NULL), 0);
        ASSERT_TRUE(pressure_status_get_reclaim(NULL, 0) == NULL);
        ASSERT_TRUE(pressure_reclaim_get_cgroup(NULL) == NULL);
        ASSERT_EQ(pressure_reclaim_get_state(NULL), PRESSURE_RECLAIM_UNKNOWN);
        ASSERT_U64_EQ(pressure_reclaim_get_reclaimed_bytes(NULL), 0);
        ASSERT_U64_EQ(pressure_reclaim_get_last_step_bytes(NULL), 0);
        ASSERT_U64_EQ(pressure_reclaim_get_floor_bytes(NULL), 0);
        ASSERT_ERR(pressure_reclaim_get_stall_pct(NULL, &v), EINVAL);
        ASSERT_ERR(pressure_reclaim_get_io_stall_pct(NULL, &v), EINVAL);

        /* A daemon before 0.3 sends no "reclaim": no entries. So does the controller off. */
        ASSERT_OK(status_of(c, NULL, &st));
        ASSERT_EQ(pressure_status_get_n_reclaim(st), 0);
        ASSERT_TRUE(pressure_status_get_reclaim(st, 0) == NULL);
        st = pressure_status_unref(st);
        ASSERT_OK(status_of(c, "{\"version\":\"0.3\",\"reclaim\":[]}", &st));
        ASSERT_EQ(pressure_status_get_n_reclaim(st), 0);
        st = pressure_status_unref(st);
        ASSERT_OK(status_of(c, "{\"version\":\"0.3\",\"reclaim\":null}", &st));
        ASSERT_EQ(pressure_status_get_n_reclaim(st), 0);
        st = pressure_status_unref(st);

        ASSERT_OK(status_of(c, RECLAIM_FIXTURE, &st));
        ASSERT_EQ(pressure_status_get_n_reclaim(st), 5);
        ASSERT_TRUE(pressure_status_get_reclaim(st, 5) == NULL);
        ASSERT_EQ(pressure_status_get_n_registrations(st), 0);

        rc = pressure_status_get_reclaim(st, 0);
        ASSERT_STREQ(pressure_reclaim_get_cgroup(rc), "/app.slice");
        ASSERT_EQ(pressure_reclaim_get_state(rc), PRESSURE_RECLAIM_PROBING);
        ASSERT_U64_EQ(pressure_reclaim_get_reclaimed_bytes(rc), 1073741824);
        ASSERT_U64_EQ(pressure_reclaim_get_last_step_bytes(rc), 10485760);
        ASSERT_U64_EQ(pressure_reclaim_get_floor_bytes(rc), 104857600);
        ASSERT_OK(pressure_reclaim_get_stall_pct(rc, &v));
        ASSERT_TRUE(v == 0.04);
        ASSERT_OK(pressure_reclaim_get_io_stall_pct(rc, &v));
        ASSERT_TRUE(v == 0.01);
        ASSERT_ERR(pressure_reclaim_get_stall_pct(rc, NULL), EINVAL);

        /* An integer where a float is due, and a float where an integer is: both read. */
        rc = pressure_status_get_reclaim(st, 1);
        ASSERT_EQ(pressure_reclaim_get_state(rc), PRESSURE_RECLAIM_BACKING_OFF);
        ASSERT_U64_EQ(pressure_reclaim_get_reclaimed_bytes(rc), 5);
        ASSERT_U64_EQ(pressure_reclaim_get_last_step_bytes(rc), 0);
        ASSERT_U64_EQ(pressure_reclaim_get_floor_bytes(rc), UINT64_C(2147483648));
        ASSERT_OK(pressure_reclaim_get_io_stall_pct(rc, &v));
        ASSERT_TRUE(v == 1.0);

        /* Beyond 2^53, exact; a null or absent stall is no figure, and leaves *ret alone. */
        rc = pressure_status_get_reclaim(st, 2);
        ASSERT_EQ(pressure_reclaim_get_state(rc), PRESSURE_RECLAIM_AT_FLOOR);
        ASSERT_U64_EQ(pressure_reclaim_get_reclaimed_bytes(rc), UINT64_C(9007199254740993));
        v = -1;
        ASSERT_ERR(pressure_reclaim_get_stall_pct(rc, &v), ENODATA);
        ASSERT_ERR(pressure_reclaim_get_io_stall_pct(rc, &v), ENODATA);
        ASSERT_TRUE(v == -1);

        rc = pressure_status_get_reclaim(st, 3);
        ASSERT_STREQ(pressure_reclaim_get_cgroup(rc), "/v1");
        ASSERT_EQ(pressure_reclaim_get_state(rc), PRESSURE_RECLAIM_UNSUPPORTED);
        ASSERT_U64_EQ(pressure_reclaim_get_reclaimed_bytes(rc), 0);
        ASSERT_U64_EQ(pressure_reclaim_get_floor_bytes(rc), 0);

        /* A state a later daemon adds, and members this version does not know. */
        rc = pressure_status_get_reclaim(st, 4);
        ASSERT_STREQ(pressure_reclaim_get_cgroup(rc), "/later");
        ASSERT_EQ(pressure_reclaim_get_state(rc), PRESSURE_RECLAIM_UNKNOWN);
        ASSERT_TRUE(strstr(pressure_status_get_json(st), "\"hibernating\""));

        /* The entries live as long as the status; a reference keeps them. */
        rc = pressure_status_get_reclaim(st, 0);
        ASSERT_TRUE(pressure_status_ref(st) == st);
        pressure_status_unref(st);
        ASSERT_STREQ(pressure_reclaim_get_cgroup(rc), "/app.slice");
        st = pressure_status_unref(st);

        /* What breaks the protocol fails the call with -EBADMSG. */
        ASSERT_ERR(status_of(c, "{\"reclaim\":{}}", &st), EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[1]}", &st), EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"state\":\"probing\"}]}", &st), EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"cgroup\":7}]}", &st), EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"cgroup\":\"/a\",\"state\":1}]}", &st), EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"cgroup\":\"/a\",\"reclaimed_bytes\":-1}]}", &st), EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"cgroup\":\"/a\",\"last_step_bytes\":\"1\"}]}", &st),
                   EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"cgroup\":\"/a\",\"floor_bytes\":true}]}", &st), EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"cgroup\":\"/a\",\"stall_pct\":\"0.1%\"}]}", &st),
                   EBADMSG);
        ASSERT_ERR(status_of(c, "{\"reclaim\":[{\"cgroup\":\"/a\"},{\"cgroup\":\"/b\",\"io_stall_pct\":[]}]}",
                             &st), EBADMSG);
        ASSERT_TRUE(st == NULL);

        set_status_fixture(c, NULL);
}

static unsigned sub_destroyed;
static void on_sub_destroy(void *userdata) {
        ASSERT_TRUE(userdata == &sub_destroyed);
        sub_destroyed++;
}

static int on_nothing(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        return 0;
}

static void test_destroy_callbacks(void) {
        pressure_client *c = client_new();
        pressure_subscription *a, *b;
        pressure_selector *s;

        ASSERT_OK(pressure_selector_new(&s));
        ASSERT_OK(pressure_client_subscribe(c, s, on_nothing, &sub_destroyed, &a, NULL));
        ASSERT_OK(pressure_client_subscribe(c, s, on_nothing, &sub_destroyed, &b, NULL));
        pressure_selector_free(s);
        ASSERT_OK(pressure_subscription_set_destroy_callback(a, on_sub_destroy));
        ASSERT_OK(pressure_subscription_set_destroy_callback(b, on_sub_destroy));
        ASSERT_ERR(pressure_subscription_set_destroy_callback(NULL, on_sub_destroy), EINVAL);
        pressure_subscription_free(a);
        ASSERT_EQ(sub_destroyed, 1);
        /* The client's end frees the rest. */
        pressure_client_free(c);
        ASSERT_EQ(sub_destroyed, 2);
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
        test_kills();
        test_resources();
        test_multiple();
        test_async();
        test_async_calls();
        test_prekill();
        test_reclaim();
        test_destroy_callbacks();
        test_reconnect(&server);
        test_reconnect_failures(&server);

        server_stop(server);
        (void) unlink(socket_path);
        (void) rmdir(dir);
        printf("all client tests passed\n");
        return 0;
}
